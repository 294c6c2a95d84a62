# orca: the serving binary (`orca serve | scheduler | worker`), built from source.
# Build from the repository root (docs/images.md):
#   GPU (the default):  docker build -f docker/orca.Dockerfile -t ghcr.io/orca-serving/orca:0.1.0 .
#   CPU variant:        docker build -f docker/orca.Dockerfile --network host \
#                         --build-arg BUILD_BASE=orca-local/debian:12 \
#                         --build-arg RUNTIME_BASE=orca-local/debian:12 \
#                         --build-arg WITH_CUDA=OFF -t orca-local/orca:0.1.0-cpu .
# (orca-local/debian:12 is made by scripts/make-base-image.sh; scripts/test-images.sh
# builds and tests the CPU variant.) Pods built by orca-controller run
# `orca scheduler ...` and `orca worker ...`.

# Build and runtime bases: the CUDA devel and runtime images of one CUDA version and OS.
# The CPU variant uses one Debian 12 image for both.
ARG BUILD_BASE=nvidia/cuda:12.8.1-devel-ubuntu24.04
ARG RUNTIME_BASE=nvidia/cuda:12.8.1-runtime-ubuntu24.04

# ---- build: the project's own dependency script, then cmake ----
FROM ${BUILD_BASE} AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
# Test tooling of apt-packages.txt that building a binary does not need (the test
# references and their Python stack, clang for the thread-safety check, node for the
# e2e clients): dropped from the list before install-deps.sh reads it. The build fails
# at cmake if anything it needs is missing. Same step as orca-controller.Dockerfile, so
# the two builds share this layer.
ARG SKIP_PACKAGES="clang python3 python3-torch python3-numpy python3-sentencepiece python3-jinja2 python3-yaml python3-prometheus-client python3-matplotlib python3-jsonschema nodejs npm prometheus"
# Dependencies first, so that source changes reuse this layer.
COPY scripts/install-deps.sh scripts/apt-packages.txt scripts/
RUN for p in ${SKIP_PACKAGES}; do sed -i "/^${p}\$/d" scripts/apt-packages.txt; done \
 && scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
# ON: the CUDA backend and kernels (needs the CUDA devel base); OFF: the CPU variant.
ARG WITH_CUDA=ON
# GPU architectures to compile the kernels for (CMAKE_CUDA_ARCHITECTURES).
ARG CUDA_ARCHITECTURES="80;90"
# Parallel compile jobs.
ARG JOBS=8
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY proto/ proto/
COPY engine/ engine/
COPY kernels/ kernels/
COPY docker/collect-libs.sh docker/
# Only the `orca` target, no tests or benchmarks. Release without debug info, at -O2 as
# the tested builds (RelWithDebInfo): at -O3, GCC 12 stops on a false -Werror=restrict
# in std::string's operator+ (engine/chat/internal/py_number.cc). The CPU binary is
# smoke-run here; the CUDA one needs a GPU driver that a build does not have.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DORCA_WITH_CUDA=${WITH_CUDA} \
      -DORCA_BUILD_TESTS=OFF -DORCA_BUILD_BENCH=OFF \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" \
 && cmake --build build --target orca -j "${JOBS}" \
 && docker/collect-libs.sh build/engine/cli/orca /out \
 && if [ "${WITH_CUDA}" = OFF ]; then /out/bin/orca --version; fi

# ---- runtime: the base's runtime libraries (CUDA: cudart, cuBLAS, NCCL) + orca ----
FROM ${RUNTIME_BASE}
LABEL org.opencontainers.image.title="orca" \
      org.opencontainers.image.description="orca LLM serving engine: scheduler and workers"
COPY --from=build /out/bin/orca /usr/local/bin/orca
COPY --from=build /out/lib/ /opt/orca/lib/
# The CA bundle `orca model pull` verifies https:// hosts with (libcurl's default path);
# slim bases have none. A private CA: mount its PEM file and set CURL_CA_BUNDLE.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# The embedded default model (`orca generate` / `orca serve` smoke tests without a volume).
COPY models/stories260K/ /usr/local/share/orca/models/stories260K/
RUN echo /opt/orca/lib > /etc/ld.so.conf.d/orca.conf && ldconfig \
 && groupadd --gid 65532 orca \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin orca
# A numeric user, so that Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
WORKDIR /tmp
# HTTP (/v1, /health, /ready, /metrics), gRPC, control plane, worker metrics. (The data
# plane, Gloo or NCCL, listens on ports it picks.)
EXPOSE 8000 8001 8002 9090
ENTRYPOINT ["/usr/local/bin/orca"]
CMD ["--help"]

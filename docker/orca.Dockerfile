# orca: the serving binary (`orca serve | scheduler | worker`) on the CUDA runtime.
# Build from the repository root (docs/images.md):
#   docker build -f docker/orca.Dockerfile -t ghcr.io/orca-serving/orca:0.1.0 .
# Pods built by orca-controller run `orca scheduler ...` and `orca worker ...`.

# ---- build: the project's own dependency script, then cmake with CUDA on ----
FROM nvidia/cuda:12.8.1-devel-ubuntu24.04 AS build
# GPU architectures to compile the kernels for (CMAKE_CUDA_ARCHITECTURES).
ARG CUDA_ARCHITECTURES="80;90"
# Parallel compile jobs.
ARG JOBS=8
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
# Dependencies first, so that source changes reuse this layer.
COPY scripts/install-deps.sh scripts/apt-packages.txt scripts/
RUN scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY proto/ proto/
COPY engine/ engine/
COPY kernels/ kernels/
COPY docker/collect-libs.sh docker/
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DORCA_WITH_CUDA=ON \
      -DORCA_BUILD_TESTS=OFF -DORCA_BUILD_BENCH=OFF \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" \
 && cmake --build build --target orca -j "${JOBS}" \
 && docker/collect-libs.sh build/engine/cli/orca /out

# ---- runtime: CUDA runtime (cudart, cuBLAS, NCCL) + orca and its libraries ----
FROM nvidia/cuda:12.8.1-runtime-ubuntu24.04
LABEL org.opencontainers.image.title="orca" \
      org.opencontainers.image.description="orca LLM serving engine: scheduler and workers"
COPY --from=build /out/bin/orca /usr/local/bin/orca
COPY --from=build /out/lib/ /opt/orca/lib/
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

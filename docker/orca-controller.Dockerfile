# orca-controller: the Kubernetes operator, on a minimal Debian base, built from source.
# Build from the repository root (docs/images.md):
#   docker build -f docker/orca-controller.Dockerfile -t ghcr.io/orca-serving/orca-controller:0.1.0 .
# Without a registry (scripts/make-base-image.sh makes orca-local/debian:12):
#   docker build -f docker/orca-controller.Dockerfile --network host \
#     --build-arg BUILD_BASE=orca-local/debian:12 --build-arg RUNTIME_BASE=orca-local/debian:12 \
#     -t orca-local/orca-controller:0.1.0 .

# Build and runtime bases: Debian 12, the runtime one slim.
ARG BUILD_BASE=debian:12.11
ARG RUNTIME_BASE=debian:12.11-slim

# ---- build: the project's own dependency script, then cmake (no CUDA) ----
FROM ${BUILD_BASE} AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
# Test tooling that building a binary does not need; same step as orca.Dockerfile, so
# the two builds share this layer.
ARG SKIP_PACKAGES="clang python3 python3-torch python3-numpy python3-sentencepiece python3-jinja2 python3-yaml python3-prometheus-client python3-matplotlib python3-jsonschema nodejs npm prometheus"
COPY scripts/install-deps.sh scripts/apt-packages.txt scripts/
RUN for p in ${SKIP_PACKAGES}; do sed -i "/^${p}\$/d" scripts/apt-packages.txt; done \
 && scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
# Parallel compile jobs.
ARG JOBS=8
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY proto/ proto/
COPY engine/ engine/
COPY controller/ controller/
COPY docker/collect-libs.sh docker/
# Only the `orca-controller` target, Release at -O2 without debug info (orca.Dockerfile).
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DORCA_WITH_CUDA=OFF \
      -DORCA_BUILD_TESTS=OFF -DORCA_BUILD_BENCH=OFF \
 && cmake --build build --target orca-controller -j "${JOBS}" \
 && docker/collect-libs.sh build/controller/orca-controller /out \
 && /out/bin/orca-controller version

# ---- runtime: debian slim + the controller and its libraries ----
FROM ${RUNTIME_BASE}
LABEL org.opencontainers.image.title="orca-controller" \
      org.opencontainers.image.description="Kubernetes operator of orca InferenceDeployments"
COPY --from=build /out/bin/orca-controller /usr/local/bin/orca-controller
COPY --from=build /out/lib/ /opt/orca/lib/
# CA bundle for API servers reached through a kubeconfig (in-cluster uses the mounted CA).
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
RUN echo /opt/orca/lib > /etc/ld.so.conf.d/orca.conf && ldconfig
# A numeric user, so that Kubernetes' runAsNonRoot can verify it (the chart runs 65532).
USER 65532:65532
# /metrics and /healthz, /readyz (the chart's defaults).
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/orca-controller"]
CMD ["run"]

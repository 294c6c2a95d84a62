# orca-controller: the Kubernetes operator, on a minimal Debian base.
# Build from the repository root (docs/images.md):
#   docker build -f docker/orca-controller.Dockerfile -t ghcr.io/orca-serving/orca-controller:0.1.0 .

# ---- build: the project's own dependency script, then cmake (no CUDA) ----
FROM debian:12.11 AS build
# Parallel compile jobs.
ARG JOBS=8
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
COPY scripts/install-deps.sh scripts/apt-packages.txt scripts/
RUN scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY proto/ proto/
COPY engine/ engine/
COPY controller/ controller/
COPY docker/collect-libs.sh docker/
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DORCA_WITH_CUDA=OFF \
      -DORCA_BUILD_TESTS=OFF -DORCA_BUILD_BENCH=OFF \
 && cmake --build build --target orca-controller -j "${JOBS}" \
 && docker/collect-libs.sh build/controller/orca-controller /out \
 && /out/bin/orca-controller version

# ---- runtime: debian slim + the controller and its libraries ----
FROM debian:12.11-slim
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

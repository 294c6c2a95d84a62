#!/usr/bin/env bash
# Builds orca's images for real and runs the container e2e (docs/images.md):
#   0. the e2e harnesses' own tests, without Docker (e2e/containers/pods.test.mjs,
#      e2e/k8s/preflight_test.sh);
#   1. a Docker engine (docker/dockerd.sh) and the local Debian 12 base image made by
#      debootstrap (scripts/make-base-image.sh; cached);
#   2. the CPU variant of docker/orca.Dockerfile and docker/orca-controller.Dockerfile,
#      both on that base, built from this checkout;
#   3. e2e/containers/group_test.mjs: a rendered PP=2 group as containers, a completion
#      through it, SIGTERM exit codes, and the controller's health probe.
# Every step is timed; the image sizes are printed. The CUDA variant (nvidia/cuda bases)
# is not built: no registry is reachable from these machines.
#
# Settings (environment):
#   ORCA_IMAGE_JOBS         compile jobs inside the orca build (nproc)
#   ORCA_CONTROLLER_IMAGE_JOBS  compile jobs inside the controller build (ORCA_IMAGE_JOBS)
#   ORCA_IMAGE              serving image tag (orca-local/orca:0.1.0-cpu)
#   ORCA_CONTROLLER_IMAGE   controller image tag (orca-local/orca-controller:0.1.0)
#   ORCA_IMAGE_CONTEXT      build context (the repository root)
#   ORCA_SKIP_IMAGE_BUILD=1 reuse existing images (only steps 1 and 3)
#   ORCA_DOCKER_KEEP=1      leave the dockerd this script started running
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

IMAGE=${ORCA_IMAGE:-orca-local/orca:0.1.0-cpu}
CONTROLLER_IMAGE=${ORCA_CONTROLLER_IMAGE:-orca-local/orca-controller:0.1.0}
BASE=${ORCA_BASE_IMAGE:-orca-local/debian:12}
JOBS=${ORCA_IMAGE_JOBS:-$(nproc)}
CONTROLLER_JOBS=${ORCA_CONTROLLER_IMAGE_JOBS:-$JOBS}
CONTEXT=${ORCA_IMAGE_CONTEXT:-$root}
# The classic builder: the docker.io engine of Debian 12 ships no buildx, and every RUN
# needs the host network (Debian's mirror) which it grants with --network host.
export DOCKER_BUILDKIT=0

log() { printf '[images] %s\n' "$*"; }
declare -a summary=()
timed() {
  local name=$1
  shift
  local start=$SECONDS
  log "=== $name"
  "$@"
  local took=$((SECONDS - start))
  summary+=("$(printf '%-58s %5d s' "$name" "$took")")
  log "=== $name: ${took} s"
}

started_dockerd=0
finish() {
  local code=$?
  if [ ${#summary[@]} -gt 0 ]; then
    log "step times:"
    printf '[images]   %s\n' "${summary[@]}"
  fi
  if [ "$started_dockerd" = 1 ] && [ "${ORCA_DOCKER_KEEP:-0}" != 1 ]; then docker/dockerd.sh stop || true; fi
  log "$([ "$code" = 0 ] && echo PASS || echo "FAIL (exit $code)") in ${SECONDS} s"
}
trap finish EXIT

# Prefixes each line with the time since the build began (the classic builder prints no times).
stamp() {
  local start=$SECONDS line
  while IFS= read -r line; do printf '[%4d s] %s\n' "$((SECONDS - start))" "$line"; done
}

build_image() {
  local dockerfile=$1 tag=$2 jobs=$3
  shift 3
  docker build --network host -f "$root/$dockerfile" --build-arg JOBS="$jobs" "$@" -t "$tag" "$CONTEXT" 2>&1 | stamp
  return "${PIPESTATUS[0]}"
}

# ---- 0. the harnesses without Docker (seconds) ----
harness_tests() {
  local out
  out=$(node --test e2e/containers/pods.test.mjs 2>&1) || { echo "$out"; return 1; }
  grep -E '^# (pass|fail)' <<<"$out"
  e2e/k8s/preflight_test.sh
}
timed "e2e/containers/pods.test.mjs, e2e/k8s/preflight_test.sh" harness_tests

# ---- 1. engine and base image ----
docker/dockerd.sh status || started_dockerd=1
timed "dockerd" docker/dockerd.sh start
timed "base image $BASE (debootstrap, cached)" env ORCA_BASE_IMAGE="$BASE" scripts/make-base-image.sh

# ---- 2. both images from their Dockerfiles ----
if [ "${ORCA_SKIP_IMAGE_BUILD:-0}" != 1 ]; then
  timed "build $CONTROLLER_IMAGE" build_image docker/orca-controller.Dockerfile "$CONTROLLER_IMAGE" "$CONTROLLER_JOBS" \
    --build-arg BUILD_BASE="$BASE" --build-arg RUNTIME_BASE="$BASE"
  timed "build $IMAGE (CPU variant)" build_image docker/orca.Dockerfile "$IMAGE" "$JOBS" \
    --build-arg BUILD_BASE="$BASE" --build-arg RUNTIME_BASE="$BASE" --build-arg WITH_CUDA=OFF
fi
log "images:"
docker image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}  {{.CreatedSince}}' |
  grep -E "^(${BASE%:*}|${IMAGE%:*}|${CONTROLLER_IMAGE%:*}):" | sed 's/^/[images]   /'
timed "smoke: orca --version, orca-controller version" bash -c \
  "docker run --rm --network none '$IMAGE' --version && docker run --rm --network none '$CONTROLLER_IMAGE' version"

# ---- 3. the container e2e ----
timed "e2e/containers/group_test.mjs" env ORCA_IMAGE="$IMAGE" ORCA_CONTROLLER_IMAGE="$CONTROLLER_IMAGE" \
  node e2e/containers/group_test.mjs

#!/usr/bin/env bash
# Builds orca on the CUDA twin (cuda_twin/README.md: the real CUDA backend, kernels and
# NCCL communicator compiled as host code against host CUDA, cuBLAS and NCCL) into
# build-twin and runs every `gpu-twin` test: the GPU tests (none may skip), the twin's
# own tests, and `orca serve --device cuda` end to end, alone and in NCCL groups.
# Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ORCA_TWIN_BUILD_DIR:-build-twin}
main_build=${ORCA_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  ORCA_BUILD_DIR=$build ORCA_TARGETS="orca twin_tests" scripts/build.sh -DORCA_CUDA_TWIN=ON \
    -DORCA_BUILD_BENCH=OFF -DORCA_SKIP_DIRS=controller
else
  ORCA_BUILD_DIR=$build ORCA_TARGETS="orca twin_tests" scripts/build.sh
fi
# The controller (not built here) renders the pods the group suite runs.
if [ -z "${ORCA_CONTROLLER_BIN:-}" ] && [ -x "$main_build/controller/orca-controller" ]; then
  export ORCA_CONTROLLER_BIN=$PWD/$main_build/controller/orca-controller
fi
# The twin's own lock annotations (the main build has no cuda_twin/).
if [ "${ORCA_SKIP_THREAD_SAFETY:-0}" != 1 ]; then
  ORCA_BUILD_DIR=$build scripts/check-thread-safety.sh cuda_twin
fi
echo "[twin] built and checked in ${SECONDS} s; running the gpu-twin tests in $build"
ctest --test-dir "$build" --output-on-failure -L gpu-twin -j "${ORCA_TEST_JOBS:-2}" "$@"
echo "[twin] done in ${SECONDS} s"

#!/usr/bin/env bash
# Builds `orca` with AddressSanitizer + UndefinedBehaviorSanitizer into build-asan, on
# the CUDA twin, and runs the GPU tests (kernels, backend, twin runtime, cuBLAS and
# NCCL twins: UBSan's alignment check reports misaligned float4/half2 loads) and the
# HTTP, bad-input, cancellation and serving-group e2e suites against it (the group
# suite's workers are ASan processes too). Any sanitizer report aborts the process
# (halt_on_error), and a leak report makes it exit non-zero at shutdown, so the tests
# fail.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ORCA_ASAN_BUILD_DIR:-build-asan}
export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/orca-ccache}
# Paths relative to the checkout, so clones at other paths hit the same cache entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORCA_CUDA_TWIN=ON \
    -DORCA_BUILD_BENCH=OFF -DORCA_SANITIZE=address,undefined -DORCA_SKIP_DIRS=controller
fi
cmake --build "$build" -j "${ORCA_JOBS:-$(nproc)}" --target orca twin_tests
export ORCA_BIN=$PWD/$build/engine/cli/orca
export ORCA_SOURCE_DIR=$PWD
# The controller (not built here) renders the pods the group suite runs.
main_build=${ORCA_BUILD_DIR:-build}
if [ -z "${ORCA_CONTROLLER_BIN:-}" ] && [ -x "$main_build/controller/orca-controller" ]; then
  export ORCA_CONTROLLER_BIN=$PWD/$main_build/controller/orca-controller
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "[asan] built in ${SECONDS} s; running the gpu-twin tests in $build"
ctest --test-dir "$build" --output-on-failure -L gpu-twin -LE e2e -j "${ORCA_TEST_JOBS:-2}"
echo "[asan] running the serving e2e suites against $ORCA_BIN"
node --test --test-concurrency=1 e2e/serving/openai_client.test.mjs e2e/serving/bad_input.test.mjs \
  e2e/serving/cancellation.test.mjs e2e/serving/group.test.mjs
echo "[asan] done in ${SECONDS} s"

#!/usr/bin/env bash
# The whole unit, integration and e2e suite under AddressSanitizer + UndefinedBehavior-
# Sanitizer: builds every target (engine, controller, benchmarks, tests) with
# -fsanitize=address,undefined on the CUDA twin into build-asan, so the GPU tests run
# too (UBSan's alignment check reports misaligned float4/half2 loads), and runs ctest
# there: the e2e suites start the instrumented `orca` (a group's workers are ASan
# processes too). Any sanitizer report aborts the process (halt_on_error), and a leak
# report makes it exit non-zero at shutdown, so the test fails.
# Left out (docs/sanitizers.md): the helm_* tests, which run helm and node on the chart
# and no orca code, and e2e_soak, whose RSS bounds hold for the real allocator, not for
# ASan's quarantine and shadow memory (the main build runs it).
# Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ORCA_ASAN_BUILD_DIR:-build-asan}
# Configured every time (cmake keeps what it can): a folder left by an older script
# with parts switched off is switched back to everything. -O1 -g1 (ASan's advice:
# -O1 or more, line tables for the reports) compiles in well under the time of -O2 -g.
ORCA_BUILD_DIR=$build ORCA_TARGETS= scripts/build.sh -DORCA_CUDA_TWIN=ON \
  -DORCA_SANITIZE=address,undefined -DORCA_BUILD_BENCH=ON -DORCA_SKIP_DIRS= \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "[asan] built in ${SECONDS} s; running the whole suite in $build"
ctest --test-dir "$build" --output-on-failure -E '^(helm_.*|e2e_soak)$' \
  -j "${ORCA_TEST_JOBS:-2}" "$@"
echo "[asan] done in ${SECONDS} s"

#!/usr/bin/env bash
# Installs dependencies, builds everything and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build=${ORCA_BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure -j "${ORCA_TEST_JOBS:-2}" "$@"
echo "[test] main build and tests done in ${SECONDS} s"
# The lock annotations (ABSL_GUARDED_BY, ...) under clang's -Wthread-safety, which g++
# ignores (skip: ORCA_SKIP_THREAD_SAFETY=1).
if [ "${ORCA_SKIP_THREAD_SAFETY:-0}" != 1 ]; then
  scripts/check-thread-safety.sh
fi
# Every parser of outside input under libFuzzer, ASan and UBSan for 20 s each
# (docs/fuzzing.md; skip: ORCA_SKIP_FUZZ=1).
if [ "${ORCA_SKIP_FUZZ:-0}" != 1 ]; then
  scripts/test-fuzz.sh
fi
# The engine/server concurrency tests under ThreadSanitizer, with Abseil built
# instrumented from Debian's source package (docs/sanitizers.md; skip: ORCA_SKIP_TSAN=1).
if [ "${ORCA_SKIP_TSAN:-0}" != 1 ]; then
  scripts/test-tsan.sh
fi
# The GPU path on the CUDA twin: the gpu tests, none skipped, and `--device cuda`
# served end to end (skip: ORCA_SKIP_TWIN=1).
if [ "${ORCA_SKIP_TWIN:-0}" != 1 ]; then
  scripts/test-twin.sh
fi
# The serving suites and the CUDA twin once more under AddressSanitizer + UBSan
# (skip: ORCA_SKIP_ASAN=1).
if [ "${ORCA_SKIP_ASAN:-0}" != 1 ]; then
  scripts/test-asan.sh
fi

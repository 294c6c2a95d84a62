#!/usr/bin/env bash
# Installs dependencies, builds everything and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build=${ORCA_BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure -j "${ORCA_TEST_JOBS:-2}" "$@"

#!/usr/bin/env bash
# Configures and builds orca into ${ORCA_BUILD_DIR:-build} (ccache, Ninja).
# Extra arguments are passed to cmake at configure time; ORCA_TARGETS limits the build.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ORCA_BUILD_DIR:-build}
jobs=${ORCA_JOBS:-$(nproc)}
# Outside the checkout so that fresh clones (CI) on the same machine share it.
export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/orca-ccache}
# Paths relative to the checkout, so clones at other paths hit the same cache entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
if [ ! -f "$build/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${ORCA_BUILD_TYPE:-RelWithDebInfo} "$@"
fi
if [ -n "${ORCA_TARGETS:-}" ]; then
  # shellcheck disable=SC2086
  cmake --build "$build" -j "$jobs" --target $ORCA_TARGETS
else
  cmake --build "$build" -j "$jobs"
fi

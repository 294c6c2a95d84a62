#!/usr/bin/env bash
# Builds the engine/server concurrency tests with ThreadSanitizer into build-tsan
# (ORCA_TSAN_BUILD_DIR) and runs them; any data race, lock-order inversion or misuse of
# a mutex that TSan reports aborts the test process (halt_on_error), so the test fails.
#
# Abseil (docs/sanitizers.md): Debian's libabsl .so files are not instrumented, so TSan
# would not see absl::Mutex / CondVar / Notification synchronise anything, in our code or
# in gRPC (whose own mutexes are absl::Mutex). This script fetches the very source
# package those .so files were built from (abseil 20220623.1-1+deb12u2, checksums
# pinned, from deb.debian.org), builds every Abseil library the tests load with
# -fsanitize=thread under the same SONAMEs, and runs the tests with those first on
# LD_LIBRARY_PATH, so the whole process (orca, gRPC) uses the instrumented ones.
# The downloads are cached in ${XDG_CACHE_HOME:-~/.cache}/orca-deps. No CUDA, no
# benchmarks, no controller; g++ (its libtsan), -O1 -g1.
#
# Usage: scripts/test-tsan.sh [ctest arguments, e.g. -R group_test]. ORCA_JOBS: build
# jobs; ORCA_TEST_JOBS: tests at once (2).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ORCA_TSAN_BUILD_DIR:-build-tsan}
jobs=${ORCA_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/orca-ccache}
# Paths relative to the checkout, so clones at other paths hit the same cache entries.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}

# The engine/server tests where threads meet: servers (HTTP, gRPC, connection limits),
# the engine loop fed from other threads, groups of ranks over gRPC + Gloo, metrics.
tests=(
  client_limiter_test grpc_server_test http_server_test http_connections_test
  engine_submit_test engine_queue_deadline_test
  group_test group_deadline_test worker_rank_lifecycle_test gloo_communicator_test
  metrics_test thread_pool_test
)

# --- Abseil source, the same as the installed .so files -------------------------------
absl_version=20220623.1
absl_debian=1+deb12u2
absl_soversion=${absl_version%.*}
absl_orig=abseil_${absl_version}.orig.tar.gz
absl_deb=abseil_${absl_version}-${absl_debian}.debian.tar.xz
declare -A absl_sha256=(
  [$absl_orig]=abfe2897f3a30edaa74bc34365afe3c2a3cd012091a97dc7e008f7016adcd5fe
  [$absl_deb]=e08490fc7b6f3beca1925953b0c4fb92df2de5e2a01295e4641e2a3d4e528eeb
)
absl_build=$build/_deps/absl-build
absl_lib=$PWD/$build/absl-tsan/lib
if [ ! -f "$absl_build/build.ninja" ]; then
  installed=$(dpkg-query -W -f '${Version}' libabsl-dev 2>/dev/null || true)
  if [ "$installed" != "${absl_version}-${absl_debian}" ]; then
    echo "[tsan] libabsl-dev is '$installed' but this script builds ${absl_version}-${absl_debian}:" \
      "update absl_version, absl_debian and the checksums" >&2
    exit 1
  fi
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/orca-deps
  mkdir -p "$cache"
  for f in "$absl_orig" "$absl_deb"; do
    if ! echo "${absl_sha256[$f]}  $cache/$f" | sha256sum -c --status 2>/dev/null; then
      curl -fsSL --retry 3 -o "$cache/$f.part" "http://deb.debian.org/debian/pool/main/a/abseil/$f" || {
        echo "[tsan] cannot fetch $f from deb.debian.org (put it in $cache)" >&2
        exit 1
      }
      echo "${absl_sha256[$f]}  $cache/$f.part" | sha256sum -c --quiet
      mv "$cache/$f.part" "$cache/$f"
    fi
  done
  src=$build/_deps/abseil-$absl_version
  rm -rf "$src" "$absl_build"
  mkdir -p "$build/_deps"
  tar -xzf "$cache/$absl_orig" -C "$build/_deps"
  tar -xJf "$cache/$absl_deb" -C "$src"
  # Debian's patches give the .so files their ABI: SONAMEs, inline namespace, options.h.
  while read -r p; do
    [ -n "$p" ] && patch -d "$src" -p1 -s <"$src/debian/patches/$p"
  done <"$src/debian/patches/series"
  # Debian's configuration (C++17, shared, no NDEBUG) plus TSan.
  cmake -S "$src" -B "$absl_build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_STANDARD=17 \
    -DBUILD_SHARED_LIBS=ON -DBUILD_TESTING=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_CXX_FLAGS="-O1 -g1 -fsanitize=thread" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" >/dev/null
fi

# --- orca, instrumented ---------------------------------------------------------------
if [ ! -f "$build/build.ninja" ]; then
  # -O1 -g1: TSan's advice (-O1 or more, line tables for the reports) at half the
  # compile time of -O2 -g.
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DORCA_SANITIZE=thread \
    -DORCA_WITH_CUDA=OFF -DORCA_BUILD_BENCH=OFF -DORCA_SKIP_DIRS=controller >/dev/null
fi
cmake --build "$build" -j "$jobs" --target "${tests[@]}"
mapfile -t binaries < <(for t in "${tests[@]}"; do find "$build/tests" -type f -name "$t"; done)

# Every Abseil library the tests load (directly or through gRPC), instrumented: a partial
# set would leave uninstrumented copies of Abseil's inline code (e.g. call_once) that the
# dynamic linker may pick for the instrumented libraries too.
mapfile -t absl_targets < <(ldd "${binaries[@]}" | grep -o 'libabsl_[a-z0-9_]*\.so' | sort -u |
  sed 's/^libabsl_//; s/\.so$//')
cmake --build "$absl_build" -j "$jobs" --target "${absl_targets[@]}"
mkdir -p "$absl_lib"
find "$absl_build/absl" \( -name "libabsl_*.so.$absl_soversion" -o -name "libabsl_*.so.$absl_soversion.0.0" \) \
  -exec cp -P {} "$absl_lib" \;
echo "[tsan] built in ${SECONDS} s (${#absl_targets[@]} Abseil libraries instrumented)"

# Guard: every Abseil library the tests load is an instrumented one (and libgrpc, loaded
# by the same process, shares them).
export LD_LIBRARY_PATH=$absl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ldd "${binaries[@]}" | grep 'libabsl_' | grep -v -F "$absl_lib/"; then
  echo "[tsan] the Abseil libraries above are not the instrumented ones in $absl_lib" >&2
  exit 1
fi
if ! nm -D "$absl_lib/libabsl_synchronization.so.$absl_soversion" | grep -q __tsan_mutex_pre_lock; then
  echo "[tsan] $absl_lib/libabsl_synchronization.so.$absl_soversion lacks the TSan mutex annotations" >&2
  exit 1
fi

# halt_on_error: the first report fails the test. The suppressions name third-party code
# only (scripts/tsan-suppressions.txt says why each is there).
# A TSAN_OPTIONS from the caller comes last and wins.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan-suppressions.txt${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
status=0
ctest --test-dir "$build" --output-on-failure -R "$regex" -j "${ORCA_TEST_JOBS:-2}" "$@" || status=$?
echo "[tsan] done in ${SECONDS} s"
exit $status

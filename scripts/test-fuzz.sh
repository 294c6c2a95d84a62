#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, docs/fuzzing.md) with clang into
# ${ORCA_FUZZ_BUILD_DIR:-build-fuzz} and runs each for ORCA_FUZZ_SECONDS (default 20) on a
# copy of its seed corpus (the committed corpus never grows here), ORCA_JOBS at a time.
# Each target first reruns the inputs that once crashed it (tests/fuzz/regressions/).
# Prints per target the executions per second and the corpus (files, bytes) at start
# and end; fails when any target crashes, leaks, hangs (-timeout) or runs out of memory
# (-rss_limit_mb), printing the reproducer and the command that reruns it.
#
#   ORCA_FUZZ_TARGETS="chat_template kubeconfig"   only these targets
#   ORCA_FUZZ_SECONDS=3600                          longer runs (docs/fuzzing.md)
#   ORCA_FUZZ_CC / ORCA_FUZZ_CXX                    clang to use (default clang-14, else clang)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ORCA_FUZZ_BUILD_DIR:-build-fuzz}
seconds=${ORCA_FUZZ_SECONDS:-20}
jobs=${ORCA_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/orca-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}

# The longest input each target takes (bytes): a little above its largest real seed.
declare -A max_len=(
  [safetensors]=16384 [safetensors_index]=8192 [model_config]=4096 [generation_config]=2048
  [tokenizer_json]=32768 [tokenizer_config]=16384 [tokenizer_model]=16384
  [chat_template]=16384 [completion_request]=4096 [chat_request]=4096 [engine_yaml]=4096
  [kubeconfig]=4096 [inference_deployment]=8192 [manifest_yaml]=16384 [watch_event]=4096
  [guided_regex]=512 [tool_calls]=1024 [guided_grammar]=1024
)
# What counts as a failure: a crash or sanitizer report, a leak, one input running
# longer than 10 s, or the process passing 2 GiB.
fuzz_flags=(-rss_limit_mb=2048 -timeout=10 -print_final_stats=1)

pick_compiler() {
  local preferred=$1 fallback=$2
  if command -v "$preferred" >/dev/null; then echo "$preferred"; else echo "$fallback"; fi
}
cc=${ORCA_FUZZ_CC:-$(pick_compiler clang-14 clang)}
cxx=${ORCA_FUZZ_CXX:-$(pick_compiler clang++-14 clang++)}
if ! command -v "$cxx" >/dev/null; then
  echo "[fuzz] $cxx not found: the fuzzers need clang (scripts/install-deps.sh installs it)" >&2
  exit 1
fi

configure_and_build() {
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DORCA_FUZZ=ON \
      -DORCA_WITH_CUDA=OFF -DORCA_BUILD_BENCH=OFF >/dev/null
  fi
  echo "[fuzz] building the fuzzers in $build with $cxx (-j $jobs)"
  cmake --build "$build" -j "$jobs" --target orca_fuzzers
}

# Prints "FILES BYTES" of directory $1.
corpus_size() {
  local files bytes
  files=$(find "$1" -type f | wc -l)
  bytes=$(find "$1" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
  echo "$files $bytes"
}

# Runs target $1 on a fresh copy of its seeds under $run/$1; leaves its log there.
run_target() {
  local t=$1 dir=$run/$1
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp tests/fuzz/corpus/"$t"/* "$dir/corpus/"
  corpus_size "$dir/corpus" >"$dir/start"
  local flags=("${fuzz_flags[@]}" -max_total_time="$seconds" -max_len="${max_len[$t]}"
               -artifact_prefix="$dir/artifacts/")
  [ -f "tests/fuzz/dict/$t.dict" ] && flags+=(-dict="tests/fuzz/dict/$t.dict")
  local rc=0
  # First every input that once crashed it (tests/fuzz/regressions/<target>/), each run once.
  : >"$dir/log"
  if [ -d "tests/fuzz/regressions/$t" ]; then
    "$build/tests/fuzz/${t}_fuzzer" "${fuzz_flags[@]}" tests/fuzz/regressions/"$t"/* \
      >"$dir/log" 2>&1 || rc=$?
    [ "$rc" = 0 ] || grep -o 'Running: [^ ]*' "$dir/log" | tail -1 | cut -c10- >"$dir/regression"
  fi
  if [ "$rc" = 0 ]; then
    "$build/tests/fuzz/${t}_fuzzer" "${flags[@]}" "$dir/corpus" >>"$dir/log" 2>&1 || rc=$?
  fi
  corpus_size "$dir/corpus" >"$dir/end"
  echo "$rc" >"$dir/rc"
  report_target "$t"
}

# Prints the result line of target $1 and, unless $2 is "brief", when it failed, what
# to do about it.
report_target() {
  local t=$1 dir=$run/$1 detail=${2:-full}
  local rc execs per_sec start_files start_bytes end_files end_bytes
  rc=$(cat "$dir/rc")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  per_sec=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -1)
  read -r start_files start_bytes <"$dir/start"
  read -r end_files end_bytes <"$dir/end"
  printf '[fuzz] %-22s %8s exec/s %10s execs  corpus %4s files %8s B -> %4s files %8s B  %s\n' \
    "$t" "${per_sec:-?}" "${execs:-?}" "$start_files" "$start_bytes" "$end_files" "$end_bytes" \
    "$([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)")"
  if [ "$rc" != 0 ] && [ "$detail" != brief ]; then
    # What the target itself printed just before it died (a trap says nothing else).
    awk '/^(#[0-9]|\tNEW_FUNC|INFO:|MERGE|Loaded|Running:|Executed)/ {next}
         /ERROR: / {exit} {print}' "$dir/log" | tail -20 | sed 's/^/[fuzz]   | /'
    grep -E 'ERROR: |SUMMARY: |runtime error|Test unit written|==[0-9]+==' "$dir/log" | head -12 |
      sed 's/^/[fuzz]   /'
    local artifact
    for artifact in $(cat "$dir/regression" 2>/dev/null) "$dir"/artifacts/*; do
      [ -e "$artifact" ] || continue
      echo "[fuzz]   reproducer: $artifact"
      echo "[fuzz]   rerun:      $build/tests/fuzz/${t}_fuzzer ${fuzz_flags[*]} $artifact"
      # The CI machine's files are gone once it stops: its log carries small reproducers.
      if [ "$(stat -c %s "$artifact")" -le 8192 ]; then
        echo "[fuzz]   bytes (base64 -d to rebuild):"
        base64 -w 100 "$artifact" | sed 's/^/[fuzz]     /'
      fi
    done
    echo "[fuzz]   log:        $dir/log"
  fi
}

configure_and_build
echo "[fuzz] built in ${SECONDS} s"
if [ -n "${ORCA_FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<<"$ORCA_FUZZ_TARGETS"
else
  targets=()
  for f in tests/fuzz/*_fuzzer.cc; do
    f=${f##*/}
    targets+=("${f%_fuzzer.cc}")
  done
fi
for t in "${targets[@]}"; do
  if [ -z "${max_len[$t]:-}" ] || [ ! -d "tests/fuzz/corpus/$t" ]; then
    echo "[fuzz] unknown target '$t' (no max_len entry or no tests/fuzz/corpus/$t)" >&2
    exit 1
  fi
done

run=$build/fuzz-run
mkdir -p "$run"
run_start=$SECONDS
echo "[fuzz] running ${#targets[@]} targets for $seconds s each, $jobs at a time; work in $run"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  echo "[fuzz] started $t"
  run_target "$t" &
  running=$((running + 1))
done
wait || true

echo "[fuzz] summary:"
failed=0
for t in "${targets[@]}"; do
  report_target "$t" brief
  [ "$(cat "$run/$t/rc")" = 0 ] || failed=$((failed + 1))
done
echo "[fuzz] fuzzed in $((SECONDS - run_start)) s; total ${SECONDS} s; $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
if [ "$failed" -gt 0 ]; then
  echo "[fuzz] $failed of ${#targets[@]} targets failed; a reproducer becomes a regression test (docs/fuzzing.md)" >&2
  exit 1
fi

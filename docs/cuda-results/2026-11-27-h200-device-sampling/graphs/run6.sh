#!/usr/bin/env bash
# Device run 6: graphs keyed by context class too. e2e tests, then whole iterations with
# graphs on and off at contexts 512 and 2000, and orca serve with graphs on and off.
set -uo pipefail
out=$1
mkdir -p "$out"
[ -d .gpu/lib ] || tar -C .gpu -xJf .gpu/lib.tar.xz
libs=$PWD/.gpu/lib
for name in libcudart.so.13 libcublas.so.13 libnccl.so.2; do
  f=$(find /usr/local /opt -maxdepth 9 -name "$name" -print -quit 2>/dev/null)
  [ -n "$f" ] && libs="$libs:$(dirname "$f")"
done
export LD_LIBRARY_PATH=$libs ORCA_SOURCE_DIR=$PWD ORCA_REQUIRE_GPU=1 CI=true
timeout 60 .gpu/bin/cuda_end_to_end_test --gtest_brief=1 >>"$out/tests.log" 2>&1
echo "cuda_end_to_end_test rc $?" | tee -a "$out/summary.txt"
m=/tmp/g/llama-1b
mkdir -p /tmp/g
.gpu/bin/orca model random --preset llama-1b --dtype BF16 --out $m >/dev/null 2>&1 || exit 1
for ctx in 512 2000; do
  timeout 60 .gpu/bin/orca-bench-kernels --reps 30 --decode-batches 1,4,16,64,256 --prefill-lens 512 \
    --tokens 1 --context $ctx --kv-cache-dtypes float16 --graphs on,off,on,off --model-dir $m \
    >"$out/bench-graphs-$ctx.json" 2>>"$out/bench.log"
  echo "bench graphs context $ctx rc $?" | tee -a "$out/summary.txt"
done

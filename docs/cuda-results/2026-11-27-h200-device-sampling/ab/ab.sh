#!/usr/bin/env bash
# A/B on one machine: the previous build's orca-bench-kernels against this build's,
# alternating, on one random llama-1B BF16.
set -uo pipefail
out=$1
libs=$PWD/.gpu/lib
for name in libcudart.so.13 libcublas.so.13 libnccl.so.2; do
  f=$(find /usr/local /opt -maxdepth 9 -name "$name" -print -quit 2>/dev/null)
  [ -n "$f" ] && libs="$libs:$(dirname "$f")"
done
export LD_LIBRARY_PATH=$libs
m=/tmp/ab-model/llama-1b
mkdir -p /tmp/ab-model
.gpu/bin/orca model random --preset llama-1b --dtype BF16 --out $m >/dev/null 2>&1 || exit 1
common="--reps 20 --decode-batches 1,16,64,256 --prefill-lens 512,2048 --tokens 1 --model-dir $m"
for round in 1 2; do
  timeout 100 .gpu/bin/orca-bench-kernels-prev $common >"$out/prev-$round.json" 2>>"$out/ab.log"
  echo "prev round $round rc $?" | tee -a "$out/ab.log"
  timeout 100 .gpu/bin/orca-bench-kernels $common --kv-cache-dtypes float32,float16,bfloat16 \
    >"$out/new-$round.json" 2>>"$out/ab.log"
  echo "new round $round rc $?" | tee -a "$out/ab.log"
done

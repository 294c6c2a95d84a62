#!/usr/bin/env bash
# Device run 4: guided decoding with the scheduler's masks made on every core.
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
timeout 100 .gpu/bin/cuda_end_to_end_test --gtest_brief=1 >>"$out/tests.log" 2>&1
echo "cuda_end_to_end_test rc $?" | tee -a "$out/summary.txt"
m=/tmp/g/llama-110m
mkdir -p /tmp/g
.gpu/bin/orca model random --preset llama-110m --dtype BF16 --out $m >/dev/null 2>&1 || exit 1
for guide in grammar regex schema; do
  flag=""
  [ $guide = schema ] && flag=--schema
  [ $guide = grammar ] && flag=--grammar
  for where in device host; do
    [ $guide != grammar ] && [ $where = host ] && continue
    extra="--device cuda"
    [ $where = host ] && extra="--device cuda --no-device-sampling"
    timeout 90 python3 bench/guided/guided_overhead.py --orca .gpu/bin/orca --model $m \
      --concurrency 1,32 --tokens 64 --rounds 3 $flag --serve-args "$extra" \
      --out "$out/guided-$guide-$where.json" >>"$out/guided.log" 2>&1
    echo "guided $guide $where rc $?" | tee -a "$out/summary.txt"
  done
done
grep -h "concurrency .*: guided" "$out/guided.log"

#!/usr/bin/env bash
# Device session 2 (2026-11-29): the radix-selection sampler and keyed-by-fewest-positions
# grammar tops, against the build of f3bd8b2 (.gpu/bin/old) where it matters.
set -u
cd "$(dirname "$0")/.."
root=$PWD
tar -C .gpu -xJf .gpu/bin.tar.xz
out=/tmp/r2
mkdir -p "$out"
# 1. gpu tests and stories260K (new build).
timeout 120 scripts/gpu-check.sh --prebuilt .gpu --quick --steps tests,generate --out "$out/check" >/dev/null 2>&1
cat "$out/check/summary.txt"
# The libraries gpu-check found, for what follows.
lib=$root/.gpu/lib
for name in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  f=$(find /usr/local /opt -maxdepth 9 -name "$name" -print -quit 2>/dev/null)
  [ -n "$f" ] && lib="$lib:$(dirname "$f")"
done
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
new=$root/.gpu/bin old=$root/.gpu/bin/old
cs="compute-sanitizer --error-exitcode 9 --print-limit 20"
# 2. the sampler under compute-sanitizer.
for tool in memcheck racecheck synccheck; do
  t0=$SECONDS
  filter='SamplingKernel*'
  [ $tool = racecheck ] && filter='SamplingKernelTest.MatchesHostSampler:SamplingKernelTest.SelectionInsideTies*'
  timeout 75 $cs --tool $tool "$new/cuda_kernels_direct_test" --gtest_filter="$filter" >"$out/sanitizer-$tool.log" 2>&1
  echo "sampler $tool: rc $? ($((SECONDS - t0)) s): $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/sanitizer-$tool.log" | tr '\n' ' ')"
done
# 3. the sampler alone, old and new builds, one after the other.
for b in old new; do
  t0=$SECONDS
  timeout 90 "${!b}/orca-bench-kernels" --reps 10 --skip-iterations >"$out/sampling-$b.json" 2>"$out/sampling-$b.log"
  echo "orca-bench-kernels $b: rc $? ($((SECONDS - t0)) s)"
done
python3 - "$out" <<'PY'
import json, sys
o, n = (json.load(open(f"{sys.argv[1]}/sampling-{b}.json"))["sampling"] for b in ("old", "new"))
for a, b in zip(o, n):
    print(f"{b['case'][:34]:34s} rows {b['rows']:4d}: {a['device_ms']:8.3f} -> {b['device_ms']:8.3f} ms (host {b['host_ms']:8.3f})")
PY
# 4. orca serve top_p 0.9 and top_k 40 at temperature 1, old and new builds.
model=$(mktemp -d)/llama-1b
"$new/orca" model random --preset llama-1b --dtype BF16 --out "$model" >/dev/null 2>&1
port=18437
for body in '{"top_p": 0.9}' '{"top_k": 40, "top_p": 0.9}'; do
  for b in old new; do
    "${!b}/orca" serve --model "$model" --device cuda --host 127.0.0.1 --port $port --grpc-port -1 \
      --max-batch-size 256 >>"$out/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 90); do
      python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/ready', timeout=2)" 2>/dev/null && break
      sleep 1
    done
    name=$(echo "$body" | tr -dc 'a-z0-9_.')-$b
    timeout 100 "$new/orca" bench serve --url "http://127.0.0.1:$port" --trace fixed --input-len 128 \
      --output-len 64 --num-requests 32 --sweep-concurrency 1,8,32 --cooldown 0 --temperature 1 \
      --extra-body "$body" --out "$out/serve-$name.json" >>"$out/serve.log" 2>&1
    echo "serve $body $b: rc $?"
    kill -TERM $pid; wait $pid 2>/dev/null
  done
done
python3 - "$out" <<'PY'
import json, sys, glob
for f in sorted(glob.glob(f"{sys.argv[1]}/serve-*.json")):
    d = json.load(open(f))
    print(f.split("/")[-1], [(r["config"]["concurrency"], round(r["results"]["request_throughput"], 2),
          round(r["results"]["output_token_throughput"]), round(r["results"]["tpot_ms"]["p50"], 2))
          for r in d["runs"]])
PY
rm -rf "$(dirname "$model")"
# 5. guided decoding overhead, new build: 256 tokens, 3 rounds.
gm=$(mktemp -d)/llama-110m
"$new/orca" model random --preset llama-110m --dtype BF16 --out "$gm" >/dev/null 2>&1
for g in regex schema grammar; do
  flag=""; [ $g != regex ] && flag=--$g
  timeout 110 python3 bench/guided/guided_overhead.py --orca "$new/orca" --model "$gm" --concurrency 1,32 \
    --tokens 256 --rounds 3 $flag --serve-args "--device cuda" --out "$out/guided-$g.json" >"$out/guided-$g.log" 2>&1
  echo "guided $g: rc $?"; grep -h "concurrency [0-9]*:" "$out/guided-$g.log"
done
tar -C /tmp -czf "${OUT:-/tmp}/r2.tar.gz" r2

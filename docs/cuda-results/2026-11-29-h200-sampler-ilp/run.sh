#!/usr/bin/env bash
# Device session 5 (2026-11-29): the sampler's passes over a row load 8 logits per thread
# before using them (ForEachLogit). Builds: .gpu/bin (this change, 256 threads a block),
# .gpu/bin/t512 and t1024 (the same with 512 / 1024 threads), .gpu/bin/old (before it).
set -u
cd "$(dirname "$0")/../../.."
root=$PWD
tar -C .gpu -xJf .gpu/bin.tar.xz
out=/tmp/r5  # its files are in variants/
mkdir -p "$out"
# 1. gpu tests and stories260K (this change).
timeout 120 scripts/gpu-check.sh --prebuilt .gpu --quick --steps tests,generate --out "$out/check" >/dev/null 2>&1
cat "$out/check/summary.txt"
lib=$root/.gpu/lib
for name in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  f=$(find /usr/local /opt -maxdepth 9 -name "$name" -print -quit 2>/dev/null)
  [ -n "$f" ] && lib="$lib:$(dirname "$f")"
done
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ORCA_REQUIRE_GPU=1
bin=$root/.gpu/bin
# 2. the sampler's tests on the 512- and 1024-thread variants.
for v in t512 t1024; do
  timeout 60 "$bin/$v/cuda_kernels_direct_test" --gtest_filter='SamplingKernel*' >"$out/tests-$v.log" 2>&1
  echo "sampler tests $v: rc $? $(grep -E 'PASSED|FAILED' "$out/tests-$v.log" | tr '\n' ' ')"
done
# 3. the sampler alone, each build one after the other, twice.
for r in 1 2; do
  for v in old new t512 t1024; do
    b=$bin/$v; [ $v = new ] && b=$bin
    timeout 60 "$b/orca-bench-kernels" --reps 10 --skip-iterations >"$out/sampling-$v-r$r.json" 2>"$out/sampling-$v-r$r.log"
    echo "orca-bench-kernels $v r$r: rc $?"
  done
done
python3 - "$out" <<'PY'
import json, sys
o = sys.argv[1]
runs = {v: [json.load(open(f"{o}/sampling-{v}-r{r}.json"))["sampling"] for r in (1, 2)] for v in ("old", "new", "t512", "t1024")}
print(f"{'case':34s} rows " + " ".join(f"{v:>15s}" for v in runs))
for i, c in enumerate(runs["old"][0]):
    cells = " ".join(f"{min(rr[i]['device_ms'] for rr in runs[v]):7.3f}/{max(rr[i]['device_ms'] for rr in runs[v]):7.3f}" for v in runs)
    print(f"{c['case'][:34]:34s} {c['rows']:4d} {cells}")
PY
# 4. compute-sanitizer on the sampler's tests (this change).
cs="compute-sanitizer --error-exitcode 9 --print-limit 20"
for tool in memcheck racecheck; do
  t0=$SECONDS
  filter='SamplingKernel*'
  [ $tool = racecheck ] && filter='SamplingKernelTest.MatchesHostSampler:SamplingKernelTest.SelectionInsideTies*'
  timeout 90 $cs --tool $tool "$bin/cuda_kernels_direct_test" --gtest_filter="$filter" >"$out/sanitizer-$tool.log" 2>&1
  echo "sampler $tool: rc $? ($((SECONDS - t0)) s): $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/sanitizer-$tool.log" | tr '\n' ' ')"
done
# 5. orca serve, llama-1B BF16: top_p 0.9 at temperature 1, and greedy; old and new.
model=$(mktemp -d)/llama-1b
"$bin/orca" model random --preset llama-1b --dtype BF16 --out "$model" >/dev/null 2>&1
port=18437
for kind in top_p greedy; do
  for v in old new; do
    b=$bin/$v; [ $v = new ] && b=$bin
    "$b/orca" serve --model "$model" --device cuda --host 127.0.0.1 --port $port --grpc-port -1 \
      --max-batch-size 256 >>"$out/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 90); do
      python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/ready', timeout=2)" 2>/dev/null && break
      sleep 1
    done
    args="--temperature 1 --extra-body {\"top_p\":0.9}"; [ $kind = greedy ] && args=""
    timeout 100 "$bin/orca" bench serve --url "http://127.0.0.1:$port" --trace fixed --input-len 128 \
      --output-len 64 --num-requests 32 --sweep-concurrency 1,8,32 --cooldown 0 $args \
      --out "$out/serve-$kind-$v.json" >>"$out/serve.log" 2>&1
    echo "serve $kind $v: rc $?"
    kill -TERM $pid; wait $pid 2>/dev/null
  done
done
python3 - "$out" <<'PY'
import json, sys, glob
for f in sorted(glob.glob(f"{sys.argv[1]}/serve-*.json")):
    d = json.load(open(f))
    print(f.split("/")[-1], [(r["config"]["concurrency"], round(r["results"]["request_throughput"], 2),
          round(r["results"]["tpot_ms"]["p50"], 2)) for r in d["runs"]])
PY
rm -rf "$(dirname "$model")"
tar -C /tmp -czf "${OUT:-/tmp}/r5.tar.gz" r5

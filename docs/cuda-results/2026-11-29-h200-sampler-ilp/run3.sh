#!/usr/bin/env bash
# Device session 7 (2026-11-29): top-p and the draw take their target from the first radix
# pass instead of a pass of its own (Measure), against .gpu/bin/mid (the commit before):
# gpu tests, the sampler under compute-sanitizer, the sampler alone, orca serve with
# top_p 0.9.
set -u
cd "$(dirname "$0")/../../.."
root=$PWD
tar -C .gpu -xJf .gpu/bin.tar.xz
out=/tmp/r7  # its files are in fold/
mkdir -p "$out"
timeout 120 scripts/gpu-check.sh --prebuilt .gpu --quick --steps tests,generate --out "$out/check" >/dev/null 2>&1
cat "$out/check/summary.txt"
lib=$root/.gpu/lib
for name in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  f=$(find /usr/local /opt -maxdepth 9 -name "$name" -print -quit 2>/dev/null)
  [ -n "$f" ] && lib="$lib:$(dirname "$f")"
done
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ORCA_REQUIRE_GPU=1
bin=$root/.gpu/bin
cs="compute-sanitizer --error-exitcode 9 --print-limit 20"
for tool in memcheck racecheck; do
  t0=$SECONDS
  filter='SamplingKernel*'
  [ $tool = racecheck ] && filter='SamplingKernelTest.MatchesHostSampler:SamplingKernelTest.SelectionInsideTies*'
  timeout 60 $cs --tool $tool "$bin/cuda_kernels_direct_test" --gtest_filter="$filter" >"$out/sanitizer-$tool.log" 2>&1
  echo "sampler $tool: rc $? ($((SECONDS - t0)) s): $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/sanitizer-$tool.log" | tr '\n' ' ')"
done
for v in mid new; do
  b=$bin/$v; [ $v = new ] && b=$bin
  timeout 60 "$b/orca-bench-kernels" --reps 10 --skip-iterations >"$out/sampling-$v.json" 2>/dev/null
  echo "orca-bench-kernels $v: rc $?"
done
python3 - "$out" <<'PY'
import json, sys
o, n = (json.load(open(f"{sys.argv[1]}/sampling-{b}.json"))["sampling"] for b in ("mid", "new"))
for a, b in zip(o, n):
    print(f"{b['case'][:34]:34s} rows {b['rows']:4d}: {a['device_ms']:7.3f} -> {b['device_ms']:7.3f} ms ({a['device_ms'] / b['device_ms']:4.2f}x)")
PY
model=$(mktemp -d)/llama-1b
"$bin/orca" model random --preset llama-1b --dtype BF16 --out "$model" >/dev/null 2>&1
port=18437
for kind in top_p; do
  for v in mid new; do
    b=$bin/$v; [ $v = new ] && b=$bin
    "$b/orca" serve --model "$model" --device cuda --host 127.0.0.1 --port $port --grpc-port -1 \
      --max-batch-size 256 >>"$out/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 90); do
      python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/ready', timeout=2)" 2>/dev/null && break
      sleep 1
    done
    case $kind in
      top_p) args="--temperature 1 --extra-body {\"top_p\":0.9}" ;;
      t1) args="--temperature 1" ;;
      greedy) args="" ;;
    esac
    # (rc 1 when the plot cannot be drawn: no matplotlib for /usr/bin/python3; the JSON is written)
    timeout 90 "$bin/orca" bench serve --url "http://127.0.0.1:$port" --trace fixed --input-len 128 \
      --output-len 64 --num-requests 32 --sweep-concurrency 1,8,32 --cooldown 0 $args \
      --out "$out/serve-$kind-$v.json" >>"$out/serve.log" 2>&1
    echo "serve $kind $v: rc $?"
    kill -TERM $pid; wait $pid 2>/dev/null
  done
done
python3 - "$out" <<'PY'
import json, sys
for kind in ("top_p",):
    o, n = (json.load(open(f"{sys.argv[1]}/serve-{kind}-{v}.json"))["runs"] for v in ("mid", "new"))
    for a, b in zip(o, n):
        ra, rb = a["results"], b["results"]
        print(f"{kind:6s} {b['config']['concurrency']:3d} clients: {ra['request_throughput']:7.2f} -> {rb['request_throughput']:7.2f} req/s "
              f"({rb['request_throughput'] / ra['request_throughput']:4.2f}x), TPOT p50 {ra['tpot_ms']['p50']:.2f} -> {rb['tpot_ms']['p50']:.2f} ms")
PY
rm -rf "$(dirname "$model")"
tar -C /tmp -czf "${OUT:-/tmp}/r7.tar.gz" r7

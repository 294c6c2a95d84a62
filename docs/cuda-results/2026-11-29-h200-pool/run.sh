#!/usr/bin/env bash
# Device session 3 (2026-11-29, build of e857ec3): guided decoding's overhead with the
# grammar tops keyed by fewest positions and the guide steps on a pool (neither had run
# on a GPU), spans of a traced schema and grammar run, the sampler benchmark that times
# the draw alone; the gpu tests and stories260K first.
set -u
cd "$(dirname "$0")/../../.."
root=$PWD
tar -C .gpu -xJf .gpu/bin.tar.xz
out=/tmp/r3
mkdir -p "$out"
# 1. gpu tests and stories260K.
timeout 120 scripts/gpu-check.sh --prebuilt .gpu --quick --steps tests,generate --out "$out/check" >/dev/null 2>&1
cat "$out/check/summary.txt"
lib=$root/.gpu/lib
for name in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  f=$(find /usr/local /opt -maxdepth 9 -name "$name" -print -quit 2>/dev/null)
  [ -n "$f" ] && lib="$lib:$(dirname "$f")"
done
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bin=$root/.gpu/bin
# 2. the sampler alone (the draw timed without its upload).
t0=$SECONDS
timeout 90 "$bin/orca-bench-kernels" --reps 10 --skip-iterations >"$out/sampling.json" 2>"$out/sampling.log"
echo "orca-bench-kernels sampling: rc $? ($((SECONDS - t0)) s)"
# 3. guided decoding overhead: llama-110m BF16 (regex, schema, grammar), llama-1B (schema).
for preset in llama-110m llama-1b; do
  m=$(mktemp -d)/$preset
  "$bin/orca" model random --preset $preset --dtype BF16 --out "$m" >/dev/null 2>&1
  kinds="regex schema grammar"; [ $preset = llama-1b ] && kinds=schema
  for g in $kinds; do
    flag=""; [ $g != regex ] && flag=--$g
    t0=$SECONDS
    timeout 150 python3 bench/guided/guided_overhead.py --orca "$bin/orca" --model "$m" --concurrency 1,32 \
      --tokens 256 --rounds 5 $flag --serve-args "--device cuda" --out "$out/guided-$preset-$g.json" \
      >"$out/guided-$preset-$g.log" 2>&1
    echo "guided $preset $g: rc $? ($((SECONDS - t0)) s)"; grep -h "concurrency [0-9]*:" "$out/guided-$preset-$g.log"
  done
  # 4. spans of a traced run at 32 clients (llama-110m).
  if [ $preset = llama-110m ]; then
    for g in schema grammar; do
      timeout 90 python3 bench/guided/guided_overhead.py --orca "$bin/orca" --model "$m" --concurrency 32 \
        --tokens 256 --rounds 1 --$g --serve-args "--device cuda --trace-file $out/trace-$g.json" \
        --out "$out/traced-$g.json" >"$out/traced-$g.log" 2>&1
      echo "traced $g: rc $?"; grep -h "concurrency [0-9]*:" "$out/traced-$g.log"
      python3 - "$out/trace-$g.json" <<'PY'
import json, sys, collections
d = json.load(open(sys.argv[1])); ev = d["traceEvents"] if isinstance(d, dict) else d
agg = collections.defaultdict(lambda: [0, 0.0])
for e in ev:
    if e.get("ph") == "X":
        k = (e.get("tid"), e["name"]); agg[k][0] += 1; agg[k][1] += e.get("dur", 0)
for k, (n, t) in sorted(agg.items(), key=lambda x: -x[1][1])[:14]:
    print(f"  {str(k):40s} n={n:6d} total={t/1e3:9.1f} ms mean={t/n:8.1f} us")
PY
      xz -T0 -6 "$out/trace-$g.json"
    done
  fi
  rm -rf "$(dirname "$m")"
done
tar -C /tmp -czf "${OUT:-/tmp}/r3.tar.gz" r3

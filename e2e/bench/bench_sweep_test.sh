#!/usr/bin/env bash
# `orca bench serve` against real `orca serve` processes (stories260K): a two-point
# sweep of the paper's trace scaled to the model's 512-token context, interleaved over
# an iteration-level and a request-level server, then a closed-loop run, a replay of
# the written trace file and an overlay plot. Every request must succeed with exactly
# the tokens it asked for, the JSON must be complete, the PNGs valid, and each server's
# own token counter must equal what the benchmark received from it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/common.sh"

[[ -x "${ORCA_BIN:-}" ]] || e2e_fail "ORCA_BIN is not set to the orca binary"
[[ -x "${ORCA_BENCH_BIN:-}" ]] || e2e_fail "ORCA_BENCH_BIN is not set to the orca-bench binary"
models=$(cd "$here/../.." && pwd)/models/stories260K
[[ -f "$models/config.json" ]] || e2e_skip "$models not found"
plot_python=${ORCA_BENCH_PYTHON:-/usr/bin/python3}
"$plot_python" -c 'import matplotlib' 2>/dev/null || e2e_skip "$plot_python cannot import matplotlib (python3-matplotlib)"

work=$(mktemp -d "${TMPDIR:-/tmp}/orca-bench-e2e.XXXXXX")
e2e_defer "rm -rf '$work'"
# Prints the failure reasons (and one error message) of each run in result file $1.
show_failures() {
  [[ -f "$1" ]] || return 0
  "$E2E_PYTHON" - "$1" >&2 <<'PY' || true
import json, sys
d = json.load(open(sys.argv[1]))
for r in d.get("runs", [d]):
    errs = [q.get("error") for q in r.get("requests", []) if not q.get("ok")]
    print(r["label"], r["config"].get("rate"), r["results"]["failures"], errs[:1])
PY
}

# Starts `orca serve --policy $1` with output in $work/$1.*; sets `url`.
start_server() {
  "$ORCA_BIN" serve --model "$models" --served-model-name stories260K --host 127.0.0.1 --port 0 \
    --grpc-port -1 --max-batch-size 16 --policy "$1" --trace-file "$work/$1.trace.json" \
    >"$work/$1.out" 2>"$work/$1.err" &
  e2e_defer "e2e_stop_pid $!"
  pid=$!
  e2e_wait_until 60 "orca serve --policy $1 to listen" grep -q "serving .* on http://" "$work/$1.out" ||
    { cat "$work/$1.err" >&2; e2e_fail "orca serve --policy $1 did not start"; }
  url=$(grep -o 'http://[0-9.]*:[0-9]*' "$work/$1.out" | head -1)
  e2e_log "orca serve --policy $1 at $url"
}
start_server request
request_url=$url
start_server iteration
iteration_pid=$pid

# The paper's trace scaled to the 512-token context: inputs U[16, 256], outputs
# U[1, 64], token ids < 512; bursty arrivals (gamma gaps of shape 0.5).
"$ORCA_BENCH_BIN" serve --url "$url,$request_url" --label iteration,request --trace paper \
  --input-min 16 --input-max 256 --output-min 1 --output-max 64 --token-id-max 500 \
  --burstiness 0.5 \
  --num-requests 24 --sweep 4,16 --cooldown 0.2 --seed 7 --slo-normalized-ms 1000 \
  --save-requests --require-success --progress-interval 1 \
  --out "$work/sweep.json" 2>"$work/sweep.err" ||
  { cat "$work/sweep.err" >&2; show_failures "$work/sweep.json"; e2e_fail "the sweep failed"; }
e2e_log "$(grep -v '^\[' "$work/sweep.err" | grep 'rate=')"

"$ORCA_BENCH_BIN" serve --url "$url" --label closed --trace fixed --input-len 100 --output-len 8 \
  --concurrency 4 --num-requests 12 --require-success --progress-interval 0 \
  --write-trace "$work/trace.jsonl" --out "$work/closed.json" 2>"$work/closed.err" ||
  { cat "$work/closed.err" >&2; e2e_fail "the closed-loop run failed"; }

# The trace written above replays as a JSONL trace file.
"$ORCA_BENCH_BIN" serve --url "$url" --label replay --trace file --trace-file "$work/trace.jsonl" \
  --rate 20 --require-success --progress-interval 0 --out "$work/replay.json" 2>"$work/replay.err" ||
  { cat "$work/replay.err" >&2; e2e_fail "the trace-file replay failed"; }

"$ORCA_BENCH_BIN" plot "$work/sweep.json" "$work/closed.json" "$work/replay.json" \
  -o "$work/overlay.png" 2>"$work/plot.err" || { cat "$work/plot.err" >&2; e2e_fail "plot failed"; }

curl -sf "$url/metrics" >"$work/metrics.txt" || e2e_fail "cannot scrape /metrics"
curl -sf "$request_url/metrics" >"$work/request-metrics.txt" || e2e_fail "cannot scrape /metrics"

# The iteration-level server's per-iteration trace, read by bench/trace/iteration_costs.py
# (the shape the scheduler writes, the ranks' computing time), once the server has
# stopped and closed it.
e2e_stop_pid "$iteration_pid" "orca serve --policy iteration"
"$plot_python" "$here/../../bench/trace/iteration_costs.py" --self-test >/dev/null ||
  e2e_fail "iteration_costs.py --self-test failed"
"$plot_python" "$here/../../bench/trace/iteration_costs.py" "$work/iteration.trace.json" \
  --json "$work/costs.json" >"$work/costs.txt" 2>&1 ||
  { cat "$work/costs.txt" >&2; e2e_fail "iteration_costs.py failed on the serving trace"; }
e2e_log "$(tail -1 "$work/costs.txt")"

"$E2E_PYTHON" - "$work" <<'PY' || e2e_fail "result check failed"
import json, os, re, sys
work = sys.argv[1]
keys = ["duration_s", "requests", "failures", "request_throughput", "output_token_throughput",
        "total_token_throughput", "input_tokens", "output_tokens", "median_normalized_latency_ms",
        "normalized_latency_ms", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "goodput"]

def check_run(run, n):
    res = run["results"]
    for k in keys:
        assert k in res, f"missing results.{k}"
    for d in ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "normalized_latency_ms"]:
        for p in ["p50", "p90", "p99", "mean"]:
            assert p in res[d], f"missing {d}.{p}"
    assert res["requests"] == {"total": n, "succeeded": n, "failed": 0}, res["requests"]
    assert res["request_throughput"] > 0 and res["median_normalized_latency_ms"] > 0
    for k in ["command", "url", "model", "trace", "slo", "rate", "mode"]:
        assert k in run["config"], f"missing config.{k}"
    return res["output_tokens"]

sweep = json.load(open(os.path.join(work, "sweep.json")))
assert sweep["schema"] == "orca.bench.sweep/v1"
for k in ["hostname", "cpu_model", "logical_cores", "memory"]:
    assert k in sweep["machine"], f"missing machine.{k}"
# Interleaved: every point on both servers before the next point.
assert [(r["label"], r["config"]["rate"]) for r in sweep["runs"]] == \
       [("iteration", 4), ("request", 4), ("iteration", 16), ("request", 16)]
assert [t["label"] for t in sweep["config"]["targets"]] == ["iteration", "request"]
assert all(r["config"]["trace"]["burstiness"] == 0.5 for r in sweep["runs"])
received = {"iteration": 0, "request": 0}
for run in sweep["runs"]:
    received[run["label"]] += check_run(run, 24)
    reqs = run["requests"]
    assert len(reqs) == 24
    for r in reqs:
        assert r["ok"] and r["output_tokens"] == r["expected_output"], r
        assert 1 <= r["expected_output"] <= 64 and 16 <= r["input_len"] <= 256
# Every run replays the same requests (same seed): only the arrival times differ.
for run in sweep["runs"][1:]:
    assert [r["input_len"] for r in run["requests"]] == \
           [r["input_len"] for r in sweep["runs"][0]["requests"]]
for name, n in [("closed.json", 12), ("replay.json", 12)]:
    doc = json.load(open(os.path.join(work, name)))
    assert doc["schema"] == "orca.bench.serve/v1"
    received["iteration"] += check_run(doc, n)
assert json.load(open(os.path.join(work, "closed.json")))["results"]["output_tokens"] == 12 * 8

for png in ["sweep.png", "overlay.png"]:
    data = open(os.path.join(work, png), "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000, png

# Each server generated exactly the tokens the benchmark received from it.
for name, policy in [("metrics.txt", "iteration"), ("request-metrics.txt", "request")]:
    metrics = open(os.path.join(work, name)).read()
    gen = sum(float(m) for m in re.findall(r"^orca_generation_tokens_total\{[^}]*\} ([0-9.e+]+)$", metrics, re.M))
    assert gen == received[policy], f"{policy}: server generated {gen} tokens, the benchmark received {received[policy]}"
# The traced iterations hold at least every prompt token of the server's first sweep point
# (later points repeat its prompts, which the prefix cache may serve) and exactly one
# decode for every output token but each request's first, over every request it served.
costs = json.load(open(os.path.join(work, "costs.json")))
first = sweep["runs"][0]
assert first["label"] == "iteration"
assert costs["prompt_tokens"] >= sum(r["input_len"] for r in first["requests"]), costs
served = [run["results"] for run in sweep["runs"] if run["label"] == "iteration"]
served += [json.load(open(os.path.join(work, name)))["results"] for name in ["closed.json", "replay.json"]]
decodes = sum(res["output_tokens"] - res["requests"]["succeeded"] for res in served)
assert costs["decodes"] == decodes, (costs["decodes"], decodes)
assert costs["fit"] is not None and costs["computing_s"] > 0, costs
print(f"ok: {received} tokens over {4 * 24 + 24} requests")
PY
e2e_log "PASS"

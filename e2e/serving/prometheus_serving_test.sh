#!/usr/bin/env bash
# A real Prometheus server scrapes `orca serve` during a short load; PromQL must then
# report exactly the prompt and generation tokens the clients received, one finished
# request per request sent, and a ready group. The exposition also parses with the
# python3-prometheus-client parser.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/prometheus.sh"

prom_require
[[ -x "${ORCA_BIN:-}" ]] || e2e_fail "ORCA_BIN is not set to the orca binary"
models=$(cd "$here/../.." && pwd)/models/stories260K
[[ -f "$models/config.json" ]] || e2e_skip "$models not found"

work=$(mktemp -d "${TMPDIR:-/tmp}/orca-prom-e2e.XXXXXX")
e2e_defer "rm -rf '$work'"
"$ORCA_BIN" serve --model "$models" --served-model-name stories260K --host 127.0.0.1 --port 0 --grpc-port -1 \
  >"$work/stdout" 2>"$work/stderr" &
orca_pid=$!
e2e_defer "e2e_stop_pid $orca_pid"
e2e_wait_until 30 "orca serve to listen" grep -q "serving .* on http://" "$work/stdout" ||
  { cat "$work/stderr" >&2; e2e_fail "orca serve did not start"; }
url=$(grep -o 'http://[0-9.]*:[0-9]*' "$work/stdout" | head -1)
target=${url#http://}
e2e_log "orca serve at $url"

prom_start "$target" || e2e_fail "prometheus did not start"
prom_wait_targets_up 30 || { prom_dump_log; e2e_fail "the orca target never came up"; }

received=$(ORCA_URL="$url" LOAD_REQUESTS=60 node "$here/load_for_metrics.mjs")
e2e_log "clients received: $received"
read -r requests prompt completion < <("$E2E_PYTHON" -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["requests"], d["prompt_tokens"], d["completion_tokens"])' "$received")

prom_wait_value 'sum(orca_generation_tokens_total)' == "$completion" 30 ||
  e2e_fail "orca_generation_tokens_total is $(prom_query 'sum(orca_generation_tokens_total)'), clients got $completion"
prom_wait_value 'sum(orca_prompt_tokens_total)' == "$prompt" 30 ||
  e2e_fail "orca_prompt_tokens_total is $(prom_query 'sum(orca_prompt_tokens_total)'), clients sent $prompt"
prom_wait_value 'sum(orca_request_success_total)' == "$requests" 30 ||
  e2e_fail "orca_request_success_total is $(prom_query 'sum(orca_request_success_total)'), expected $requests"
prom_wait_value 'sum(orca_e2e_request_latency_seconds_count)' == "$requests" 30 ||
  e2e_fail "the e2e latency histogram counted $(prom_query 'sum(orca_e2e_request_latency_seconds_count)')"
prom_wait_value 'orca_group_ready{model_name="stories260K"}' == 1 30 || e2e_fail "orca_group_ready is not 1"
prom_wait_value 'orca_kv_cache_usage_perc' == 0 30 || e2e_fail "KV cache not empty after the load"
iters=$(prom_query 'sum(orca_iteration_duration_seconds_count)')
e2e_log "iterations observed by Prometheus: $iters"

# The exposition parses with the reference Python parser.
curl -sf "$url/metrics" >"$work/metrics.txt"
/usr/bin/python3 - "$work/metrics.txt" <<'PY' || e2e_fail "python3-prometheus-client could not parse /metrics"
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
for name in ["orca_num_requests_running", "orca_num_requests_waiting", "orca_kv_cache_usage_perc",
             "orca_num_preemptions", "orca_prompt_tokens", "orca_generation_tokens", "orca_request_success",
             "orca_time_to_first_token_seconds", "orca_inter_token_latency_seconds",
             "orca_e2e_request_latency_seconds", "orca_request_queue_time_seconds", "orca_iteration_tokens",
             "orca_iteration_duration_seconds", "orca_batch_size", "orca_scheduler_overhead_seconds",
             "orca_pipeline_inflight_batches", "orca_group_ready"]:
    assert name in fams, f"missing family {name}"
    for s in fams[name].samples:
        assert s.labels.get("model_name") == "stories260K", f"{s.name} lacks model_name"
print("parsed", len(fams), "families")
PY
e2e_log "PASS"

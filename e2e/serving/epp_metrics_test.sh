#!/usr/bin/env bash
# The series a Gateway API Inference Extension endpoint picker (EPP) reads from a model
# server, under vLLM's names (docs/serving.md, "Endpoint pickers"): a real Prometheus
# scrapes `orca serve` while streams queue for 4 batch slots. Each vllm: series must
# parse, be typed gauge, and equal its orca_ twin at every scrape; Prometheus must have
# seen the queue; vllm:cache_config_info must carry the KV cache the engine logged.
# Pages taken mid-load parse with python3-prometheus-client and pass `promtool check
# metrics` (whose only findings may be the colon in vLLM's names).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/prometheus.sh"

prom_require
[[ -x "${ORCA_BIN:-}" ]] || e2e_fail "ORCA_BIN is not set to the orca binary"
models=$(cd "$here/../.." && pwd)/models/stories260K
[[ -f "$models/config.json" ]] || e2e_skip "$models not found"

work=$(mktemp -d "${TMPDIR:-/tmp}/orca-epp-e2e.XXXXXX")
e2e_defer "rm -rf '$work'"
"$ORCA_BIN" serve --model "$models" --served-model-name stories260K --host 127.0.0.1 --port 0 \
  --grpc-port -1 --max-batch-size 4 >"$work/stdout" 2>"$work/stderr" &
orca_pid=$!
e2e_defer "e2e_stop_pid $orca_pid"
e2e_wait_until 30 "orca serve to listen" grep -q "serving .* on http://" "$work/stdout" ||
  { cat "$work/stderr" >&2; e2e_fail "orca serve did not start"; }
url=$(grep -o 'http://[0-9.]*:[0-9]*' "$work/stdout" | head -1)
target=${url#http://}
# The engine's own account of its KV cache: the reference for vllm:cache_config_info.
read -r blocks block_size < <(sed -n 's/.*KV cache \([0-9]*\) blocks x \([0-9]*\) tokens.*/\1 \2/p' \
  "$work/stderr" | head -1) || true
[[ -n "${blocks:-}" && -n "${block_size:-}" ]] || e2e_fail "no 'KV cache N blocks x B tokens' in the log"
e2e_log "orca serve at $url; KV cache $blocks blocks x $block_size tokens"

prom_start "$target" || e2e_fail "prometheus did not start"
prom_wait_targets_up 30 || { prom_dump_log; e2e_fail "the orca target never came up"; }

# 64 streams of 400 tokens on 4 batch slots: a queue for several seconds, several of
# Prometheus' 1 s scrapes (with 32, a queue of about 2 s once the CPU's packed GEMM sped
# decode up, a scrape sometimes missed it while other tests loaded the machine).
stream() {
  curl -sf -N -o /dev/null -H 'Content-Type: application/json' "$url/v1/completions" \
    -d "{\"prompt\": \"Once upon a time $1\", \"max_tokens\": 400, \"ignore_eos\": true, \"stream\": true}"
}
pids=()
for i in $(seq 64); do
  stream "$i" &
  pids+=($!)
done
sleep 0.5
for k in 1 2 3 4 5; do
  curl -sf "$url/metrics" >"$work/page$k.txt" || e2e_fail "GET /metrics failed under load"
  sleep 0.3
done
for p in "${pids[@]}"; do wait "$p" || e2e_fail "a stream failed"; done
e2e_log "load done"

# Every mid-load page: the reference parser, equal twins, the info gauge, a queue seen.
/usr/bin/python3 - "$blocks" "$block_size" "$work"/page*.txt <<'PY' || e2e_fail "the mid-load pages do not agree"
import sys
from prometheus_client.parser import text_string_to_metric_families
blocks, block_size, pages = sys.argv[1], sys.argv[2], sys.argv[3:]
twins = {"vllm:num_requests_running": "orca_num_requests_running",
         "vllm:num_requests_waiting": "orca_num_requests_waiting",
         "vllm:kv_cache_usage_perc": "orca_kv_cache_usage_perc",
         "vllm:gpu_cache_usage_perc": "orca_kv_cache_usage_perc"}
max_waiting = 0
for page in pages:
    fams = {f.name: f for f in text_string_to_metric_families(open(page).read())}
    def value(name):
        fam = fams[name]
        assert fam.type == "gauge", f"{page}: {name} is {fam.type}, not a gauge"
        assert len(fam.samples) == 1, f"{page}: {name} has {len(fam.samples)} samples"
        s = fam.samples[0]
        assert s.labels == {"model_name": "stories260K"}, f"{page}: {name} labels {s.labels}"
        return s.value
    for vllm, orca in twins.items():
        assert value(vllm) == value(orca), f"{page}: {vllm} {value(vllm)} != {orca} {value(orca)}"
    assert 0 <= value("vllm:kv_cache_usage_perc") <= 1
    max_waiting = max(max_waiting, value("vllm:num_requests_waiting"))
    assert "vllm:cache_config_info" in fams, (
        f"{page}: no vllm:cache_config_info (orca serve gave ServingMetrics no KvCacheInfo)")
    info = fams["vllm:cache_config_info"]
    assert info.type == "gauge" and len(info.samples) == 1, f"{page}: cache_config_info {info}"
    s = info.samples[0]
    assert s.value == 1, f"{page}: vllm:cache_config_info is {s.value}"
    assert s.labels["block_size"] == block_size, s.labels
    assert s.labels["num_gpu_blocks"] == blocks, s.labels
    assert s.labels["cache_dtype"] and s.labels["model_name"] == "stories260K", s.labels
assert max_waiting > 0, "no mid-load page showed a waiting request"
print(f"{len(pages)} pages agree; up to {max_waiting:g} waiting")
PY

# promtool: the page must parse; its only lint findings may be the colon in vLLM's names
# (a naming convention for recording rules; these names are vLLM's, and EPPs expect them).
if command -v promtool >/dev/null 2>&1; then
  rc=0
  promtool check metrics <"$work/page3.txt" >"$work/promtool.txt" 2>&1 || rc=$?
  [[ $rc == 0 || $rc == 3 ]] || { cat "$work/promtool.txt" >&2; e2e_fail "promtool check metrics: exit $rc"; }
  if grep -v "^vllm:[a-z_]* metric names should not contain ':'$" "$work/promtool.txt" | grep -q .; then
    cat "$work/promtool.txt" >&2
    e2e_fail "promtool check metrics found problems beyond the colon in vLLM's names"
  fi
  e2e_log "promtool check metrics: exit $rc, $(wc -l <"$work/promtool.txt") colon findings (vllm: names)"
else
  e2e_log "promtool not installed: skipped its check"
fi

# What Prometheus stored over the run: both names equal at every scrape (a 1 s subquery
# at the scrape interval), and the queue, the running batch and the cache were seen.
prom_wait_value 'vllm:num_requests_running' == 0 30 || e2e_fail "the load never drained"
for pair in num_requests_running:num_requests_running num_requests_waiting:num_requests_waiting \
  kv_cache_usage_perc:kv_cache_usage_perc gpu_cache_usage_perc:kv_cache_usage_perc; do
  v=vllm:${pair%%:*} o=orca_${pair#*:}
  prom_wait_value "max_over_time(abs($v - $o)[5m:1s])" == 0 10 || e2e_fail "$v differs from $o"
  [[ $(prom_metadata "$v" | cut -f1) == gauge ]] || e2e_fail "$v is not typed gauge"
done
prom_wait_value 'max_over_time(vllm:num_requests_waiting[5m])' '>' 0 10 ||
  e2e_fail "Prometheus never saw a waiting request"
prom_wait_value 'max_over_time(vllm:num_requests_running{model_name="stories260K"}[5m])' == 4 10 ||
  e2e_fail "Prometheus never saw the 4 batch slots full"
prom_wait_value 'max_over_time(vllm:kv_cache_usage_perc[5m])' '>' 0 10 ||
  e2e_fail "Prometheus never saw KV cache in use"
prom_wait_value "vllm:cache_config_info{block_size=\"$block_size\",num_gpu_blocks=\"$blocks\",model_name=\"stories260K\"}" == 1 10 ||
  e2e_fail "vllm:cache_config_info does not carry the engine's KV cache"
e2e_log "PASS"

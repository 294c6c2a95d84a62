#!/usr/bin/env bash
# e2e: a real Prometheus server scrapes orca's metrics library and PromQL sees the
# values the exporter set (counters, a gauge, escaped label values and help text,
# a histogram that histogram_quantile understands, a counter that keeps rising).
#
#   e2e/metrics/prometheus_scrape_test.sh [PATH/TO/metrics_exporter_for_e2e]
#
# The exporter defaults to $ORCA_BINARY_DIR (or build/) /tests/engine/metrics/.
# Exit 0 pass, 1 fail, 77 skip when `prometheus` is not installed (fail if CI=true).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib/prometheus.sh
source "$HERE/../lib/prometheus.sh"

EXPORTER=${1:-${ORCA_BINARY_DIR:-$HERE/../../build}/tests/engine/metrics/metrics_exporter_for_e2e}

prom_require
[[ -x "$EXPORTER" ]] || e2e_fail "exporter not found at $EXPORTER (build metrics_exporter_for_e2e)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/orca-metrics-e2e.XXXXXX")
e2e_defer "rm -rf '$WORK'"
"$EXPORTER" --port-file "$WORK/port" >"$WORK/exporter.log" 2>&1 &
EXPORTER_PID=$!
e2e_defer "e2e_stop_pid $EXPORTER_PID metrics_exporter_for_e2e"
e2e_wait_until 10 "exporter port file" test -s "$WORK/port" || {
  cat "$WORK/exporter.log" >&2
  e2e_fail "the exporter did not start"
}
TARGET="127.0.0.1:$(cat "$WORK/port")"

prom_start "$TARGET" || e2e_fail "prometheus did not start"
prom_wait_targets_up 30 "$TARGET" || e2e_fail "prometheus never scraped $TARGET successfully"

failures=0
expect() {  # PROMQL OP VALUE
  prom_wait_value "$1" "$2" "$3" 15 || {
    e2e_log "FAILED: $1 $2 $3"
    failures=$((failures + 1))
  }
}
expect_metadata() {  # METRIC "TYPE<tab>HELP-as-Python-literal"
  local got
  got=$(prom_metadata "$1") || got="(no metadata)"
  if [[ "$got" == "$2" ]]; then
    e2e_log "ok: metadata of $1: $got"
  else
    e2e_log "FAILED: metadata of $1 is '$got', expected '$2'"
    failures=$((failures + 1))
  fi
}

# Every sample of the exposition was ingested: 2 + 1 + 1 + 6 (histogram) + 1.
expect "scrape_samples_scraped{instance=\"$TARGET\"}" == 11
expect "up{instance=\"$TARGET\"}" == 1

expect 'orca_e2e_requests_total{code="200",model_name="e2e-model"}' == 42
expect 'orca_e2e_requests_total{code="500"}' == 3
expect 'sum(orca_e2e_requests_total)' == 45
expect 'orca_e2e_temperature{model_name="e2e-model"}' == -12.25
# PromQL string escapes select the value quote" backslash\ newline<LF> ✓ exactly.
expect 'orca_e2e_label_escaping{value="quote\" backslash\\ newline\n ✓"}' == 1

expect 'orca_e2e_latency_seconds_bucket{le="0.1"}' == 2
expect 'orca_e2e_latency_seconds_bucket{le="0.5"}' == 3
expect 'orca_e2e_latency_seconds_bucket{le="1"}' == 4
expect 'orca_e2e_latency_seconds_bucket{le="+Inf"}' == 5
expect 'orca_e2e_latency_seconds_count' == 5
expect 'orca_e2e_latency_seconds_sum' == 3.15
# The median (rank 2.5) lies in (0.1, 0.5], holding ranks 2..3: 0.1 + 0.4 * 0.5.
expect 'histogram_quantile(0.5, orca_e2e_latency_seconds_bucket)' == 0.3

# The ticking counter rises between scrapes (10 per second).
expect 'orca_e2e_ticks_total' '>=' 20
expect 'increase(orca_e2e_ticks_total[5s])' '>' 0

expect_metadata orca_e2e_requests_total $'counter\t\'Requests.\''
expect_metadata orca_e2e_latency_seconds $'histogram\t\'A histogram.\''
expect_metadata orca_e2e_label_escaping \
  $'gauge\t\'Help with "quotes", a back\\\\slash and a\\nnewline.\''

if ((failures > 0)); then
  prom_dump_log
  e2e_fail "$failures check(s) failed"
fi
e2e_log "PASS: prometheus scraped every expected value from $TARGET"

# shellcheck shell=bash source-path=SCRIPTDIR
# Runs a real Prometheus server (Debian's `prometheus` binary) for e2e tests:
# start it on a free loopback port scraping given targets every second, wait for
# the targets, query it with PromQL, stop it.
#
#   source e2e/lib/prometheus.sh
#   prom_require                                 # skip (77) or fail under CI=true
#   prom_start 127.0.0.1:8080 127.0.0.1:9090     # sets PROM_URL; stops on exit
#   prom_wait_targets_up 30 || e2e_fail "targets never came up"
#   prom_query 'sum(orca_prompt_tokens_total)'   # prints the scalar result
#   prom_wait_value 'orca_group_ready' == 1 30   # polls until true, bounded
#
# Each server gets its own temporary directory (config, TSDB, log) that prom_stop
# removes. One server per script: PROM_PID, PROM_PORT, PROM_URL, PROM_DIR describe it.
# Set PROM_BIN to use another binary and PROM_KEEP_DIR=1 to keep the directory.

[[ -n "${_ORCA_E2E_PROMETHEUS_SH:-}" ]] && return 0
_ORCA_E2E_PROMETHEUS_SH=1

_PROM_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$_PROM_LIB_DIR/common.sh"

PROM_BIN=${PROM_BIN:-prometheus}
PROM_PID=""
PROM_PORT=""
PROM_URL=""
PROM_DIR=""

# Returns 0 when the prometheus binary is installed.
prom_available() { command -v "$PROM_BIN" >/dev/null 2>&1; }

# Skips the test (exit 77) when prometheus is missing; fails under CI=true.
prom_require() {
  prom_available && return 0
  e2e_skip "'$PROM_BIN' not found: install it with 'apt-get install -y prometheus'"
}

# Prints the last lines of the server's log to stderr (for failure reports).
prom_dump_log() {
  [[ -n "$PROM_DIR" && -f "$PROM_DIR/prometheus.log" ]] || return 0
  e2e_log "last lines of $PROM_DIR/prometheus.log:"
  tail -n 30 "$PROM_DIR/prometheus.log" >&2 || true
}

# Runs prometheus_api.py (see its usage) against the running server.
_prom_api() { "$E2E_PYTHON" "$_PROM_LIB_DIR/prometheus_api.py" "${PROM_URL:--}" "$@"; }

# Writes the config and starts the server scraping TARGET... (host:port, path
# /metrics) every 1 s as job "orca". Retries on another port when the first is
# taken. Registers prom_stop to run on exit. Returns 1 when it never gets ready.
prom_start() {
  (($# > 0)) || { e2e_log "prom_start: no targets given"; return 1; }
  prom_available || { e2e_log "prom_start: '$PROM_BIN' not installed"; return 1; }
  [[ -z "$PROM_PID" ]] || { e2e_log "prom_start: already running (pid $PROM_PID)"; return 1; }
  PROM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/orca-prometheus.XXXXXX")
  e2e_defer prom_stop
  local targets="" t
  for t in "$@"; do targets+="'$t', "; done
  cat >"$PROM_DIR/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: orca
    metrics_path: /metrics
    static_configs:
      - targets: [${targets%, }]
YAML
  local attempt
  for attempt in 1 2 3; do
    PROM_PORT=$(e2e_free_port)
    PROM_URL="http://127.0.0.1:$PROM_PORT"
    "$PROM_BIN" --config.file="$PROM_DIR/prometheus.yml" \
      --storage.tsdb.path="$PROM_DIR/data" \
      --web.listen-address="127.0.0.1:$PROM_PORT" \
      >"$PROM_DIR/prometheus.log" 2>&1 &
    PROM_PID=$!
    e2e_log "started prometheus (pid $PROM_PID) on $PROM_URL scraping: $*"
    if e2e_wait_until 30 "prometheus ready on $PROM_URL" _prom_ready &&
      kill -0 "$PROM_PID" 2>/dev/null; then
      return 0
    fi
    if kill -0 "$PROM_PID" 2>/dev/null; then
      prom_dump_log
      return 1  # running but never ready: retrying would not help
    fi
    wait "$PROM_PID" 2>/dev/null || true
    e2e_log "prometheus exited during start-up (attempt $attempt)"
    prom_dump_log
    PROM_PID=""
  done
  return 1
}

# Succeeds once the server answers /-/ready; fails fast if it died.
_prom_ready() {
  kill -0 "$PROM_PID" 2>/dev/null || return 0  # dead: let prom_start notice
  _prom_api ready 2>/dev/null
}

# Stops the server (SIGTERM, then SIGKILL after 15 s) and removes its directory.
prom_stop() {
  if [[ -n "$PROM_PID" ]]; then
    e2e_stop_pid "$PROM_PID" prometheus 15
    PROM_PID=""
  fi
  if [[ -n "$PROM_DIR" && -z "${PROM_KEEP_DIR:-}" ]]; then
    rm -rf "$PROM_DIR"
    PROM_DIR=""
  fi
}

# Waits up to TIMEOUT seconds (default 30) until every target (or only TARGET,
# host:port) has been scraped successfully. Returns 1 and prints the targets'
# state and the server log on timeout.
prom_wait_targets_up() {
  local timeout=${1:-30} target=${2:-}
  if e2e_wait_until "$timeout" "scrape targets up${target:+ ($target)}" _prom_all_up "$target"; then
    return 0
  fi
  _prom_api targets-json >&2 || true
  prom_dump_log
  return 1
}

_prom_all_up() {
  local counts up total
  counts=$(_prom_api targets ${1:+"$1"} 2>/dev/null) || return 1
  read -r up total <<<"$counts"
  [[ "$up" == "$total" ]]
}

# Runs the instant query PROMQL and prints its value: the scalar, or the single
# sample of a one-element vector ("+Inf", "NaN" as Prometheus spells them).
# Returns 1 (with a message) on errors, empty results or several series.
prom_query() { _prom_api query "$1"; }

# Prints "TYPE<tab>HELP" of METRIC as scraped, HELP as a Python string literal
# (so newlines stay visible), e.g. "counter<tab>'Requests.'".
prom_metadata() { _prom_api metadata "$1"; }

# Returns 0 when VALUE OP EXPECTED holds; OP is one of == != < <= > >=. Numbers
# compare with a relative tolerance of 1e-9; NaN == NaN.
prom_compare() { "$E2E_PYTHON" "$_PROM_LIB_DIR/prometheus_api.py" - compare "$1" "$2" "$3"; }

_prom_value_holds() {
  local got
  got=$(prom_query "$1" 2>/dev/null) || return 1
  _PROM_LAST_VALUE=$got
  prom_compare "$got" "$2" "$3"
}

# Polls the instant query PROMQL until its value OP EXPECTED (see prom_compare),
# for up to TIMEOUT seconds (default 30). On timeout prints the last value (or the
# query's error) and returns 1.
prom_wait_value() {
  local promql=$1 op=$2 expected=$3 timeout=${4:-30}
  _PROM_LAST_VALUE=""
  if e2e_wait_until "$timeout" "$promql $op $expected" \
    _prom_value_holds "$promql" "$op" "$expected"; then
    e2e_log "ok: $promql = $_PROM_LAST_VALUE ($op $expected)"
    return 0
  fi
  if [[ -n "$_PROM_LAST_VALUE" ]]; then
    e2e_log "last value of $promql: $_PROM_LAST_VALUE"
  else
    prom_query "$promql" || true
  fi
  return 1
}

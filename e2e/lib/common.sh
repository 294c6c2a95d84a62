# shellcheck shell=bash
# Helpers shared by orca's e2e scripts: logging, skip/fail with the ctest
# conventions, a cleanup stack run on exit, free ports and bounded polling.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
#   e2e_defer "rm -rf '$dir'"        # cleanups run in reverse order on any exit
#   e2e_wait_until 10 "port file" test -s "$dir/port" || e2e_fail "..."
#
# Exit codes: 0 pass, 1 fail, 77 skip (ctest SKIP_RETURN_CODE). Under CI=true a
# missing dependency fails instead of skipping.

[[ -n "${_ORCA_E2E_COMMON_SH:-}" ]] && return 0
_ORCA_E2E_COMMON_SH=1

E2E_SKIP_CODE=77
E2E_PYTHON=${E2E_PYTHON:-python3}

# Prints a timestamped message to stderr.
e2e_log() { printf '[e2e %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Fails the test with a message.
e2e_fail() {
  e2e_log "FAIL: $*"
  exit 1
}

# Skips the test (exit 77) because a dependency is missing; fails under CI=true.
e2e_skip() {
  if [[ "${CI:-}" == "true" ]]; then
    e2e_fail "$* (CI=true: a missing dependency is a failure, not a skip)"
  fi
  e2e_log "SKIP: $*"
  exit "$E2E_SKIP_CODE"
}

_E2E_CLEANUPS=()
_e2e_run_cleanups() {
  local i
  for ((i = ${#_E2E_CLEANUPS[@]} - 1; i >= 0; i--)); do
    eval "${_E2E_CLEANUPS[i]}" || true
  done
  _E2E_CLEANUPS=()
}

# Registers a command (one string, eval'ed) to run when the script exits, however
# it exits; later registrations run first.
e2e_defer() {
  _E2E_CLEANUPS+=("$*")
  trap _e2e_run_cleanups EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# Stops process PID (named NAME in messages): SIGTERM, then SIGKILL after
# TIMEOUT seconds (default 10). Returns 0 when it is gone.
e2e_stop_pid() {
  local pid=$1 name=${2:-process} timeout=${3:-10} i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    e2e_log "$name (pid $pid) ignored SIGTERM for ${timeout}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  return 0
}

# Prints a TCP port that is free on 127.0.0.1 right now.
e2e_free_port() {
  "$E2E_PYTHON" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# Runs COMMAND... every 0.2 s until it succeeds (returns 0) or TIMEOUT seconds
# pass (logs DESCRIPTION, returns 1).
e2e_wait_until() {
  local timeout=$1 description=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  while true; do
    if "$@"; then return 0; fi
    if ((SECONDS >= deadline)); then
      e2e_log "timed out after ${timeout}s waiting for: $description"
      return 1
    fi
    sleep 0.2
  done
}

#!/usr/bin/env bash
# The main job on a fresh machine: installs dependencies, builds `orca`, serves a model
# over the OpenAI-compatible API and answers one completion request, then keeps serving
# until Ctrl-C (ORCA_RUN_ONCE=1: stop after the answer).
#
#   scripts/run.sh                                   # the embedded stories260K checkpoint
#   scripts/run.sh --model DIR --port 8000 [orca serve flags]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
ORCA_TARGETS=orca scripts/build.sh
build=${ORCA_BUILD_DIR:-build}
orca=$build/engine/cli/orca

args=("$@")
model=""
port=8000
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --model) model=${args[i + 1]} ;;
    --model=*) model=${args[i]#--model=} ;;
    --port) port=${args[i + 1]} ;;
    --port=*) port=${args[i]#--port=} ;;
  esac
done
if [ -z "$model" ]; then
  model=models/stories260K  # a real trained Llama (llama2.c, MIT) shipped with orca
  args+=(--model "$model")
fi
if ! printf '%s\n' "${args[@]}" | grep -q -- '^--port'; then args+=(--port "$port"); fi

log=$(mktemp)
"$orca" serve --host 127.0.0.1 "${args[@]}" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 300); do
  if grep -q "serving .* on http://" "$log"; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then cat "$log" >&2; echo "orca serve exited" >&2; exit 1; fi
  sleep 0.1
done
url=$(grep -o 'http://[0-9.]*:[0-9]*' "$log" | head -1)
[ -n "$url" ] || { cat "$log" >&2; echo "orca serve did not start" >&2; exit 1; }
echo "orca serve is up at $url (model $model); asking for a completion:"
curl -sS "$url/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0}'
echo
if [ "${ORCA_RUN_ONCE:-0}" = 1 ]; then exit 0; fi
echo "serving on $url until Ctrl-C (log: $log)"
tail -f "$log" &
wait "$pid"

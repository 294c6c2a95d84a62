#!/usr/bin/env bash
# The preflight of e2e/k8s/cluster_test.sh against fake kubectl, helm, kind and docker
# (no cluster needed): with device gpu it fails when the nodes' allocatable
# nvidia.com/gpu cannot hold 2 groups and goes on when they can; on a kind context it
# loads both images with `kind load docker-image` when they exist locally, and fails when
# ORCA_E2E_LOAD_IMAGES=1 and they do not; every step is timed in the report.
#
#   e2e/k8s/preflight_test.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

fake=$(mktemp -d "${TMPDIR:-/tmp}/orca-preflight.XXXXXX")
trap 'rm -rf "$fake"' EXIT
calls=$fake/calls.log
# A kind cluster "orca" with three nodes (GPUs: 1, $FAKE_GPUS, none). helm fails, so
# each run stops right after the preflight.
cat >"$fake/kubectl" <<'EOF'
#!/usr/bin/env bash
echo "kubectl $*" >>"$FAKE_CALLS"
case "$*" in
  "config current-context") echo kind-orca ;;
  "get nodes "*) printf 'gpu-a 1\ngpu-b %s\ncpu-c \n' "${FAKE_GPUS:-2}" ;;
esac
exit 0
EOF
cat >"$fake/kind" <<'EOF'
#!/usr/bin/env bash
echo "kind $*" >>"$FAKE_CALLS"
EOF
cat >"$fake/docker" <<'EOF'
#!/usr/bin/env bash
echo "docker $*" >>"$FAKE_CALLS"
[ "$1 $2" = "image inspect" ] && [ "${FAKE_IMAGES:-1}" = 1 ]
EOF
cat >"$fake/helm" <<'EOF'
#!/usr/bin/env bash
echo "helm $*" >>"$FAKE_CALLS"
exit 1
EOF
chmod +x "$fake"/*

failures=0
check() {  # check NAME WANT_CODE PATTERN [ENV...]
  local name=$1 want=$2 pattern=$3
  shift 3
  : >"$calls"
  local out code=0
  out=$(env PATH="$fake:$PATH" FAKE_CALLS="$calls" ORCA_HELM="$fake/helm" "$@" \
        bash "$root/e2e/k8s/cluster_test.sh" 2>&1) || code=$?
  if [ "$code" = "$want" ] && grep -qE "$pattern" <<<"$out$(cat "$calls")"; then
    echo "ok: $name"
  else
    echo "FAIL: $name (exit $code, wanted $want; no match for /$pattern/):"
    printf '%s\n' "$out" | sed 's/^/    /'
    sed 's/^/    calls: /' "$calls"
    failures=$((failures + 1))
  fi
}

check "gpu: 3 allocatable GPUs cannot hold 2 groups of 1x2" 1 \
  'FAIL: device gpu needs 4 allocatable nvidia.com/gpu \(2 groups of tensor 1 x pipeline 2\); the nodes have 3' \
  ORCA_E2E_DEVICE=gpu FAKE_GPUS=2
check "gpu: 4 allocatable GPUs pass the preflight" 1 \
  'GPU capacity: 4 allocatable nvidia.com/gpu >= 4 needed' \
  ORCA_E2E_DEVICE=gpu FAKE_GPUS=3
check "cpu: no GPU check" 1 'helm upgrade --install' ORCA_E2E_DEVICE=cpu FAKE_GPUS=0
if grep -q 'get nodes' "$calls"; then
  echo "FAIL: device cpu looked at the nodes' GPUs"
  failures=$((failures + 1))
fi
check "kind: local images are loaded into the cluster" 1 \
  'kind load docker-image reg.example/ctl:1 reg.example/orca:1 --name orca' \
  ORCA_IMAGE=reg.example/orca:1 ORCA_CONTROLLER_IMAGE=reg.example/ctl:1
check "kind: missing local images with ORCA_E2E_LOAD_IMAGES=1 fail" 1 \
  'FAIL: ORCA_E2E_LOAD_IMAGES=1 but the images cannot be loaded into kind: reg.example/orca:1 is not in the local Docker engine' \
  ORCA_IMAGE=reg.example/orca:1 ORCA_CONTROLLER_IMAGE=reg.example/ctl:1 ORCA_E2E_LOAD_IMAGES=1 FAKE_IMAGES=0
check "every step is timed in the report" 1 \
  'step times \([0-9]+ s in all\):' ORCA_E2E_DEVICE=cpu

if [ "$failures" -gt 0 ]; then
  echo "preflight_test: $failures check(s) failed"
  exit 1
fi
echo "preflight_test: PASS"

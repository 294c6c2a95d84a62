#!/usr/bin/env bash
# orca on a real Kubernetes cluster (kind, or any cluster with a GPU node), end to end:
#   0. preflight: kubectl reaches the cluster; with device gpu, the nodes' allocatable
#      nvidia.com/gpu covers the example at 2 groups; on kind, the images built here
#      (scripts/test-images.sh) are loaded into the nodes with `kind load docker-image`;
#   1. helm install the chart (controller, RBAC, CRD) and wait until the CRD is
#      Established;
#   2. apply an InferenceDeployment (e2e/k8s/inferencedeployment.yaml) and wait for
#      its Available condition;
#   3. send a completion through its Ingress;
#   4. scale it to 2 serving groups through the scale subresource (kubectl scale), wait
#      for both groups to be ready, and back to 1;
#   5. delete it (owned objects cascade), helm uninstall (the CRD is kept).
# Without a reachable cluster it says so and exits 77 (ctest: skipped), so CI passes.
#
#   e2e/k8s/cluster_test.sh                   run against the current kubectl context
#   e2e/k8s/cluster_test.sh --print-manifest  print the InferenceDeployment and exit
#
# Settings (environment):
#   ORCA_CONTROLLER_IMAGE  controller image (ghcr.io/orca-serving/orca-controller:0.1.0)
#   ORCA_IMAGE             serving image (ghcr.io/orca-serving/orca:0.1.0)
#   ORCA_E2E_DEVICE        cpu | gpu (cpu)
#   ORCA_E2E_MODEL_URI     model location on the nodes (hostpath:///models/stories260K)
#   ORCA_E2E_MODEL_NAME    served model name (stories260k)
#   ORCA_E2E_INGRESS_CLASS IngressClass (nginx)
#   ORCA_E2E_HOST          Ingress host (orca-e2e.local)
#   ORCA_E2E_INGRESS_ADDR  address of the ingress controller (default: the Ingress's
#                          load-balancer address, else 127.0.0.1 as with kind)
#   ORCA_E2E_NAMESPACE     namespace of the InferenceDeployment (orca-e2e)
#   ORCA_E2E_SYSTEM_NAMESPACE  namespace of the chart (orca-system)
#   ORCA_E2E_TIMEOUT       seconds to wait for readiness (900)
#   ORCA_E2E_KEEP=1        leave everything installed (for debugging)
#   ORCA_E2E_DELETE_CRD=1  also delete the CRD at the end
#   ORCA_E2E_K8S=1         needed when run by ctest (helm_e2e_k8s_cluster), which
#                          otherwise skips rather than touch the current context
#   ORCA_E2E_LOAD_IMAGES   auto | 1 | 0: `kind load docker-image` both images from the
#                          local Docker engine (auto: when the context is a kind cluster,
#                          `kind` is installed and the images exist locally; 1: required)
#   ORCA_E2E_KIND_CLUSTER  kind cluster name (default: the context's, kind-NAME)
# Every step is timed; the times are listed at the end, also when a step fails.
# Setup of a kind cluster: docs/install.md ("Try it on kind"); with the images built by
# scripts/test-images.sh:
#   ORCA_IMAGE=orca-local/orca:0.1.0-cpu ORCA_CONTROLLER_IMAGE=orca-local/orca-controller:0.1.0 \
#     e2e/k8s/cluster_test.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

CONTROLLER_IMAGE=${ORCA_CONTROLLER_IMAGE:-ghcr.io/orca-serving/orca-controller:0.1.0}
IMAGE=${ORCA_IMAGE:-ghcr.io/orca-serving/orca:0.1.0}
DEVICE=${ORCA_E2E_DEVICE:-cpu}
MODEL_URI=${ORCA_E2E_MODEL_URI:-hostpath:///models/stories260K}
MODEL_NAME=${ORCA_E2E_MODEL_NAME:-stories260k}
INGRESS_CLASS=${ORCA_E2E_INGRESS_CLASS:-nginx}
HOST=${ORCA_E2E_HOST:-orca-e2e.local}
NS=${ORCA_E2E_NAMESPACE:-orca-e2e}
SYS_NS=${ORCA_E2E_SYSTEM_NAMESPACE:-orca-system}
RELEASE=orca-e2e
NAME=e2e
TIMEOUT=${ORCA_E2E_TIMEOUT:-900}
CRD=inferencedeployments.serving.orca.dev

log() { printf '[e2e/k8s] %s\n' "$*"; }
fail() { printf '[e2e/k8s] FAIL: %s\n' "$*" >&2; exit 1; }

# Step timing with bash's SECONDS only (the skip paths run with a bare PATH).
step_name=""
step_start=0
step_times=()
end_step() {
  if [ -n "$step_name" ]; then
    local took=$((SECONDS - step_start))
    step_times+=("$(printf '%-52s %5d s%s' "$step_name" "$took" "${1:-}")")
    if [ -n "${1:-}" ]; then log "failed: $step_name (${took} s)"; else log "done: $step_name (${took} s)"; fi
    step_name=""
  fi
}
step() {
  end_step
  step_name=$1
  step_start=$SECONDS
  log "step: $1"
}
report_steps() {
  end_step "${1:-}"
  [ ${#step_times[@]} -gt 0 ] || return 0
  log "step times (${SECONDS} s in all):"
  printf '[e2e/k8s]   %s\n' "${step_times[@]}"
}
skip() {
  printf '[e2e/k8s] SKIP: %s\n' "$*"
  printf '[e2e/k8s] This test needs a Kubernetes cluster (kind, or one with a GPU node); see docs/install.md.\n'
  exit 77
}

manifest() {
  sed -e "s|@NAME@|$NAME|g" -e "s|@NAMESPACE@|$NS|g" -e "s|@IMAGE@|$IMAGE|g" \
      -e "s|@MODEL_NAME@|$MODEL_NAME|g" -e "s|@MODEL_URI@|$MODEL_URI|g" -e "s|@DEVICE@|$DEVICE|g" \
      -e "s|@INGRESS_CLASS@|$INGRESS_CLASS|g" -e "s|@HOST@|$HOST|g" e2e/k8s/inferencedeployment.yaml
}

if [ "${1:-}" = "--print-manifest" ]; then
  manifest
  exit 0
fi
case "$DEVICE" in cpu | gpu) ;; *) fail "ORCA_E2E_DEVICE must be cpu or gpu, not $DEVICE" ;; esac

# ---- preflight: tools and a reachable cluster, else skip ----
command -v kubectl >/dev/null 2>&1 || skip "kubectl is not installed"
HELM=${ORCA_HELM:-$(command -v helm || echo .cache/bin/helm)}
[ -x "$HELM" ] || skip "helm is not installed (scripts/install-deps.sh puts it in .cache/bin)"
command -v curl >/dev/null 2>&1 || skip "curl is not installed"
if ! timeout 20 kubectl cluster-info >/dev/null 2>&1; then
  skip "no Kubernetes cluster is reachable (kubectl cluster-info failed; context: $(kubectl config current-context 2>/dev/null || echo none))"
fi
context=$(kubectl config current-context 2>/dev/null || echo in-cluster)
# Under ctest (which sets ORCA_E2E_REQUIRE_OPT_IN), never install into whatever cluster
# the current context happens to point at unless asked to.
if [ "${ORCA_E2E_REQUIRE_OPT_IN:-0}" = 1 ] && [ "${ORCA_E2E_K8S:-0}" != 1 ]; then
  skip "a cluster is reachable (context $context), but ORCA_E2E_K8S=1 is not set: not installing into it"
fi
log "cluster: $context"

# ---- 0. preflight: GPU capacity, images on kind ----
step "preflight: cluster $context"
log "kubectl $(kubectl version --client 2>/dev/null | sed -n 's/^Client Version: //p' | head -1); server $(kubectl version 2>/dev/null | sed -n 's/^Server Version: //p' | head -1)"
if [ "$DEVICE" = gpu ]; then
  # One GPU per worker pod (tensor x pipeline per group), and the test scales to 2 groups.
  tp=$(manifest | sed -n 's/^ *tensor: *\([0-9][0-9]*\).*/\1/p' | head -1)
  pp=$(manifest | sed -n 's/^ *pipeline: *\([0-9][0-9]*\).*/\1/p' | head -1)
  need=$((2 * ${tp:-1} * ${pp:-1}))
  have=0
  while read -r node gpus; do
    [ -n "$node" ] || continue
    log "node $node: allocatable nvidia.com/gpu ${gpus:-0}"
    case "${gpus:-0}" in '' | *[!0-9]*) gpus=0 ;; esac
    have=$((have + gpus))
  done < <(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.allocatable.nvidia\.com/gpu}{"\n"}{end}')
  [ "$have" -ge "$need" ] || fail "device gpu needs $need allocatable nvidia.com/gpu (2 groups of tensor ${tp:-1} x pipeline ${pp:-1}); the nodes have $have (is the NVIDIA device plugin installed?)"
  log "GPU capacity: $have allocatable nvidia.com/gpu >= $need needed"
fi
kind_cluster=${ORCA_E2E_KIND_CLUSTER:-}
if [ -z "$kind_cluster" ]; then
  case "$context" in kind-*) kind_cluster=${context#kind-} ;; esac
fi
load=${ORCA_E2E_LOAD_IMAGES:-auto}
if [ "$load" != 0 ]; then
  why=""
  if [ -z "$kind_cluster" ]; then why="the context $context is not a kind cluster"
  elif ! command -v kind >/dev/null 2>&1; then why="kind is not installed"
  elif ! command -v docker >/dev/null 2>&1; then why="docker is not installed"
  else
    for image in "$CONTROLLER_IMAGE" "$IMAGE"; do
      docker image inspect "$image" >/dev/null 2>&1 || why="$image is not in the local Docker engine (scripts/test-images.sh builds the CPU images)"
    done
  fi
  if [ -n "$why" ]; then
    [ "$load" = 1 ] && fail "ORCA_E2E_LOAD_IMAGES=1 but the images cannot be loaded into kind: $why"
    log "images are pulled by the nodes, not loaded: $why"
  else
    step "kind load docker-image into $kind_cluster"
    kind load docker-image "$CONTROLLER_IMAGE" "$IMAGE" --name "$kind_cluster"
    log "loaded $CONTROLLER_IMAGE and $IMAGE into kind cluster $kind_cluster"
  fi
fi
if [ -n "$kind_cluster" ] && [ "$MODEL_URI" = hostpath:///models/stories260K ] && [ ! -f /tmp/orca-models/stories260K/config.json ]; then
  log "warning: /tmp/orca-models/stories260K is missing; e2e/k8s/kind-config.yaml mounts /tmp/orca-models as the node's /models (cp -r models/stories260K /tmp/orca-models/)"
fi

diagnose() {
  log "diagnostics:"
  kubectl get inferencedeployments -n "$NS" -o yaml 2>&1 | tail -60 || true
  kubectl get pods,svc,ingress,statefulsets,deployments -n "$NS" -o wide 2>&1 || true
  kubectl get events -n "$NS" --sort-by=.lastTimestamp 2>&1 | tail -30 || true
  kubectl logs -n "$SYS_NS" -l app.kubernetes.io/component=controller --tail=80 --prefix 2>&1 || true
}
cleanup() {
  local code=$?
  if [ "$code" -ne 0 ] && [ "$code" -ne 77 ]; then
    report_steps " (FAILED)"
    diagnose
  fi
  if [ "${ORCA_E2E_KEEP:-0}" = 1 ]; then
    log "ORCA_E2E_KEEP=1: leaving release $RELEASE and namespace $NS in place"
    return
  fi
  kubectl delete inferencedeployment "$NAME" -n "$NS" --ignore-not-found --wait=true --timeout=120s >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  "$HELM" uninstall "$RELEASE" -n "$SYS_NS" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# ---- 1. install the chart ----
step "helm install and CRD established"
log "helm install $RELEASE (controller $CONTROLLER_IMAGE)"
"$HELM" upgrade --install "$RELEASE" helm/orca -n "$SYS_NS" --create-namespace \
  --set controller.image.repository="${CONTROLLER_IMAGE%:*}" \
  --set controller.image.tag="${CONTROLLER_IMAGE##*:}" \
  --wait --timeout 5m
kubectl wait --for=condition=Established "crd/$CRD" --timeout=60s
log "CRD $CRD is Established"
# The release name contains the chart name, so objects are named "$RELEASE-...".
kubectl rollout status -n "$SYS_NS" "deployment/$RELEASE-controller" --timeout=180s

# ---- 2. apply the example and wait for Available ----
step "apply the InferenceDeployment and wait for Available"
kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
log "apply InferenceDeployment $NS/$NAME (device $DEVICE, model $MODEL_URI)"
manifest | kubectl apply -f -
log "waiting up to ${TIMEOUT}s for condition Available"
kubectl wait -n "$NS" "inferencedeployment/$NAME" --for=condition=Available --timeout="${TIMEOUT}s"

# ---- 3. a completion through the Ingress ----
step "completion through the Ingress"
addr=${ORCA_E2E_INGRESS_ADDR:-}
if [ -z "$addr" ]; then
  for _ in $(seq 30); do
    addr=$(kubectl get ingress "$NAME" -n "$NS" -o jsonpath='{.status.loadBalancer.ingress[0].ip}{.status.loadBalancer.ingress[0].hostname}' 2>/dev/null || true)
    [ -n "$addr" ] && break
    sleep 2
  done
  addr=${addr:-127.0.0.1}
fi
log "POST /v1/completions via ingress $addr (Host: $HOST)"
body=""
for attempt in $(seq 20); do
  if body=$(curl -sS --fail --max-time 60 -H "Host: $HOST" -H 'Content-Type: application/json' \
      "http://$addr/v1/completions" \
      -d "{\"model\": \"$MODEL_NAME\", \"prompt\": \"Once upon a time\", \"max_tokens\": 8, \"temperature\": 0}"); then
    break
  fi
  log "attempt $attempt failed; the Ingress may still be programming"
  body=""
  sleep 3
done
[ -n "$body" ] || fail "no completion through the Ingress at $addr"
echo "$body" | grep -q '"choices"' || fail "unexpected completion response: $body"
echo "$body" | grep -q '"text"' || fail "completion has no text: $body"
log "completion: $body"

# ---- 4. scale through the scale subresource ----
step "scale to 2 groups and back to 1"
scale_path="/apis/serving.orca.dev/v1alpha1/namespaces/$NS/inferencedeployments/$NAME/scale"
selector=$(kubectl get --raw "$scale_path" | sed -n 's/.*"selector":"\([^"]*\)".*/\1/p')
[ -n "$selector" ] || fail "the scale subresource reports no selector"
log "scale selector: $selector"
scale_to() {
  log "kubectl scale --replicas=$1"
  kubectl scale -n "$NS" "inferencedeployment/$NAME" --replicas="$1"
  kubectl get --raw "$scale_path" | grep -q "\"replicas\":$1" || fail "scale subresource does not report spec.replicas $1"
  kubectl wait -n "$NS" "inferencedeployment/$NAME" --for=jsonpath='{.status.readyReplicas}'="$1" --timeout="${TIMEOUT}s"
  local groups
  groups=$(kubectl get deployments -n "$NS" -l "serving.orca.dev/deployment=$NAME,serving.orca.dev/role=scheduler" -o name | wc -l)
  [ "$groups" -eq "$1" ] || fail "expected $1 scheduler Deployments, found $groups"
  local pods
  pods=$(kubectl get pods -n "$NS" -l "$selector" -o name | wc -l)
  log "$1 serving group(s) ready; $pods scheduler pod(s) match the scale selector"
}
scale_to 2
scale_to 1

# ---- 5. delete and uninstall ----
if [ "${ORCA_E2E_KEEP:-0}" = 1 ]; then
  report_steps
  log "PASS (ORCA_E2E_KEEP=1: nothing removed)"
  exit 0
fi
step "delete the InferenceDeployment and helm uninstall"
log "delete InferenceDeployment (owned objects cascade)"
kubectl delete inferencedeployment "$NAME" -n "$NS" --wait=true --timeout=300s
for _ in $(seq 60); do
  left=$(kubectl get deployments,statefulsets,services -n "$NS" -l "serving.orca.dev/deployment=$NAME" -o name | wc -l)
  [ "$left" -eq 0 ] && break
  sleep 2
done
[ "$left" -eq 0 ] || fail "$left owned objects remain after deleting the InferenceDeployment"
log "helm uninstall $RELEASE"
"$HELM" uninstall "$RELEASE" -n "$SYS_NS" --wait
kubectl get "crd/$CRD" >/dev/null || fail "the CRD was deleted on uninstall (it should be kept)"
log "the CRD is kept after uninstall (helm.sh/resource-policy: keep)"
if [ "${ORCA_E2E_DELETE_CRD:-0}" = 1 ]; then
  kubectl delete "crd/$CRD"
fi
report_steps
log "PASS"

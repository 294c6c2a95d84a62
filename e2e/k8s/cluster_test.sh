#!/usr/bin/env bash
# orca on a real Kubernetes cluster (kind, or any cluster with a GPU node), end to end:
#   1. helm install the chart (controller, RBAC, CRD);
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
# Setup of a kind cluster: docs/install.md ("Try it on kind").
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

diagnose() {
  log "diagnostics:"
  kubectl get inferencedeployments -n "$NS" -o yaml 2>&1 | tail -60 || true
  kubectl get pods,svc,ingress,statefulsets,deployments -n "$NS" -o wide 2>&1 || true
  kubectl get events -n "$NS" --sort-by=.lastTimestamp 2>&1 | tail -30 || true
  kubectl logs -n "$SYS_NS" -l app.kubernetes.io/component=controller --tail=80 --prefix 2>&1 || true
}
cleanup() {
  local code=$?
  if [ "$code" -ne 0 ] && [ "$code" -ne 77 ]; then diagnose; fi
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
log "helm install $RELEASE (controller $CONTROLLER_IMAGE)"
"$HELM" upgrade --install "$RELEASE" helm/orca -n "$SYS_NS" --create-namespace \
  --set controller.image.repository="${CONTROLLER_IMAGE%:*}" \
  --set controller.image.tag="${CONTROLLER_IMAGE##*:}" \
  --wait --timeout 5m
kubectl wait --for=condition=Established "crd/$CRD" --timeout=60s
# The release name contains the chart name, so objects are named "$RELEASE-...".
kubectl rollout status -n "$SYS_NS" "deployment/$RELEASE-controller" --timeout=180s

# ---- 2. apply the example and wait for Available ----
kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
log "apply InferenceDeployment $NS/$NAME (device $DEVICE, model $MODEL_URI)"
manifest | kubectl apply -f -
log "waiting up to ${TIMEOUT}s for condition Available"
kubectl wait -n "$NS" "inferencedeployment/$NAME" --for=condition=Available --timeout="${TIMEOUT}s"

# ---- 3. a completion through the Ingress ----
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
  log "PASS (ORCA_E2E_KEEP=1: nothing removed)"
  exit 0
fi
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
log "PASS"

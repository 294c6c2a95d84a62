#!/usr/bin/env bash
# Runs one test file of tests/helm with node's test runner after checking the tools it
# needs: node, the npm packages of package.json (kubernetes-models, ajv, ...), python3
# with PyYAML and, unless --no-helm, helm (ORCA_HELM, .cache/bin/helm or PATH; all
# installed by scripts/install-deps.sh). A missing tool skips the test (exit 77, ctest
# SKIP_RETURN_CODE) with a message, and fails it when CI=true.
#   tests/helm/run.sh [--no-helm] FILE.test.mjs
set -euo pipefail
cd "$(dirname "$0")/../.."
need_helm=1
if [ "${1:-}" = "--no-helm" ]; then need_helm=0; shift; fi
file=$1

missing() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $1 (CI=true: the chart tests must run in CI; run scripts/install-deps.sh)" >&2
    exit 1
  fi
  echo "SKIP: $1 (run scripts/install-deps.sh)"
  exit 77
}
command -v node >/dev/null 2>&1 || missing "node is not installed"
for pkg in kubernetes-models @kubernetes-models/prometheus-operator @kubernetes-models/keda ajv; do
  [ -f "node_modules/$pkg/package.json" ] || missing "npm package $pkg is not installed in node_modules"
done
python3 -c "import yaml" >/dev/null 2>&1 || missing "python3 with PyYAML (python3-yaml) is not installed"
if [ "$need_helm" = 1 ]; then
  if [ -z "${ORCA_HELM:-}" ]; then
    if [ -x .cache/bin/helm ]; then ORCA_HELM=$PWD/.cache/bin/helm; else ORCA_HELM=$(command -v helm || true); fi
  fi
  if [ -z "$ORCA_HELM" ] || [ ! -x "$ORCA_HELM" ]; then missing "helm is not installed (.cache/bin/helm)"; fi
  export ORCA_HELM
fi
export ORCA_SOURCE_DIR=$PWD
exec node --test --test-concurrency=1 "$file"

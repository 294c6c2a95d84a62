#!/usr/bin/env bash
# Runs the CRD admission check (crd_admission.test.mjs) with node's test runner after
# checking what it needs: node and the npm packages @marcbachmann/cel-js and yaml of
# package.json (scripts/install-deps.sh installs them). A missing one skips the test
# (exit 77, ctest SKIP_RETURN_CODE) with a message, and fails it when CI=true.
set -euo pipefail
cd "$(dirname "$0")/../../.."
missing() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $1 (CI=true: the CRD admission check must run in CI; run scripts/install-deps.sh)" >&2
    exit 1
  fi
  echo "SKIP: $1 (run scripts/install-deps.sh)"
  exit 77
}
command -v node >/dev/null 2>&1 || missing "node is not installed"
for pkg in @marcbachmann/cel-js yaml; do
  [ -f "node_modules/$pkg/package.json" ] || missing "npm package $pkg is not installed in node_modules"
done
exec node --test --test-concurrency=1 tests/controller/crd_admission/crd_admission.test.mjs

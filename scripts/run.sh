#!/usr/bin/env bash
# Installs dependencies, builds the orca binary and runs the main job: generate text
# with a model. With no arguments it writes a small random-weight model
# (models-local/tiny) and generates from it; any arguments are passed to
# `orca generate` (e.g. --model ../shared/models/stories260K --prompt "Once upon a time").
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
ORCA_TARGETS=orca scripts/build.sh
build=${ORCA_BUILD_DIR:-build}
exec "$build/engine/cli/orca" generate --stats "$@"

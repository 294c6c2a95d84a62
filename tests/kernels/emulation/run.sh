#!/bin/sh
# Runs orca's CUDA kernels on the host, without a GPU, against the CPU backend.
#
# A development check, not an acceptance test: each CUDA thread becomes a host thread,
# __syncthreads and warp shuffles become barriers (so warps run in lock-step at every
# shuffle), blocks run one at a time, and every .cu launch is rewritten mechanically.
# It validates indexing, masking and synchronisation structure; it says nothing about
# GPU timing, the memory model or compiler behaviour: the `gpu` ctest label is the
# real check. Slow (about a minute; sizes are kept small). Pass SANITIZE=1 to build
# with ASan/UBSan.
#
# Usage: tests/kernels/emulation/run.sh [BUILD_DIR]   (from the repository root)
set -eu
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${1:-"$root/build-kernel-emulation"}
flags=""
if [ "${SANITIZE:-0}" = 1 ]; then
  flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
fi
python3 "$root/tests/kernels/emulation/transform.py" "$root/kernels" "$build/src/kernels"
cmake -S "$root/tests/kernels/emulation" -B "$build/cmake" -G Ninja -DORCA_ROOT="$root" \
  -DORCA_EMU_KERNELS="$build/src" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$build/cmake"
"$build/cmake/kernel_emulation_check"

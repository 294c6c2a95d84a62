#!/usr/bin/env bash
# Device session 4 (2026-11-29): NCCL operations recorded into CUDA graphs. The gpu tests
# (NcclCommunicatorTest.SingleRankOperationsReplayFromAGraph among them) and stories260K;
# the same test built with the communicator waiting on its event while the stream
# captures (a planted bug: the twin refuses that with cudaErrorCapturedEvent; does the
# GPU?); compute-sanitizer memcheck of the NCCL test.
set -u
cd "$(dirname "$0")/../../.."
root=$PWD
tar -C .gpu -xJf .gpu/bin.tar.xz
out=/tmp/r4
mkdir -p "$out"
timeout 120 scripts/gpu-check.sh --prebuilt .gpu --quick --steps tests,generate --out "$out/check" >/dev/null 2>&1
cat "$out/check/summary.txt"
grep -h "SingleRankOperationsReplayFromAGraph" "$out"/check/*.log | head -3
lib=$root/.gpu/lib
for name in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  f=$(find /usr/local /opt -maxdepth 9 -name "$name" -print -quit 2>/dev/null)
  [ -n "$f" ] && lib="$lib:$(dirname "$f")"
done
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ORCA_REQUIRE_GPU=1
bin=$root/.gpu/bin
timeout 60 "$bin/nccl_communicator_test_planted" --gtest_filter='*Graph*' >"$out/planted.log" 2>&1
echo "planted (waits on its event while capturing): rc $?"
grep -E "OK \]|FAILED \]|cudaError|Failure" "$out/planted.log" | head -8
timeout 90 compute-sanitizer --error-exitcode 9 --tool memcheck "$bin/nccl_communicator_test" >"$out/memcheck.log" 2>&1
echo "memcheck nccl_communicator_test: rc $?; $(grep -E 'ERROR SUMMARY|PASSED' "$out/memcheck.log" | tr '\n' ' ')"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import ctypes; v=ctypes.c_int(); ctypes.CDLL('libnccl.so.2').ncclGetVersion(ctypes.byref(v)); print('NCCL', v.value)" 2>/dev/null
tar -C /tmp -czf "${OUT:-/tmp}/r4.tar.gz" r4

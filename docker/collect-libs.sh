#!/bin/sh
# Copies BINARY to OUT/bin and the shared libraries it needs to OUT/lib, except those
# the runtime base image provides: glibc, and the CUDA driver, runtime, cuBLAS and NCCL
# of the nvidia/cuda runtime image (the driver itself is mounted by the NVIDIA
# container toolkit). Fails when a needed library cannot be found.
#   docker/collect-libs.sh BINARY OUT
set -eu
bin=$1
out=$2
mkdir -p "$out/bin" "$out/lib"
cp "$bin" "$out/bin/"
missing=$(ldd "$bin" | awk '/not found/ {print $1}' | grep -v -E '^lib(cuda|nvidia-)' || true)
if [ -n "$missing" ]; then
  echo "collect-libs: $bin needs libraries that are not installed: $missing" >&2
  exit 1
fi
ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | libresolv.so* | ld-linux*) ;;
    libcuda.so* | libnvidia-* | libcudart.so* | libcublas.so* | libcublasLt.so* | libnccl.so*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
echo "collect-libs: $(basename "$bin") + $(find "$out/lib" -type f | wc -l) libraries"

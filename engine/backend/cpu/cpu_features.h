// What the CPU the process runs on supports, for kernels that pick an AVX2 path at run
// time (the binaries are built for the baseline x86-64 so that they run anywhere).
#pragma once

namespace orca {

inline bool CpuHasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace orca

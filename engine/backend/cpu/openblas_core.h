// Which of OpenBLAS's kernel sets this process runs, and whether it should run another.
//
// Debian's OpenBLAS is built with DYNAMIC_ARCH: when it loads, it reads the CPU's
// family and model and picks a kernel set ("core"). A CPU newer than the library is
// not in its table, and it then falls back to its most generic x86-64 kernels
// ("Prescott", SSE3): on an Emerald Rapids Xeon (family 6, model 207) with Debian 12's
// OpenBLAS 0.3.21 sgemm ran at 66 GFLOP/s on two cores, and at 317 with the SkylakeX
// kernels the CPU can run. OpenBLAS takes the core from OPENBLAS_CORETYPE instead when
// that is set before it loads, which is before main(): the `orca` binary therefore sets
// it and executes itself again (engine/cli/main.cc) when OpenBlasCoreToForce says so.
#pragma once

#include <string>
#include <string_view>

#include "engine/backend/cpu/simd.h"

namespace orca {

// The OPENBLAS_CORETYPE value that makes OpenBLAS use the vectors a CPU of level `cpu`
// has ("SkylakeX" for AVX-512, "Haswell" for AVX2), or "" when `detected` (OpenBLAS's
// own choice, as openblas_get_corename() names it; any case) already does. Cores this
// function does not know count as using neither AVX2 nor AVX-512.
std::string OpenBlasCoreToForce(std::string_view detected, SimdLevel cpu);

// openblas_get_corename() and openblas_get_config() of the loaded library.
std::string OpenBlasCoreName();
std::string OpenBlasConfig();

}  // namespace orca

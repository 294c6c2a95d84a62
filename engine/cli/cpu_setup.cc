#include "engine/cli/cpu_setup.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "engine/backend/cpu/openblas_core.h"
#include "engine/backend/cpu/packed_gemm_amx.h"
#include "engine/backend/cpu/packed_gemm_bf16.h"
#include "engine/backend/cpu/simd.h"

namespace orca {

void RestartIfOpenBlasMisreadsTheCpu(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const std::string detected = OpenBlasCoreName();
  const std::string core = OpenBlasCoreToForce(detected, CpuMaxSimdLevel());
  if (core.empty()) return;
  std::cerr << "orca: OpenBLAS (" << OpenBlasConfig() << ") chose its " << detected
            << " kernels, which leave this CPU's " << SimdLevelName(CpuMaxSimdLevel())
            << " unused; running again with OPENBLAS_CORETYPE=" << core << "\n";
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  execv("/proc/self/exe", argv);
  std::cerr << "orca: could not run again (" << std::strerror(errno) << "); continuing\n";
}

std::string CpuVersionLines() {
  std::string cpu = std::string("cpu: ") + SimdLevelName(CpuMaxSimdLevel());
  if (CpuHasBf16Dots()) {
    const Bf16DotsTiming& t = CpuBf16DotsTiming();
    const Bf16Products by = CpuBf16Products();
    char amx[32] = "";
    if (CpuHasAmxBf16()) std::snprintf(amx, sizeof(amx), ", AMX %.1f us", t.amx_ns / 1e3);
    char note[240];
    std::snprintf(note, sizeof(note),
                  "+bf16%s (bfloat16 weights: %s%s; vdpbf16ps %.1f us%s, widened float32 FMAs "
                  "%.1f us a tile)",
                  CpuHasAmxBf16() ? "+amx" : "",
                  by == Bf16Products::kOff ? "widened to float32" : "bfloat16 products by ",
                  by == Bf16Products::kOff ? "" : Bf16ProductsName(by), t.dots_ns / 1e3, amx,
                  t.widen_ns / 1e3);
    cpu += note;
  }
  return cpu + "\nopenblas: " + OpenBlasConfig() + " (kernels: " + OpenBlasCoreName() + ")\n";
}

}  // namespace orca

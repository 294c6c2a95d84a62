#include "engine/backend/cpu/openblas_core.h"

#include <cblas.h>

#include "absl/strings/ascii.h"

namespace orca {
namespace {

// The widest vectors a core's kernels use. OpenBLAS 0.3.21-0.3.29 name these cores
// (driver/others/dynamic.c: corename[]); Zen and Skylake clients run the Haswell set.
SimdLevel CoreLevel(std::string_view core) {
  const std::string name = absl::AsciiStrToLower(std::string(core));
  if (name == "skylakex" || name == "cooperlake" || name == "sapphirerapids") {
    return SimdLevel::kAvx512;
  }
  if (name == "haswell" || name == "zen") return SimdLevel::kAvx2;
  return SimdLevel::kScalar;
}

}  // namespace

std::string OpenBlasCoreToForce(std::string_view detected, SimdLevel cpu) {
  if (CoreLevel(detected) >= cpu) return "";  // (always so for a CPU without AVX2)
  return cpu == SimdLevel::kAvx512 ? "SkylakeX" : "Haswell";
}

std::string OpenBlasCoreName() {
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "";
}

std::string OpenBlasConfig() {
  const char* config = openblas_get_config();
  return config != nullptr ? config : "";
}

}  // namespace orca

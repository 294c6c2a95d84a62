// OpenBlasCoreToForce: which OpenBLAS kernel set the `orca` binary asks for, given the
// one OpenBLAS chose and the widest vectors of the CPU.
#include "engine/backend/cpu/openblas_core.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/testutil/testutil.h"

namespace orca {
namespace {

TEST(OpenBlasCoreTest, AFallbackCoreIsReplacedByTheCpusWidestKernels) {
  // OpenBLAS 0.3.21 on an Emerald Rapids Xeon (model 207): "Prescott".
  EXPECT_EQ(OpenBlasCoreToForce("Prescott", SimdLevel::kAvx512), "SkylakeX");
  EXPECT_EQ(OpenBlasCoreToForce("Prescott", SimdLevel::kAvx2), "Haswell");
  EXPECT_EQ(OpenBlasCoreToForce("Sandybridge", SimdLevel::kAvx2), "Haswell");
  EXPECT_EQ(OpenBlasCoreToForce("Nehalem", SimdLevel::kAvx512), "SkylakeX");
  EXPECT_EQ(OpenBlasCoreToForce("", SimdLevel::kAvx512), "SkylakeX");
  // An AVX2 core on an AVX-512 CPU (Zen 4 under an OpenBLAS that predates it).
  EXPECT_EQ(OpenBlasCoreToForce("Zen", SimdLevel::kAvx512), "SkylakeX");
  EXPECT_EQ(OpenBlasCoreToForce("Haswell", SimdLevel::kAvx512), "SkylakeX");
}

TEST(OpenBlasCoreTest, ACoreThatUsesTheCpusVectorsIsKept) {
  for (const char* core : {"SkylakeX", "Cooperlake", "SapphireRapids", "skylakex", "COOPERLAKE"}) {
    EXPECT_EQ(OpenBlasCoreToForce(core, SimdLevel::kAvx512), "") << core;
    EXPECT_EQ(OpenBlasCoreToForce(core, SimdLevel::kAvx2), "") << core;
  }
  EXPECT_EQ(OpenBlasCoreToForce("Haswell", SimdLevel::kAvx2), "");
  EXPECT_EQ(OpenBlasCoreToForce("Zen", SimdLevel::kAvx2), "");
  // A CPU without AVX2: whatever OpenBLAS chose stays.
  EXPECT_EQ(OpenBlasCoreToForce("Prescott", SimdLevel::kScalar), "");
  EXPECT_EQ(OpenBlasCoreToForce("Nehalem", SimdLevel::kScalar), "");
}

TEST(OpenBlasCoreTest, TheLoadedLibraryNamesItsCore) {
  EXPECT_FALSE(OpenBlasCoreName().empty());
  EXPECT_NE(OpenBlasConfig().find("OpenBLAS"), std::string::npos) << OpenBlasConfig();
}

// The `orca` binary, started without OPENBLAS_CORETYPE, runs kernels that use this
// CPU's vectors (main.cc runs itself again where OpenBLAS fell back to generic ones).
TEST(OpenBlasCoreTest, TheOrcaBinaryRunsKernelsForThisCpu) {
  const char* bin = std::getenv("ORCA_BIN");
  if (bin == nullptr) {
    if (orca::testing::InCi()) FAIL() << "ORCA_BIN is not set in CI";
    GTEST_SKIP() << "ORCA_BIN is not set";
  }
  std::string out;
  ASSERT_EQ(orca::testing::RunCommand(
                std::string("env -u OPENBLAS_CORETYPE ") + bin + " version 2>&1", &out),
            0)
      << out;
  const std::string key = "(kernels: ";
  const size_t at = out.find(key);
  ASSERT_NE(at, std::string::npos) << out;
  const std::string core = out.substr(at + key.size(), out.find(')', at) - at - key.size());
  EXPECT_EQ(OpenBlasCoreToForce(core, CpuMaxSimdLevel()), "")
      << "the binary runs OpenBLAS's " << core << " kernels on a CPU with "
      << SimdLevelName(CpuMaxSimdLevel()) << ":\n"
      << out;
  // The library this test loaded itself, without the restart, tells whether it had to.
  if (!OpenBlasCoreToForce(OpenBlasCoreName(), CpuMaxSimdLevel()).empty() &&
      std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    EXPECT_NE(out.find("running again with OPENBLAS_CORETYPE="), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace orca

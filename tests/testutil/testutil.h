// Helpers shared by orca's tests: locating test models (the shipped models/stories260K),
// temporary directories, running reference programs.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace orca::testing {

// Returns true when the environment says we run in CI (CI=true).
bool InCi();

// Returns the repository root (ORCA_SOURCE_DIR, set by ctest; else the cwd).
std::string SourceDir();

// Returns the model directory NAME: the repository's models/NAME (stories260K ships
// there), else ../shared/models/NAME beside the repository, else nullopt. Use with
// ORCA_REQUIRE_SHARED_MODEL to skip (or fail under CI=true).
std::optional<std::string> SharedModelDir(const std::string& name);

// Creates a fresh empty temporary directory; removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Runs `command` through /bin/sh; returns its exit code and fills `output` with stdout.
int RunCommand(const std::string& command, std::string* output = nullptr);

// Returns the Debian python3 (which has torch), or "" when unavailable.
std::string ReferencePython();

}  // namespace orca::testing

// Sets `var` to the shared model directory NAME, or skips the test (fails under CI).
#define ORCA_REQUIRE_SHARED_MODEL(var, name)                                     \
  std::string var;                                                               \
  do {                                                                           \
    auto orca_dir_ = ::orca::testing::SharedModelDir(name);                      \
    if (!orca_dir_) {                                                            \
      if (::orca::testing::InCi()) FAIL() << "models/" name " is missing in CI"; \
      GTEST_SKIP() << "models/" name " not found; skipping";                     \
    }                                                                            \
    var = *orca_dir_;                                                            \
  } while (0)

// Skips (or fails under CI) when the PyTorch reference interpreter is unavailable.
#define ORCA_REQUIRE_TORCH(var)                                                            \
  std::string var = ::orca::testing::ReferencePython();                                    \
  do {                                                                                     \
    if (var.empty()) {                                                                     \
      if (::orca::testing::InCi()) FAIL() << "python3 with torch is missing in CI";        \
      GTEST_SKIP() << "python3-torch not installed; skipping the PyTorch reference check"; \
    }                                                                                      \
  } while (0)

// Fuzzes engine.yaml, the strict engine configuration reader (engine/config/
// config_loader.h: ApplyEngineYaml), which every orca process runs on the file
// orca-controller renders.
//
// A file the reader accepts must survive the writer: ToEngineYaml of the result reads
// back (into fresh defaults) to the same engine.yaml, as orca-controller's rendering
// relies on. Validate runs for every role; its verdict is not checked.

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "engine/config/config_loader.h"
#include "engine/config/settings.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  orca::EngineConfig config = orca::DefaultConfig(orca::Role::kScheduler);
  const std::string text = orca::fuzz::AsString(data, size);
  if (!orca::ApplyEngineYaml(text, "engine.yaml", config).ok()) return 0;
  for (orca::Role role :
       {orca::Role::kServe, orca::Role::kScheduler, orca::Role::kWorker, orca::Role::kGenerate}) {
    (void)orca::Validate(config, role);
  }
  auto written = orca::ToEngineYaml(config);
  if (!written.ok()) __builtin_trap();
  orca::EngineConfig again = orca::DefaultConfig(orca::Role::kScheduler);
  absl::Status read_back = orca::ApplyEngineYaml(*written, "written engine.yaml", again);
  auto rewritten = orca::ToEngineYaml(again);
  if (!read_back.ok() || !rewritten.ok() || *rewritten != *written) {
    std::fprintf(stderr, "engine.yaml does not round-trip: %s\nwritten:\n%s\n",
                 std::string(read_back.message()).c_str(), written->c_str());
    __builtin_trap();
  }
  return 0;
}

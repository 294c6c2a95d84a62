// Fuzzes the controller's YAML layer (controller/api/yaml.h): ParseYamlDocuments (YAML
// 1.2 core-schema scalars over yaml-cpp) and its writer, ToYamlDocuments.
//
// The contract checked besides "no crash, no hang": documents that parse survive the
// writer, ToYamlDocuments' output parses back to the same JSON (the writer quotes every
// string a plain scalar would turn into another type).

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "controller/api/yaml.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto docs = orca::controller::ParseYamlDocuments(orca::fuzz::AsString(data, size), "in.yaml");
  if (!docs.ok()) {
    if (docs.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  const std::string written = orca::controller::ToYamlDocuments(*docs);
  auto again = orca::controller::ParseYamlDocuments(written, "written.yaml");
  if (!again.ok() || *again != *docs) {
    std::fprintf(stderr, "YAML does not round-trip: %s\nwritten:\n%s\n",
                 again.ok() ? "documents differ" : std::string(again.status().message()).c_str(),
                 written.c_str());
    __builtin_trap();
  }
  return 0;
}

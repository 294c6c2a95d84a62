#include "engine/cli/engine_config.h"

#include <yaml-cpp/yaml.h>

#include <exception>

#include "absl/strings/str_cat.h"

namespace orca {
namespace {

struct Mapping {
  const char* section;
  const char* key;
  const char* flag;
  enum Kind { kString, kInt, kDouble, kNegatedBool } kind;
};

// config key -> flag. Booleans that the flags spell as "no-..." are negated.
constexpr Mapping kMappings[] = {
    {"model", "name", "served-model-name", Mapping::kString},
    {"model", "dir", "model", Mapping::kString},
    {"parallelism", "tensor", "tensor-parallel", Mapping::kInt},
    {"parallelism", "pipeline", "pipeline-parallel", Mapping::kInt},
    {"parallelism", "gpus_per_pod", "gpus-per-pod", Mapping::kInt},
    {"parallelism", "device", "device", Mapping::kString},
    {"engine", "max_batch_size", "max-batch-size", Mapping::kInt},
    {"engine", "max_batched_tokens", "max-batched-tokens", Mapping::kInt},
    {"engine", "kv_policy", "kv-policy", Mapping::kString},
    {"engine", "block_size", "block-size", Mapping::kInt},
    {"engine", "chunked_prefill", "no-chunked-prefill", Mapping::kNegatedBool},
    {"engine", "prefix_caching", "no-prefix-caching", Mapping::kNegatedBool},
    {"engine", "memory_fraction", "gpu-memory-fraction", Mapping::kDouble},
    {"engine", "scheduling_policy", "policy", Mapping::kString},
};

}  // namespace

absl::Status ApplyEngineConfig(const std::string& path, Flags& flags) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  if (!root.IsMap()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a YAML mapping"));
  for (const Mapping& m : kMappings) {
    if (!flags.Has(m.flag)) continue;
    const YAML::Node section = root[m.section];
    if (!section || !section.IsMap()) continue;
    const YAML::Node v = section[m.key];
    if (!v || v.IsNull()) continue;
    const std::string where = absl::StrCat(path, ": ", m.section, ".", m.key);
    if (!v.IsScalar()) return absl::InvalidArgumentError(absl::StrCat(where, " must be a scalar"));
    try {
      switch (m.kind) {
        case Mapping::kString:
          flags.SetIfUnset(m.flag, v.as<std::string>());
          break;
        case Mapping::kInt:
          flags.SetIfUnset(m.flag, std::to_string(v.as<int64_t>()));
          break;
        case Mapping::kDouble:
          flags.SetIfUnset(m.flag, absl::StrCat(v.as<double>()));
          break;
        case Mapping::kNegatedBool:
          flags.SetIfUnset(m.flag, v.as<bool>() ? "false" : "true");
          break;
      }
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": '", v.Scalar(), "' is not a valid value"));
    }
  }
  return absl::OkStatus();
}

}  // namespace orca

// Checkpoint: the weight tensors of a Hugging Face checkpoint directory, from
// model.safetensors or the shards listed in model.safetensors.index.json, checked
// against the directory's config.json when opened (checkpoint_layout.h). Every accessor
// validates names, dtypes and shapes; errors name the file and the tensor. Immutable
// after Open(); safe for concurrent reads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/safetensors.h"

namespace orca {

class Checkpoint {
 public:
  // Opens the safetensors file(s) in `dir` and checks that they hold the model
  // `dir`/config.json describes (CheckCheckpointLayout) before anything is allocated
  // for it. Fails naming the file (and the key or tensor) when a file is malformed,
  // config.json is unreadable or out of bounds, or the tensors do not match it.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& dir);

  bool Has(const std::string& name) const;
  // Returns the tensor `name` whatever its dtype and shape, or nullptr.
  const HostTensorView* Find(const std::string& name) const;
  // Returns the path of the file holding tensor `name` ("" when there is none).
  std::string FileOf(const std::string& name) const;
  // Every tensor, by name.
  const std::map<std::string, const HostTensorView*>& tensors() const { return tensors_; }
  // Returns the float tensor `name` with exactly `shape`; fails (naming file and
  // tensor) when it is missing, not F32/F16/BF16, or shaped differently.
  absl::StatusOr<const HostTensorView*> Get(const std::string& name,
                                            const std::vector<int64_t>& shape) const;
  // Names of the files that were opened, for messages.
  std::string Describe() const;

 private:
  Checkpoint() = default;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const HostTensorView*> tensors_;
  std::map<std::string, const SafetensorsFile*> owner_;
  std::string dir_;
};

}  // namespace orca

#include "engine/model/checkpoint.h"

#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/model/checkpoint_layout.h"
#include "engine/model/model_config.h"

namespace orca {

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir) {
  auto ckpt = std::unique_ptr<Checkpoint>(new Checkpoint());
  ckpt->dir_ = dir;
  std::vector<std::string> shard_names;
  std::string index_path = JoinPath(dir, "model.safetensors.index.json");
  std::string single_path = JoinPath(dir, "model.safetensors");
  std::map<std::string, std::string> weight_map;
  if (FileExists(index_path)) {
    ORCA_ASSIGN_OR_RETURN(std::string text, ReadFile(index_path));
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
        !j["weight_map"].is_object()) {
      return absl::DataLossError(
          absl::StrCat(index_path, ": expected an object with 'weight_map'"));
    }
    std::set<std::string> unique;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) {
        return absl::DataLossError(
            absl::StrCat(index_path, ": weight_map['", it.key(), "'] is not a file name"));
      }
      std::string file = it.value().get<std::string>();
      if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..") {
        return absl::DataLossError(
            absl::StrCat(index_path, ": shard name '", file, "' is not a plain file name"));
      }
      weight_map[it.key()] = file;
      unique.insert(file);
    }
    shard_names.assign(unique.begin(), unique.end());
  } else if (FileExists(single_path)) {
    shard_names.push_back("model.safetensors");
  } else {
    return absl::NotFoundError(absl::StrCat(
        dir,
        ": no model.safetensors or model.safetensors.index.json (only safetensors checkpoints "
        "are supported)"));
  }
  for (const std::string& shard : shard_names) {
    ORCA_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(JoinPath(dir, shard)));
    for (const auto& [name, view] : file->tensors()) {
      if (!weight_map.empty()) {
        auto it = weight_map.find(name);
        if (it == weight_map.end() || it->second != shard) continue;  // index decides
      }
      if (ckpt->tensors_.count(name)) {
        return absl::DataLossError(absl::StrCat(file->path(), ": tensor '", name,
                                                "' also appears in ", ckpt->owner_[name]->path()));
      }
      ckpt->tensors_[name] = &view;
      ckpt->owner_[name] = file.get();
    }
    ckpt->files_.push_back(std::move(file));
  }
  for (const auto& [name, shard] : weight_map) {
    if (!ckpt->tensors_.count(name)) {
      return absl::DataLossError(absl::StrCat(index_path, ": tensor '", name, "' is listed for ",
                                              shard, " but that file does not contain it"));
    }
  }
  // Only the headers have been read (the files are mapped): check the configuration
  // against them before anyone allocates what it describes.
  ORCA_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(dir));
  ORCA_RETURN_IF_ERROR(CheckCheckpointLayout(config, JoinPath(dir, "config.json"), *ckpt));
  return ckpt;
}

bool Checkpoint::Has(const std::string& name) const { return tensors_.count(name) > 0; }

const HostTensorView* Checkpoint::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : it->second;
}

std::string Checkpoint::FileOf(const std::string& name) const {
  auto it = owner_.find(name);
  return it == owner_.end() ? std::string() : it->second->path();
}

std::string Checkpoint::Describe() const {
  std::vector<std::string> paths;
  for (const auto& f : files_) paths.push_back(f->path());
  return absl::StrJoin(paths, ", ");
}

absl::StatusOr<const HostTensorView*> Checkpoint::Get(const std::string& name,
                                                      const std::vector<int64_t>& shape) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    return absl::NotFoundError(absl::StrCat(Describe(), ": missing tensor '", name, "'"));
  }
  const HostTensorView* t = it->second;
  const std::string& file = owner_.at(name)->path();
  if (!t->float_dtype) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": tensor '", name, "' has dtype ",
                                                   t->dtype_name,
                                                   "; weights must be F32, F16 or BF16"));
  }
  if (t->shape != shape) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": tensor '", name, "' has shape [",
                                                   absl::StrJoin(t->shape, ","), "], expected [",
                                                   absl::StrJoin(shape, ","), "]"));
  }
  return t;
}

}  // namespace orca

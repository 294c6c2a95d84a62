// The Hugging Face Hub's JSON answers that `orca model pull` reads, and the choice of
// the files a checkpoint needs:
//   GET /api/models/{repo}/revision/{revision}  -> {"sha": "<commit>", ...}
//   GET /api/models/{repo}/tree/{commit}?recursive=true
//     -> [{"type": "file", "path": "...", "size": N, "oid": "<git sha1>",
//          "lfs": {"oid": "<sha256>", "size": N, ...}}, {"type": "directory", ...}]
// Parsers never throw; every malformed answer is an error naming the field. Pure
// functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace orca {

struct HubFile {
  std::string path;    // relative, checked with CheckRelativePath
  int64_t size = 0;    // bytes
  std::string sha256;  // lowercase hex from lfs.oid; empty when the hub publishes none
};

// Returns the commit a revision resolves to (the "sha" of a revision answer). Fails
// with InvalidArgument when `json` is not an object holding a 40-hex "sha".
absl::StatusOr<std::string> ParseHubRevision(absl::string_view json);

// Returns the files of one tree answer, directories dropped. Fails with InvalidArgument
// when `json` is not an array of objects, an entry lacks a string "path" and "type", a
// file's "size" is not a non-negative integer, an "lfs" object's "oid" is not 64 hex
// digits or its size disagrees, or a path is unsafe (absolute, "..", ...).
absl::StatusOr<std::vector<HubFile>> ParseHubTree(absl::string_view json);

// Which files to fetch. Globs are fnmatch(3) patterns matched against the whole path
// ('*' also matches '/'). With no include globs the default checkpoint selection
// applies: top-level *.json, *.safetensors, tokenizer.model, *.tiktoken, vocab.txt,
// merges.txt; pytorch *.bin weights only when the repository has no *.safetensors.
struct FileFilter {
  std::vector<std::string> include;
  std::vector<std::string> exclude;
};

// Returns the files of `files` that `filter` selects, in their listed order.
std::vector<HubFile> SelectCheckpointFiles(const std::vector<HubFile>& files,
                                           const FileFilter& filter);

// Splits a comma-separated list of globs ("*.json,*.safetensors"), dropping empties.
std::vector<std::string> SplitGlobs(absl::string_view list);

}  // namespace orca

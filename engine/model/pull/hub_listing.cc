#include "engine/model/pull/hub_listing.h"

#include <fnmatch.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/model/pull/safe_path.h"
#include "nlohmann/json.hpp"

namespace orca {
namespace {

using nlohmann::json;

bool IsHex(absl::string_view s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!absl::ascii_isxdigit(c)) return false;
  return true;
}

absl::StatusOr<json> ParseJson(absl::string_view text, absl::string_view what) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat("the hub's ", what, " answer is not JSON"));
  }
  return j;
}

bool Matches(const std::string& glob, const std::string& path) {
  return fnmatch(glob.c_str(), path.c_str(), 0) == 0;
}

bool AnyMatch(const std::vector<std::string>& globs, const std::string& path) {
  for (const auto& g : globs)
    if (Matches(g, path)) return true;
  return false;
}

bool DefaultSelected(const std::string& path, bool has_safetensors) {
  if (absl::StrContains(path, '/')) return false;  // top level only
  static const std::vector<std::string> kAlways = {"*.json",     "*.safetensors", "tokenizer.model",
                                                   "*.tiktoken", "vocab.txt",     "merges.txt"};
  if (AnyMatch(kAlways, path)) return true;
  return !has_safetensors && Matches("*.bin", path);
}

}  // namespace

absl::StatusOr<std::string> ParseHubRevision(absl::string_view text) {
  auto j = ParseJson(text, "revision");
  if (!j.ok()) return j.status();
  if (!j->is_object() || !j->contains("sha") || !(*j)["sha"].is_string()) {
    return absl::InvalidArgumentError("the hub's revision answer has no string \"sha\"");
  }
  std::string sha = (*j)["sha"].get<std::string>();
  if (!IsHex(sha, 40)) {
    return absl::InvalidArgumentError(absl::StrCat("the hub's revision answer has \"sha\" '",
                                                   absl::CHexEscape(sha.substr(0, 80)),
                                                   "', not a 40-hex-digit commit"));
  }
  return absl::AsciiStrToLower(sha);
}

absl::StatusOr<std::vector<HubFile>> ParseHubTree(absl::string_view text) {
  auto j = ParseJson(text, "tree listing");
  if (!j.ok()) return j.status();
  if (!j->is_array()) return absl::InvalidArgumentError("the hub's tree listing is not an array");
  std::vector<HubFile> files;
  for (size_t i = 0; i < j->size(); ++i) {
    const json& e = (*j)[i];
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("the hub's tree listing, entry ", i, ": ", why));
    };
    if (!e.is_object()) return bad("not an object");
    if (!e.contains("type") || !e["type"].is_string()) return bad("no string \"type\"");
    if (!e.contains("path") || !e["path"].is_string()) return bad("no string \"path\"");
    std::string path = e["path"].get<std::string>();
    if (auto s = CheckRelativePath(path); !s.ok()) return bad(s.message());
    std::string type = e["type"].get<std::string>();
    if (type == "directory") continue;
    if (type != "file") return bad(absl::StrCat("'", path, "' has unknown type '", type, "'"));
    HubFile f;
    f.path = path;
    if (!e.contains("size") || !e["size"].is_number_integer() || e["size"].get<int64_t>() < 0) {
      return bad(absl::StrCat("'", path, "' has no non-negative integer \"size\""));
    }
    f.size = e["size"].get<int64_t>();
    if (e.contains("lfs") && !e["lfs"].is_null()) {
      const json& lfs = e["lfs"];
      if (!lfs.is_object() || !lfs.contains("oid") || !lfs["oid"].is_string() ||
          !IsHex(lfs["oid"].get<std::string>(), 64)) {
        return bad(absl::StrCat("'", path, "' has an \"lfs\" without a 64-hex-digit \"oid\""));
      }
      f.sha256 = absl::AsciiStrToLower(lfs["oid"].get<std::string>());
      if (lfs.contains("size") &&
          (!lfs["size"].is_number_integer() || lfs["size"].get<int64_t>() != f.size)) {
        return bad(absl::StrCat("'", path, "' has lfs.size different from size"));
      }
    }
    files.push_back(std::move(f));
  }
  return files;
}

std::vector<HubFile> SelectCheckpointFiles(const std::vector<HubFile>& files,
                                           const FileFilter& filter) {
  bool has_safetensors = false;
  for (const auto& f : files) {
    if (!absl::StrContains(f.path, '/') && absl::EndsWith(f.path, ".safetensors"))
      has_safetensors = true;
  }
  std::vector<HubFile> out;
  for (const auto& f : files) {
    bool in = filter.include.empty() ? DefaultSelected(f.path, has_safetensors)
                                     : AnyMatch(filter.include, f.path);
    if (in && !AnyMatch(filter.exclude, f.path)) out.push_back(f);
  }
  return out;
}

std::vector<std::string> SplitGlobs(absl::string_view list) {
  std::vector<std::string> out;
  for (absl::string_view g : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(g));
  }
  return out;
}

}  // namespace orca

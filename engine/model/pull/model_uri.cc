#include "engine/model/pull/model_uri.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace orca {
namespace {

constexpr size_t kMaxUriBytes = 2048;
constexpr size_t kMaxRepoPart = 96;
constexpr size_t kMaxRevision = 256;

absl::Status Bad(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("model URI '", absl::CHexEscape(text), "': ", why,
                                                 " (expected hf://ORG/NAME[@REVISION] or "
                                                 "https://HOST/PATH.tar[.gz] or .tgz)"));
}

bool RepoChar(char c) { return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.'; }

// The hub's rule for a user, organisation or repository name.
bool ValidRepoPart(absl::string_view p) {
  if (p.empty() || p.size() > kMaxRepoPart) return false;
  for (char c : p)
    if (!RepoChar(c)) return false;
  if (absl::StrContains(p, "..") || absl::StrContains(p, "--")) return false;
  if (p.front() == '-' || p.front() == '.' || p.back() == '-' || p.back() == '.') return false;
  return true;
}

bool ValidRevision(absl::string_view r) {
  if (r.empty() || r.size() > kMaxRevision) return false;
  if (r.front() == '/' || r.back() == '/' || absl::StrContains(r, "..") ||
      absl::StrContains(r, "//"))
    return false;
  for (char c : r) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.' && c != '/') return false;
  }
  return true;
}

absl::StatusOr<ModelUri> ParseHub(absl::string_view text, absl::string_view rest) {
  ModelUri u;
  u.kind = ModelUri::Kind::kHub;
  u.text = std::string(text);
  u.revision = "main";
  absl::string_view repo = rest;
  if (size_t at = rest.find('@'); at != absl::string_view::npos) {
    repo = rest.substr(0, at);
    absl::string_view rev = rest.substr(at + 1);
    if (!ValidRevision(rev)) {
      return Bad(text,
                 "the revision after '@' must be a branch, tag, commit or refs/pr/N "
                 "of [A-Za-z0-9._/-]");
    }
    u.revision = std::string(rev);
  }
  std::vector<absl::string_view> parts = absl::StrSplit(repo, '/');
  if (parts.size() != 2) return Bad(text, "the repository must be ORG/NAME");
  for (absl::string_view p : parts) {
    if (!ValidRepoPart(p)) {
      return Bad(text, absl::StrFormat("'%s' is not a valid organisation or model name "
                                       "([A-Za-z0-9._-], at most %d characters, no '..' or '--')",
                                       absl::CHexEscape(p), kMaxRepoPart));
    }
  }
  u.repo = std::string(repo);
  return u;
}

absl::StatusOr<ModelUri> ParseArchive(absl::string_view text, absl::string_view rest) {
  size_t slash = rest.find('/');
  absl::string_view host = rest.substr(0, slash);
  if (host.empty()) return Bad(text, "the URL has no host");
  if (slash == absl::string_view::npos) return Bad(text, "the URL has no path");
  absl::string_view path = rest.substr(slash);
  path = path.substr(0, path.find_first_of("?#"));
  if (!absl::EndsWith(path, ".tar") && !absl::EndsWith(path, ".tar.gz") &&
      !absl::EndsWith(path, ".tgz")) {
    return Bad(text, "an archive URL's path must end in .tar, .tar.gz or .tgz");
  }
  ModelUri u;
  u.kind = ModelUri::Kind::kArchive;
  u.text = std::string(text);
  u.url = std::string(text);
  return u;
}

}  // namespace

absl::StatusOr<ModelUri> ParseModelUri(absl::string_view text) {
  if (text.empty()) return Bad(text, "empty");
  if (text.size() > kMaxUriBytes) return Bad(text.substr(0, 64), "longer than 2048 bytes");
  for (unsigned char c : text) {
    if (c <= 0x20 || c >= 0x7f) return Bad(text, "contains whitespace or a non-ASCII character");
  }
  if (absl::StartsWith(text, "hf://")) return ParseHub(text, text.substr(5));
  if (absl::StartsWith(text, "https://")) return ParseArchive(text, text.substr(8));
  if (absl::StartsWith(text, "http://")) return ParseArchive(text, text.substr(7));
  return Bad(text, "unknown scheme");
}

std::string EncodePathSegment(absl::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += absl::StrFormat("%%%02X", c);
    }
  }
  return out;
}

}  // namespace orca

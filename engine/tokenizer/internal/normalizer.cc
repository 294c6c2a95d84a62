#include "engine/tokenizer/internal/normalizer.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/internal/unicode.h"

namespace orca::tokenizer_internal {
namespace {

using nlohmann::json;

absl::Status Malformed(const std::string& file, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": normalizer: ", what));
}

}  // namespace

absl::StatusOr<Normalizer> Normalizer::FromJson(const json& config, const std::string& file) {
  Normalizer n;
  if (!config.is_null()) ORCA_RETURN_IF_ERROR(Add(config, file, &n.steps_));
  return n;
}

absl::Status Normalizer::Add(const json& config, const std::string& file,
                             std::vector<Step>* steps) {
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
    return Malformed(file, "expected an object with a \"type\"");
  }
  const std::string type = config["type"].get<std::string>();
  if (type == "Sequence") {
    if (!config.contains("normalizers") || !config["normalizers"].is_array()) {
      return Malformed(file, "Sequence without a \"normalizers\" array");
    }
    for (const json& child : config["normalizers"]) ORCA_RETURN_IF_ERROR(Add(child, file, steps));
  } else if (type == "Prepend") {
    if (!config.contains("prepend") || !config["prepend"].is_string()) {
      return Malformed(file, "Prepend without a \"prepend\" string");
    }
    steps->push_back({Step::Kind::kPrepend, "", config["prepend"].get<std::string>()});
  } else if (type == "Replace") {
    if (!config.contains("pattern") || !config["pattern"].is_object() ||
        !config["pattern"].contains("String") || !config["pattern"]["String"].is_string() ||
        !config.contains("content") || !config["content"].is_string()) {
      return absl::UnimplementedError(absl::StrCat(
          file, ": normalizer: only Replace with a {\"String\": ...} pattern is supported"));
    }
    std::string from = config["pattern"]["String"].get<std::string>();
    if (from.empty()) return Malformed(file, "Replace with an empty pattern");
    steps->push_back({Step::Kind::kReplace, std::move(from), config["content"].get<std::string>()});
  } else if (type == "Strip") {
    Step step{Step::Kind::kStrip, "", ""};
    step.left = config.contains("strip_left") && config["strip_left"] == true;
    step.right = config.contains("strip_right") && config["strip_right"] == true;
    steps->push_back(step);
  } else if (type == "NFC") {
    // Identity: see the header.
  } else {
    return absl::UnimplementedError(
        absl::StrCat(file, ": normalizer type \"", type, "\" is not supported"));
  }
  return absl::OkStatus();
}

std::string Normalizer::Apply(std::string_view text) const {
  std::string s(text);
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::Kind::kPrepend:
        if (!s.empty()) s.insert(0, step.to);
        break;
      case Step::Kind::kReplace:
        s = absl::StrReplaceAll(s, {{step.from, step.to}});
        break;
      case Step::Kind::kStrip: {
        size_t begin = 0, end = s.size();
        if (step.left) {
          while (begin < end) {
            const Utf8Char c = DecodeUtf8(s, begin);
            if (!c.valid || !IsWhitespace(c.code_point)) break;
            begin += c.length;
          }
        }
        if (step.right) {
          // Whitespace characters are ASCII or multi-byte; scan back to a lead byte.
          while (end > begin) {
            size_t start = end - 1;
            while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) {
              --start;
            }
            const Utf8Char c = DecodeUtf8(s, start);
            if (!c.valid || start + c.length != end || !IsWhitespace(c.code_point)) break;
            end = start;
          }
        }
        s = s.substr(begin, end - begin);
        break;
      }
    }
  }
  return s;
}

}  // namespace orca::tokenizer_internal

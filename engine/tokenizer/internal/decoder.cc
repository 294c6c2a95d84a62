#include "engine/tokenizer/internal/decoder.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/internal/byte_level.h"
#include "engine/tokenizer/internal/unicode.h"

namespace orca::tokenizer_internal {
namespace {

using nlohmann::json;

absl::Status Malformed(const std::string& file, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": decoder: ", what));
}

size_t SizeField(const json& config, const char* key) {
  return config.contains(key) && config[key].is_number_unsigned() ? config[key].get<size_t>() : 0;
}

}  // namespace

absl::StatusOr<Decoder> Decoder::FromJson(const json& config, const std::string& file) {
  Decoder d;
  if (!config.is_null()) {
    d.has_decoder_ = true;
    ORCA_RETURN_IF_ERROR(Add(config, file, &d.steps_));
  }
  return d;
}

absl::Status Decoder::Add(const json& config, const std::string& file, std::vector<Step>* steps) {
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
    return Malformed(file, "expected an object with a \"type\"");
  }
  const std::string type = config["type"].get<std::string>();
  Step step;
  if (type == "Sequence") {
    if (!config.contains("decoders") || !config["decoders"].is_array()) {
      return Malformed(file, "Sequence without a \"decoders\" array");
    }
    for (const json& child : config["decoders"]) ORCA_RETURN_IF_ERROR(Add(child, file, steps));
    return absl::OkStatus();
  } else if (type == "ByteLevel") {
    step.kind = Step::Kind::kByteLevel;
  } else if (type == "Replace") {
    if (!config.contains("pattern") || !config["pattern"].is_object() ||
        !config["pattern"].contains("String") || !config["pattern"]["String"].is_string() ||
        !config.contains("content") || !config["content"].is_string()) {
      return absl::UnimplementedError(absl::StrCat(
          file, ": decoder: only Replace with a {\"String\": ...} pattern is supported"));
    }
    step.kind = Step::Kind::kReplace;
    step.from = config["pattern"]["String"].get<std::string>();
    step.to = config["content"].get<std::string>();
    if (step.from.empty()) return Malformed(file, "Replace with an empty pattern");
  } else if (type == "ByteFallback") {
    step.kind = Step::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = Step::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = Step::Kind::kStrip;
    if (!config.contains("content") || !config["content"].is_string()) {
      return Malformed(file, "Strip without a \"content\" string");
    }
    step.content = config["content"].get<std::string>();
    step.start = SizeField(config, "start");
    step.stop = SizeField(config, "stop");
  } else if (type == "Metaspace") {
    step.kind = Step::Kind::kMetaspace;
    step.from = config.contains("replacement") && config["replacement"].is_string()
                    ? config["replacement"].get<std::string>()
                    : "\xE2\x96\x81";
    if (step.from.empty()) return Malformed(file, "Metaspace with empty replacement");
    if (config.contains("prepend_scheme") && config["prepend_scheme"].is_string()) {
      step.prepend = config["prepend_scheme"] != "never";
    } else {
      step.prepend = !config.contains("add_prefix_space") || config["add_prefix_space"] != false;
    }
  } else {
    return absl::UnimplementedError(
        absl::StrCat(file, ": decoder type \"", type, "\" is not supported"));
  }
  steps->push_back(std::move(step));
  return absl::OkStatus();
}

std::string Decoder::Decode(std::vector<std::string> tokens, bool repair) const {
  if (!has_decoder_) {
    std::string joined = absl::StrJoin(tokens, " ");
    return repair ? ToValidUtf8(joined) : joined;
  }
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::Kind::kByteLevel: {
        std::string bytes;
        for (const std::string& token : tokens) {
          std::optional<std::string> raw = UnicodeToBytes(token);
          bytes += raw.has_value() ? *raw : token;
        }
        tokens.assign(1, std::move(bytes));
        break;
      }
      case Step::Kind::kReplace:
        for (std::string& token : tokens)
          token = absl::StrReplaceAll(token, {{step.from, step.to}});
        break;
      case Step::Kind::kByteFallback: {
        // Runs of <0xNN> tokens become one token of raw bytes.
        std::vector<std::string> out;
        out.reserve(tokens.size());
        bool in_run = false;
        for (std::string& token : tokens) {
          const int byte = ParseByteToken(token);
          if (byte < 0) {
            out.push_back(std::move(token));
            in_run = false;
            continue;
          }
          if (!in_run) out.emplace_back();
          out.back().push_back(static_cast<char>(byte));
          in_run = true;
        }
        tokens = std::move(out);
        break;
      }
      case Step::Kind::kFuse:
        tokens.assign(1, absl::StrJoin(tokens, ""));
        break;
      case Step::Kind::kStrip:
        for (std::string& token : tokens) {
          size_t begin = 0, end = token.size();
          for (size_t i = 0;
               i < step.start && token.compare(begin, step.content.size(), step.content) == 0;
               ++i) {
            begin += step.content.size();
          }
          for (size_t i = 0;
               i < step.stop && end >= begin + step.content.size() &&
               token.compare(end - step.content.size(), step.content.size(), step.content) == 0;
               ++i) {
            end -= step.content.size();
          }
          token = token.substr(begin, end - begin);
        }
        break;
      case Step::Kind::kMetaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          // As in Hugging Face, the first token loses every replacement character.
          const char* space = i == 0 && step.prepend ? "" : " ";
          tokens[i] = absl::StrReplaceAll(tokens[i], {{step.from, space}});
        }
        break;
    }
  }
  std::string joined = absl::StrJoin(tokens, "");
  return repair ? ToValidUtf8(joined) : joined;
}

}  // namespace orca::tokenizer_internal

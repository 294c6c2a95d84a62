#include "engine/tokenizer/internal/pre_tokenizer.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/internal/byte_level.h"

namespace orca::tokenizer_internal {
namespace {

using nlohmann::json;

absl::Status Malformed(const std::string& file, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": pre_tokenizer: ", what));
}

bool BoolField(const json& config, const char* key, bool fallback) {
  return config.contains(key) && config[key].is_boolean() ? config[key].get<bool>() : fallback;
}

// Splits `word` before each run of `delimiter`s, keeping the run with the text after it
// (Hugging Face's MergedWithNext behaviour).
void SplitMergedWithNext(const std::string& word, const std::string& delimiter,
                         std::vector<std::string>* out) {
  size_t piece_start = 0;
  size_t pos = 0;
  bool previous_was_delimiter = false;
  while (pos < word.size()) {
    if (word.compare(pos, delimiter.size(), delimiter) == 0) {
      if (!previous_was_delimiter && pos > piece_start) {
        out->push_back(word.substr(piece_start, pos - piece_start));
        piece_start = pos;
      }
      previous_was_delimiter = true;
      pos += delimiter.size();
    } else {
      previous_was_delimiter = false;
      ++pos;
    }
  }
  if (pos > piece_start) out->push_back(word.substr(piece_start));
}

}  // namespace

absl::StatusOr<PreTokenizer> PreTokenizer::FromJson(const json& config, const std::string& file) {
  PreTokenizer p;
  if (!config.is_null()) ORCA_RETURN_IF_ERROR(Add(config, file, &p.steps_));
  return p;
}

absl::Status PreTokenizer::Add(const json& config, const std::string& file,
                               std::vector<Step>* steps) {
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
    return Malformed(file, "expected an object with a \"type\"");
  }
  const std::string type = config["type"].get<std::string>();
  Step step;
  if (type == "Sequence") {
    if (!config.contains("pretokenizers") || !config["pretokenizers"].is_array()) {
      return Malformed(file, "Sequence without a \"pretokenizers\" array");
    }
    for (const json& child : config["pretokenizers"]) {
      ORCA_RETURN_IF_ERROR(Add(child, file, steps));
    }
    return absl::OkStatus();
  } else if (type == "ByteLevel") {
    step.kind = Step::Kind::kByteLevel;
    step.add_prefix_space = BoolField(config, "add_prefix_space", false);
    step.use_regex = BoolField(config, "use_regex", true);
  } else if (type == "Split") {
    step.kind = Step::Kind::kSplit;
    if (!config.contains("pattern") || !config["pattern"].is_object() ||
        !config["pattern"].contains("Regex") || !config["pattern"]["Regex"].is_string()) {
      return absl::UnimplementedError(
          absl::StrCat(file,
                       ": pre_tokenizer: only Split with a {\"Regex\": ...} pattern "
                       "is supported"));
    }
    const std::string regex = config["pattern"]["Regex"].get<std::string>();
    std::optional<SplitPattern> pattern = RecognizeSplitPattern(regex);
    if (!pattern.has_value()) {
      return absl::UnimplementedError(absl::StrCat(
          file,
          ": pre_tokenizer: Split regex is not one orca knows (GPT-2, Llama-3 or Qwen2 "
          "pattern expected): ",
          regex));
    }
    step.pattern = *pattern;
    const std::string behavior = config.contains("behavior") && config["behavior"].is_string()
                                     ? config["behavior"].get<std::string>()
                                     : "Isolated";
    if (behavior != "Isolated" || BoolField(config, "invert", false)) {
      return absl::UnimplementedError(
          absl::StrCat(file,
                       ": pre_tokenizer: Split supports only behavior \"Isolated\" "
                       "without invert, not \"",
                       behavior, "\""));
    }
  } else if (type == "Metaspace") {
    step.kind = Step::Kind::kMetaspace;
    step.replacement = config.contains("replacement") && config["replacement"].is_string()
                           ? config["replacement"].get<std::string>()
                           : "\xE2\x96\x81";  // U+2581
    if (step.replacement.empty()) return Malformed(file, "Metaspace with empty replacement");
    step.split = BoolField(config, "split", true);
    if (config.contains("prepend_scheme") && config["prepend_scheme"].is_string()) {
      const std::string scheme = config["prepend_scheme"].get<std::string>();
      if (scheme == "always") {
        step.prepend = Step::Prepend::kAlways;
      } else if (scheme == "first") {
        step.prepend = Step::Prepend::kFirst;
      } else if (scheme == "never") {
        step.prepend = Step::Prepend::kNever;
      } else {
        return Malformed(file, absl::StrCat("unknown Metaspace prepend_scheme \"", scheme, "\""));
      }
    } else {
      step.prepend = BoolField(config, "add_prefix_space", true) ? Step::Prepend::kAlways
                                                                 : Step::Prepend::kNever;
    }
  } else {
    return absl::UnimplementedError(
        absl::StrCat(file, ": pre_tokenizer type \"", type, "\" is not supported"));
  }
  steps->push_back(std::move(step));
  return absl::OkStatus();
}

bool PreTokenizer::byte_level() const {
  for (const Step& step : steps_) {
    if (step.kind == Step::Kind::kByteLevel) return true;
  }
  return false;
}

std::vector<std::string> PreTokenizer::Apply(std::string_view text, bool at_text_start) const {
  std::vector<std::string> words;
  if (text.empty()) return words;
  words.emplace_back(text);
  for (const Step& step : steps_) {
    std::vector<std::string> next;
    next.reserve(words.size());
    for (size_t w = 0; w < words.size(); ++w) {
      std::string word = std::move(words[w]);
      switch (step.kind) {
        case Step::Kind::kByteLevel: {
          if (step.add_prefix_space && word[0] != ' ') word.insert(0, " ");
          if (step.use_regex) {
            for (std::string_view piece : SplitByPattern(SplitPattern::kGpt2, word)) {
              next.push_back(BytesToUnicode(piece));
            }
          } else {
            next.push_back(BytesToUnicode(word));
          }
          break;
        }
        case Step::Kind::kSplit:
          for (std::string_view piece : SplitByPattern(step.pattern, word)) {
            next.emplace_back(piece);
          }
          break;
        case Step::Kind::kMetaspace: {
          word = absl::StrReplaceAll(word, {{" ", step.replacement}});
          const bool prepend = step.prepend == Step::Prepend::kAlways ||
                               (step.prepend == Step::Prepend::kFirst && at_text_start && w == 0);
          if (prepend && word.compare(0, step.replacement.size(), step.replacement) != 0) {
            word.insert(0, step.replacement);
          }
          if (step.split) {
            SplitMergedWithNext(word, step.replacement, &next);
          } else {
            next.push_back(std::move(word));
          }
          break;
        }
      }
    }
    words = std::move(next);
  }
  return words;
}

}  // namespace orca::tokenizer_internal

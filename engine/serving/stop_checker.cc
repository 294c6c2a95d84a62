#include "engine/serving/stop_checker.h"

#include <algorithm>

namespace orca {
namespace {

// Moves `pos` back to the start of the UTF-8 character it falls in.
size_t CharBoundary(const std::string& s, size_t pos) {
  while (pos > 0 && pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) --pos;
  return pos;
}

}  // namespace

StopChecker::StopChecker(std::vector<std::string> stops, bool include_stop_in_output)
    : include_(include_stop_in_output) {
  for (auto& s : stops) {
    if (s.empty()) continue;
    max_len_ = std::max(max_len_, s.size());
    stops_.push_back(std::move(s));
  }
}

std::string StopChecker::Append(const std::string& delta) {
  if (stopped_) return "";
  text_ += delta;
  if (stops_.empty()) {
    std::string out = text_.substr(emitted_);
    emitted_ = text_.size();
    return out;
  }
  // A match can only start in the not-yet-emitted tail or just before it.
  const size_t search_from = emitted_ >= max_len_ ? emitted_ - max_len_ + 1 : 0;
  size_t best = std::string::npos;
  for (const auto& s : stops_) {
    size_t p = text_.find(s, search_from);
    if (p != std::string::npos && (best == std::string::npos || p < best)) {
      best = p;
      matched_ = s;
    }
  }
  if (best != std::string::npos) {
    stopped_ = true;
    size_t end = include_ ? best + matched_.size() : best;
    std::string out = end > emitted_ ? text_.substr(emitted_, end - emitted_) : "";
    emitted_ = std::max(emitted_, end);
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const auto& s : stops_) {
    for (size_t k = std::min(s.size() - 1, text_.size() - emitted_); k > hold; --k) {
      if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  size_t safe = CharBoundary(text_, text_.size() - hold);
  std::string out = safe > emitted_ ? text_.substr(emitted_, safe - emitted_) : "";
  emitted_ = std::max(emitted_, safe);
  return out;
}

std::string StopChecker::Flush() {
  if (stopped_) return "";
  std::string out = text_.substr(emitted_);
  emitted_ = text_.size();
  return out;
}

}  // namespace orca

#include "engine/core/stop_checker.h"

#include <algorithm>

namespace orca {
namespace {

// Moves `pos` back to the start of the UTF-8 character it falls in.
size_t CharBoundary(const std::string& s, size_t pos) {
  while (pos > 0 && pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) --pos;
  return pos;
}

// Returns how many bytes at the end of `s` are an incomplete UTF-8 character (a lead byte
// still waiting for its continuation bytes), 0 when it ends on a character boundary.
size_t IncompleteTail(const std::string& s) {
  size_t cont = 0;
  while (cont < 3 && cont < s.size() &&
         (static_cast<unsigned char>(s[s.size() - 1 - cont]) & 0xC0) == 0x80) {
    ++cont;
  }
  if (cont == s.size()) return 0;
  const unsigned char lead = static_cast<unsigned char>(s[s.size() - 1 - cont]);
  const size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  return need > cont ? cont + 1 : 0;
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
    const size_t safe = std::max(emitted_, text_.size() - IncompleteTail(text_));
    std::string out = text_.substr(emitted_, safe - emitted_);
    emitted_ = safe;
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
  size_t safe = CharBoundary(text_, text_.size() - std::max(hold, IncompleteTail(text_)));
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

// StopChecker: incremental stop-string matching over generated text. Text that could
// still turn out to be the start of a stop string is held back, so a client never sees
// part of a stop string; the cut is always on a UTF-8 character boundary.
// Not thread-safe (one per request).
#pragma once

#include <string>
#include <vector>

namespace orca {

class StopChecker {
 public:
  explicit StopChecker(std::vector<std::string> stops, bool include_stop_in_output = false);

  // Appends `delta`; returns the text that is now safe to emit. Sets stopped() when a
  // stop string matched (the returned text then ends before it, or after it when
  // include_stop_in_output).
  std::string Append(const std::string& delta);
  // Returns everything still held back (call at the end of generation).
  std::string Flush();
  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  bool include_;
  size_t max_len_ = 0;
  std::string text_;    // all generated text
  size_t emitted_ = 0;  // bytes of text_ returned so far
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace orca

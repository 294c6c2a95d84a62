// PullProgress: the progress lines of `orca model pull` on a stream (stderr, which a
// pod's log keeps): per file and overall bytes, percentages and the rate, at most one
// line per interval (plus one when each file completes), never a carriage-return
// animation. Not thread-safe: one downloading thread reports.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace orca {

class PullProgress {
 public:
  // `total_bytes` and `total_files` describe the whole pull (bytes < 0: unknown).
  PullProgress(std::ostream* out, int64_t total_bytes, int total_files,
               std::chrono::milliseconds interval = std::chrono::seconds(1));

  // Starts reporting file `name` of `size` bytes (< 0: unknown), `have` already on disk.
  void StartFile(const std::string& name, int64_t size, int64_t have);
  // Moves the current file to `have` bytes (after a resume or a restart from 0).
  void Reset(int64_t have);
  // Counts `n` new bytes of the current file; prints a line when the interval elapsed.
  void Add(int64_t n);
  // Prints the current file's final line.
  void FinishFile();
  // Prints one line of its own ("orca model pull: " + line).
  void Note(const std::string& line);

  // Returns "1.5 MiB"-style text for `bytes`.
  static std::string Bytes(int64_t bytes);

 private:
  void Print(bool done);

  std::ostream* out_;
  std::chrono::milliseconds interval_;
  int64_t total_bytes_;
  int total_files_;
  int file_index_ = 0;
  std::string name_;
  int64_t size_ = -1;
  int64_t have_ = 0;
  int64_t done_bytes_ = 0;  // of the files finished before this one
  int64_t window_bytes_ = 0;
  std::chrono::steady_clock::time_point window_start_;
  std::chrono::steady_clock::time_point last_print_;
  double rate_ = 0;  // bytes/s over the last window
  std::chrono::steady_clock::time_point file_start_;
  int64_t file_fetched_ = 0;  // bytes of the current file fetched by this run
};

}  // namespace orca

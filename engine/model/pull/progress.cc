#include "engine/model/pull/progress.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace orca {

PullProgress::PullProgress(std::ostream* out, int64_t total_bytes, int total_files,
                           std::chrono::milliseconds interval)
    : out_(out), interval_(interval), total_bytes_(total_bytes), total_files_(total_files) {}

std::string PullProgress::Bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double b = static_cast<double>(bytes);
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", b, units[u]);
}

void PullProgress::StartFile(const std::string& name, int64_t size, int64_t have) {
  ++file_index_;
  name_ = name;
  size_ = size;
  have_ = have;
  window_bytes_ = 0;
  rate_ = 0;
  file_fetched_ = 0;
  window_start_ = last_print_ = file_start_ = std::chrono::steady_clock::now();
}

void PullProgress::Reset(int64_t have) { have_ = have; }

void PullProgress::Add(int64_t n) {
  have_ += n;
  window_bytes_ += n;
  file_fetched_ += n;
  auto now = std::chrono::steady_clock::now();
  if (now - last_print_ >= interval_) Print(false);
}

void PullProgress::FinishFile() {
  Print(true);
  done_bytes_ += have_;
}

void PullProgress::Note(const std::string& line) {
  if (out_ != nullptr) *out_ << "orca model pull: " << line << "\n" << std::flush;
}

void PullProgress::Print(bool done) {
  auto now = std::chrono::steady_clock::now();
  double secs = std::chrono::duration<double>(now - window_start_).count();
  if (done) {  // the file's average: short files finish inside one window
    secs = std::chrono::duration<double>(now - file_start_).count();
    rate_ = secs > 0 ? static_cast<double>(file_fetched_) / secs : 0;
  } else if (secs > 0.05) {
    rate_ = static_cast<double>(window_bytes_) / secs;
  }
  window_bytes_ = 0;
  window_start_ = last_print_ = now;
  if (out_ == nullptr) return;
  std::string file = size_ >= 0 ? absl::StrFormat("%s/%s (%d%%)", Bytes(have_), Bytes(size_),
                                                  size_ > 0 ? have_ * 100 / size_ : 100)
                                : Bytes(have_);
  int64_t overall = done_bytes_ + have_;
  std::string all = total_bytes_ >= 0
                        ? absl::StrFormat("%s/%s (%d%%)", Bytes(overall), Bytes(total_bytes_),
                                          total_bytes_ > 0 ? overall * 100 / total_bytes_ : 100)
                        : Bytes(overall);
  *out_ << absl::StrFormat("orca model pull: [%d/%d] %s %s %.1f MB/s%s; overall %s\n", file_index_,
                           total_files_, name_, file, rate_ / 1e6, done ? " done" : "", all)
        << std::flush;
}

}  // namespace orca

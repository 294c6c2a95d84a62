#include "engine/common/trace.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/common/log.h"

namespace orca {
namespace {

// A JSON string literal (names are ours, but a track name may carry a host name).
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

int64_t TraceNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Open(const std::string& path,
                                                               int64_t max_events) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("trace file ", path, ": cannot create it: ", std::strerror(errno)));
  }
  std::fputs("[\n", f);
  std::fflush(f);
  return std::unique_ptr<TraceWriter>(new TraceWriter(f, path, max_events));
}

TraceWriter::TraceWriter(std::FILE* file, std::string path, int64_t max_events)
    : path_(std::move(path)), max_events_(max_events), file_(file) {}

TraceWriter::~TraceWriter() {
  absl::MutexLock lock(&mu_);
  // A last metadata event closes the array without a trailing comma.
  batch_ += "{\"name\":\"orca_trace_end\",\"ph\":\"M\",\"pid\":1,\"args\":{}}\n]\n";
  FlushLocked();
  std::fclose(file_);
}

void TraceWriter::WriteLocked(const std::string& json) {
  batch_ += json;
  batch_ += ",\n";
  if (batch_.size() >= (256 << 10) || TraceNowUs() - flushed_us_ >= 1'000'000) FlushLocked();
}

void TraceWriter::FlushLocked() {
  std::fwrite(batch_.data(), 1, batch_.size(), file_);
  std::fflush(file_);
  batch_.clear();
  flushed_us_ = TraceNowUs();
}

void TraceWriter::NameTrack(int track, const std::string& name) {
  absl::MutexLock lock(&mu_);
  if (std::find(named_.begin(), named_.end(), track) != named_.end()) return;
  named_.push_back(track);
  WriteLocked(absl::StrCat("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":", track,
                           ",\"args\":{\"name\":", Quoted(name), "}}"));
  // Rows sorted scheduler first, then ranks in order.
  WriteLocked(absl::StrCat("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":", track,
                           ",\"args\":{\"sort_index\":", track, "}}"));
}

void TraceWriter::Span(int track, const TraceSpan& span, int64_t iteration,
                       std::initializer_list<Arg> args) {
  absl::MutexLock lock(&mu_);
  if (full_) return;
  if (events_ >= max_events_) {
    full_ = true;
    WriteLocked(absl::StrCat("{\"name\":\"trace stopped: ", max_events_,
                             " events written\",\"ph\":\"i\",\"s\":\"g\",\"pid\":", track,
                             ",\"tid\":0,\"ts\":", span.start_us, "}"));
    FlushLocked();
    ORCA_LOG(WARNING) << "trace file " << path_ << ": " << max_events_
                      << " events written; no more will be";
    return;
  }
  ++events_;
  std::string json = absl::StrCat("{\"name\":", Quoted(span.name), ",\"ph\":\"X\",\"pid\":", track,
                                  ",\"tid\":0,\"ts\":", span.start_us, ",\"dur\":", span.dur_us);
  if (iteration >= 0 || args.size() > 0) {
    const char* sep = "";
    json += ",\"args\":{";
    if (iteration >= 0) {
      absl::StrAppend(&json, "\"iteration\":", iteration);
      sep = ",";
    }
    for (const Arg& a : args) {
      absl::StrAppend(&json, sep, "\"", a.key, "\":", a.value);
      sep = ",";
    }
    json += "}";
  }
  json += "}";
  WriteLocked(json);
}

void TraceWriter::Spans(int track, const std::vector<TraceSpan>& spans, int64_t iteration) {
  for (const TraceSpan& s : spans) Span(track, s, iteration);
}

int64_t TraceWriter::events_written() const {
  absl::MutexLock lock(&mu_);
  return events_;
}

}  // namespace orca

#include "engine/model/pull/file_download.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/model/pull/sha256.h"

namespace orca {
namespace {

namespace fs = std::filesystem;

int64_t SizeOf(const std::string& path) {
  std::error_code ec;
  auto s = fs::file_size(path, ec);
  return ec ? -1 : static_cast<int64_t>(s);
}

// Writes a body into the .part file, truncated to where the server's answer starts.
class PartFileSink : public HttpClient::Sink {
 public:
  PartFileSink(std::string path, int64_t limit, PullProgress* progress)
      : path_(std::move(path)), limit_(limit), progress_(progress) {}
  ~PartFileSink() override { Close().IgnoreError(); }

  absl::Status Begin(int64_t offset) override {
    if (auto s = Close(); !s.ok()) return s;
    std::error_code ec;
    if (int64_t on_disk = SizeOf(path_); offset > on_disk) {
      // Never leave a hole: start the file again on the next try.
      fs::resize_file(path_, 0, ec);
      return absl::UnavailableError(absl::StrCat("the server resumed at byte ", offset,
                                                 " but only ", on_disk, " are on disk"));
    }
    fs::resize_file(path_, static_cast<uintmax_t>(offset), ec);
    if (ec) return absl::InternalError(absl::StrCat("cannot truncate ", path_, ": ", ec.message()));
    f_ = std::fopen(path_.c_str(), "ab");
    if (f_ == nullptr) {
      return absl::InternalError(absl::StrCat("cannot open ", path_, ": ", std::strerror(errno)));
    }
    written_ = offset;
    if (progress_ != nullptr) progress_->Reset(offset);
    return absl::OkStatus();
  }

  absl::Status Write(const char* data, size_t n) override {
    if (limit_ >= 0 && written_ + static_cast<int64_t>(n) > limit_) {
      return absl::DataLossError(
          absl::StrCat("the server sent more than the ", limit_, " bytes the listing announced"));
    }
    if (std::fwrite(data, 1, n, f_) != n) {
      return absl::InternalError(absl::StrCat("cannot write ", path_, ": ", std::strerror(errno)));
    }
    written_ += static_cast<int64_t>(n);
    if (progress_ != nullptr) progress_->Add(static_cast<int64_t>(n));
    return absl::OkStatus();
  }

  absl::Status Close() {
    if (f_ == nullptr) return absl::OkStatus();
    int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) {
      return absl::InternalError(absl::StrCat("cannot write ", path_, ": ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }

 private:
  std::string path_;
  int64_t limit_;
  PullProgress* progress_;
  FILE* f_ = nullptr;
  int64_t written_ = 0;
};

absl::Status Verify(const DownloadSpec& spec, const std::string& part) {
  int64_t got = SizeOf(part);
  if (spec.size >= 0 && got != spec.size) {
    std::error_code ec;
    fs::remove(part, ec);
    return absl::DataLossError(absl::StrCat(spec.name, ": size mismatch: expected ", spec.size,
                                            " bytes, got ", got, "; the file was deleted"));
  }
  if (!spec.sha256.empty()) {
    auto digest = Sha256OfFile(part);
    if (!digest.ok()) return digest.status();
    if (*digest != absl::AsciiStrToLower(spec.sha256)) {
      std::error_code ec;
      fs::remove(part, ec);
      return absl::DataLossError(absl::StrCat(spec.name, ": SHA-256 mismatch: expected ",
                                              absl::AsciiStrToLower(spec.sha256), ", got ", *digest,
                                              "; the file was deleted"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status HttpError(long status, const std::string& what, const std::string& body) {
  std::string detail = body.substr(0, 200);
  for (char& c : detail)
    if (c == '\n' || c == '\r') c = ' ';
  std::string msg = absl::StrCat(what, ": HTTP ", status, detail.empty() ? "" : " (", detail,
                                 detail.empty() ? "" : ")");
  if (status == 401) {
    return absl::UnauthenticatedError(absl::StrCat(
        msg,
        ": the token in HF_TOKEN (or --token-file) was refused, or none was given and the "
        "repository is private or gated (the hub also answers 401 for a repository that does "
        "not exist)"));
  }
  if (status == 403) {
    return absl::PermissionDeniedError(absl::StrCat(
        msg,
        ": the token in HF_TOKEN (or --token-file) was refused: it lacks access to this "
        "repository (gated: accept its terms on the hub first)"));
  }
  if (status == 404) return absl::NotFoundError(absl::StrCat(msg, ": not found"));
  if (status == 429 || status >= 500) return absl::UnavailableError(msg);
  return absl::FailedPreconditionError(msg);
}

absl::Status DownloadFile(HttpClient& client, const DownloadSpec& spec, const RetryPolicy& retry,
                          PullProgress* progress) {
  // `dest` only ever gets its name once verified: a completed file of an earlier run.
  int64_t done = SizeOf(spec.dest);
  if (done >= 0 && (spec.size < 0 || done == spec.size)) {
    if (progress != nullptr) {
      progress->StartFile(spec.name, done, done);
      progress->FinishFile();
    }
    return absl::OkStatus();
  }
  std::string part = spec.dest + ".part";
  int64_t have = SizeOf(part);
  if (have < 0 || (spec.size >= 0 && have > spec.size)) {
    have = 0;
    std::FILE* f = std::fopen(part.c_str(), "wb");
    if (f == nullptr) {
      return absl::InternalError(absl::StrCat("cannot create ", part, ": ", std::strerror(errno)));
    }
    std::fclose(f);
  }
  if (progress != nullptr) progress->StartFile(spec.name, spec.size, have);
  int attempts = 0;
  absl::Status last = RetryUnavailable(
      retry,
      [&]() -> absl::Status {
        ++attempts;
        int64_t offset = SizeOf(part);
        if (spec.size >= 0 && offset == spec.size) return absl::OkStatus();
        PartFileSink sink(part, spec.size, progress);
        auto r = client.Fetch(spec.url, offset, sink);
        absl::Status closed = sink.Close();
        if (!r.ok()) return r.status();
        if (r->status == 416) {  // our offset is past the server's end: start again
          std::error_code ec;
          fs::resize_file(part, 0, ec);
          return absl::UnavailableError(absl::StrCat("HTTP 416 at offset ", offset));
        }
        if (r->status < 200 || r->status >= 300) {
          return HttpError(r->status, absl::StrCat("GET ", spec.name), r->body);
        }
        if (!closed.ok()) return closed;
        if (spec.size >= 0 && SizeOf(part) < spec.size) {
          return absl::UnavailableError(
              absl::StrCat("the answer ended after ", SizeOf(part), " of ", spec.size, " bytes"));
        }
        return absl::OkStatus();
      },
      [&](const absl::Status& error, std::chrono::milliseconds pause) {
        if (progress == nullptr) return;
        progress->Note(absl::StrCat(spec.name, ": ", error.message(), "; retrying in ",
                                    pause.count(), " ms from byte ", SizeOf(part)));
      });
  if (!last.ok()) {
    if (absl::IsUnavailable(last)) {
      return absl::UnavailableError(
          absl::StrCat(spec.name, ": giving up after ", attempts, " attempts (", SizeOf(part),
                       " bytes kept for the next run): ", last.message()));
    }
    return absl::Status(last.code(), absl::StrCat(spec.name, ": ", last.message()));
  }
  if (progress != nullptr) progress->FinishFile();
  if (auto s = Verify(spec, part); !s.ok()) return s;
  std::error_code ec;
  fs::rename(part, spec.dest, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", part, " to ", spec.dest, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace orca

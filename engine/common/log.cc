#include "engine/common/log.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

namespace orca {
namespace {

LogSeverity MinSeverity() {
  static const LogSeverity min = [] {
    const char* env = std::getenv("ORCA_LOG_LEVEL");
    if (env == nullptr) return LogSeverity::kInfo;
    std::string v(env);
    if (v == "debug") return LogSeverity::kDebug;
    if (v == "warning") return LogSeverity::kWarning;
    if (v == "error") return LogSeverity::kError;
    return LogSeverity::kInfo;
  }();
  return min;
}

const char* SeverityLetter(LogSeverity s) {
  switch (s) {
    case LogSeverity::kDebug:
      return "D";
    case LogSeverity::kInfo:
      return "I";
    case LogSeverity::kWarning:
      return "W";
    case LogSeverity::kError:
      return "E";
  }
  return "?";
}

}  // namespace

bool LogEnabled(LogSeverity severity) { return severity >= MinSeverity(); }

LogMessage::LogMessage(LogSeverity severity, const char* file, int line) : severity_(severity) {
  const char* base = std::strrchr(file, '/');
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
  stream_ << SeverityLetter(severity) << " " << buf << " " << (base ? base + 1 : file) << ":"
          << line << "] ";
}

LogMessage::~LogMessage() {
  static std::mutex mu;
  stream_ << "\n";
  std::string s = stream_.str();
  std::lock_guard<std::mutex> lock(mu);
  std::fwrite(s.data(), 1, s.size(), stderr);
  std::fflush(stderr);
}

}  // namespace orca

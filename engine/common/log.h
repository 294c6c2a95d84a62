// Minimal leveled logging to stderr. Thread-safe: each message is written with one
// call under a process-wide mutex. ORCA_LOG_LEVEL=debug|info|warning|error filters.
//
//   ORCA_LOG(INFO) << "loaded " << n << " tensors";
#pragma once

#include <sstream>

namespace orca {

enum class LogSeverity { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Returns true when messages of `severity` are printed.
bool LogEnabled(LogSeverity severity);

class LogMessage {
 public:
  LogMessage(LogSeverity severity, const char* file, int line);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogSeverity severity_;
  std::ostringstream stream_;
};

}  // namespace orca

#define ORCA_LOG_SEVERITY_DEBUG ::orca::LogSeverity::kDebug
#define ORCA_LOG_SEVERITY_INFO ::orca::LogSeverity::kInfo
#define ORCA_LOG_SEVERITY_WARNING ::orca::LogSeverity::kWarning
#define ORCA_LOG_SEVERITY_ERROR ::orca::LogSeverity::kError

#define ORCA_LOG(level)                                 \
  if (!::orca::LogEnabled(ORCA_LOG_SEVERITY_##level)) { \
  } else                                                \
    ::orca::LogMessage(ORCA_LOG_SEVERITY_##level, __FILE__, __LINE__).stream()

// `orca pre-stop --seconds S`: waits S seconds, then exits 0. It is the scheduler pod's
// preStop hook: Kubernetes runs the hook before it sends SIGTERM, and meanwhile the
// endpoints controllers take the terminating pod out of the Service (and the Gateway's
// InferencePool), so that no new request is routed to a scheduler that is about to drain.
// The image has no shell, hence no `sleep`: the hook runs this binary. The wait counts
// against terminationGracePeriodSeconds, which must cover it plus the drain
// (server.shutdown_timeout_s).
#include <cmath>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/cli/commands.h"
#include "engine/config/flags.h"

namespace orca {
namespace {

constexpr double kMaxSeconds = 3600;

constexpr char kUsage[] =
    "usage: orca pre-stop [--seconds S]\n\n"
    "Waits S seconds (default 5) and exits 0. Use it as the scheduler container's preStop\n"
    "hook (lifecycle.preStop.exec.command: [\"orca\", \"pre-stop\", \"--seconds\", \"5\"]):\n"
    "Kubernetes runs the hook before it sends SIGTERM, and in the meantime the endpoints\n"
    "controllers remove the terminating pod from its Service, so clients stop being routed\n"
    "to it before it drains. The orca image has no shell, so `sleep` is not available.\n"
    "The wait is part of terminationGracePeriodSeconds: keep that above S plus the drain\n"
    "(server.shutdown_timeout_s).\n\n";

}  // namespace

int RunPreStopCommand(int argc, char** argv) {
  Flags flags;
  flags.Add("seconds", "5", "how long to wait before exiting 0 (0 to 3600)");
  flags.Add("help", "", "print this help", /*is_bool=*/true);
  auto fail = [](const std::string& message) {
    std::cerr << "orca pre-stop: " << message << "\n";
    return 2;
  };
  if (auto s = flags.Parse(argc, argv, 0); !s.ok()) return fail(std::string(s.message()));
  if (flags.GetBool("help")) {
    std::cout << kUsage << flags.Help();
    return 0;
  }
  if (!flags.positional().empty()) {
    return fail(absl::StrCat("unexpected argument '", flags.positional()[0], "'"));
  }
  absl::StatusOr<double> seconds = flags.GetDouble("seconds");
  if (!seconds.ok()) return fail(std::string(seconds.status().message()));
  if (!std::isfinite(*seconds) || *seconds < 0 || *seconds > kMaxSeconds) {
    return fail(absl::StrCat("--seconds must be between 0 and ", kMaxSeconds, ", got ", *seconds));
  }
  absl::SleepFor(absl::Seconds(*seconds));
  return 0;
}

}  // namespace orca

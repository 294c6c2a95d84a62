// The `orca` binary: dispatches to the subcommands.
#include <cstring>
#include <iostream>
#include <string>

#include "absl/synchronization/mutex.h"
#include "engine/cli/commands.h"
#include "engine/cli/cpu_setup.h"
#ifdef ORCA_HAVE_BENCH
#include "bench/loadgen/bench_command.h"
#endif

namespace {

constexpr char kUsage[] =
    "orca: iteration-level LLM serving (ORCA, OSDI '22)\n\n"
    "usage: orca <command> [flags]\n\n"
    "commands:\n"
    "  serve      serve a model over the OpenAI-compatible HTTP API (orca serve --help)\n"
    "  scheduler  the scheduler of a serving group whose workers dial in (orca scheduler --help)\n"
    "  worker     the ranks of one worker of a serving group (orca worker --help)\n"
    "  generate   load a checkpoint and stream one completion (orca generate --help)\n"
    "  bench      load generator and benchmarks: serve, engine, plot (orca bench --help)\n"
    "  model      inspect or pull a checkpoint, or write a random-weight one (orca model --help)\n"
    "  config     check an engine.yaml, print the settings table (orca config --help)\n"
    "  pre-stop   wait, then exit 0: the scheduler pod's preStop hook (orca pre-stop --help)\n"
    "  version    print the version, the CPU's vector level and OpenBLAS's kernels\n";

}  // namespace

int main(int argc, char** argv) {
  orca::RestartIfOpenBlasMisreadsTheCpu(argv);
  // Debian's Abseil is built without NDEBUG, so every Mutex acquisition taken while
  // another is held would be recorded in a process-wide lock graph (deadlock detection)
  // — a measurable cost on the serving path (token-mask walks, ~1.5 % of CPU in a
  // guided run). Lock order is checked where it belongs: clang's -Wthread-safety and
  // ThreadSanitizer in CI (scripts/check-thread-safety.sh, scripts/test-tsan.sh).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "help")) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  if (cmd == "generate") return orca::RunGenerateCommand(argc - 2, argv + 2);
  if (cmd == "model") return orca::RunModelCommand(argc - 2, argv + 2);
  if (cmd == "serve") return orca::RunServeCommand(argc - 2, argv + 2);
  if (cmd == "scheduler") return orca::RunSchedulerCommand(argc - 2, argv + 2);
  if (cmd == "worker") return orca::RunWorkerCommand(argc - 2, argv + 2);
  if (cmd == "config") return orca::RunConfigCommand(argc - 2, argv + 2);
  if (cmd == "pre-stop") return orca::RunPreStopCommand(argc - 2, argv + 2);
#ifdef ORCA_HAVE_BENCH
  if (cmd == "bench") return orca::RunBenchCommand(argc - 2, argv + 2);
#endif
  if (cmd == "version" || cmd == "--version") {
    std::cout << "orca " << ORCA_VERSION << "\n" << orca::CpuVersionLines();
    return 0;
  }
  std::cerr << "orca: unknown command '" << cmd << "'\n" << kUsage;
  return 2;
}

// The `orca` binary: dispatches to the subcommands.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "absl/synchronization/mutex.h"
#include "engine/backend/cpu/openblas_core.h"
#include "engine/backend/cpu/packed_gemm_bf16.h"
#include "engine/cli/commands.h"
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

// Where OpenBLAS picked kernels that leave this CPU's vectors unused (a CPU newer than
// the library: openblas_core.h), runs this binary again with OPENBLAS_CORETYPE naming
// the kernels to use. Returns only where it does not (OPENBLAS_CORETYPE already set, by
// the user or the first run, or exec failing).
void RestartIfOpenBlasMisreadsTheCpu(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const std::string detected = orca::OpenBlasCoreName();
  const std::string core = orca::OpenBlasCoreToForce(detected, orca::CpuMaxSimdLevel());
  if (core.empty()) return;
  std::cerr << "orca: OpenBLAS (" << orca::OpenBlasConfig() << ") chose its " << detected
            << " kernels, which leave this CPU's " << orca::SimdLevelName(orca::CpuMaxSimdLevel())
            << " unused; running again with OPENBLAS_CORETYPE=" << core << "\n";
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  execv("/proc/self/exe", argv);
  std::cerr << "orca: could not run again (" << std::strerror(errno) << "); continuing\n";
}

// How bfloat16 weights are multiplied from 8 rows (packed_gemm_bf16.h), with the timing
// that chose it.
std::string Bf16ProductsNote() {
  if (!orca::CpuHasBf16Dots()) return "";
  const orca::Bf16DotsTiming& t = orca::CpuBf16DotsTiming();
  char note[160];
  std::snprintf(note, sizeof(note),
                " (bfloat16 weights: %s; products %.1f us, widened float32 FMAs %.1f us a tile)",
                orca::CpuBf16DotsEnabled() ? "bfloat16 products" : "widened to float32",
                t.dots_ns / 1e3, t.widen_ns / 1e3);
  return note;
}

}  // namespace

int main(int argc, char** argv) {
  RestartIfOpenBlasMisreadsTheCpu(argv);
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
    std::cout << "orca " << ORCA_VERSION << "\n"
              << "cpu: " << orca::SimdLevelName(orca::CpuMaxSimdLevel())
              << (orca::CpuHasBf16Dots() ? "+bf16" : "") << Bf16ProductsNote() << "\n"
              << "openblas: " << orca::OpenBlasConfig() << " (kernels: " << orca::OpenBlasCoreName()
              << ")\n";
    return 0;
  }
  std::cerr << "orca: unknown command '" << cmd << "'\n" << kUsage;
  return 2;
}

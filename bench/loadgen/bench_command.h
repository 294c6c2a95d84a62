// `orca bench`: the benchmark tools (bench/README.md).
//
//   orca bench serve   load generator for any OpenAI-compatible /v1/completions
//                      endpoint: the ORCA paper's trace, fixed lengths, closed loop or a
//                      JSONL trace; one JSON result per run or sweep; with --sweep the
//                      paper's Figure 10 as a PNG;
//   orca bench engine  the paper's engine microbenchmark (section 6.1) on the
//                      ModelRunner, beside the CPU roofline; JSON and PNG;
//   orca bench plot    overlays result files in one PNG.
#pragma once

namespace orca {

// Runs `orca bench` with argv after "bench" (argv[0] is the subcommand) and returns the
// process exit code: 0 on success, 2 on bad usage, 1 on an error (printed to stderr
// as one line), 3 when --require-success is given and a request failed.
int RunBenchCommand(int argc, char** argv);

}  // namespace orca

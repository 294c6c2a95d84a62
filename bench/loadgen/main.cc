// `orca-bench`: the same tools as `orca bench`, as a standalone binary.
#include "bench/loadgen/bench_command.h"

int main(int argc, char** argv) { return orca::RunBenchCommand(argc - 1, argv + 1); }

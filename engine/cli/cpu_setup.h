// What the `orca` binary does about its CPU before anything else, and what `orca
// version` says about it. (Kept out of main.cc: the CPU feature checks behind these
// do not compile with the clang of scripts/check-thread-safety.sh, which checks main.cc.)
#pragma once

#include <string>

namespace orca {

// Where OpenBLAS picked kernels that leave this CPU's vectors unused (a CPU newer than
// the library: engine/backend/cpu/openblas_core.h), runs this binary again (exec, same
// process id) with OPENBLAS_CORETYPE naming the kernels to use, saying so on stderr.
// Returns only where it does not: OPENBLAS_CORETYPE already set (by the user or the
// first run), OpenBLAS's choice already fits, or exec failing.
void RestartIfOpenBlasMisreadsTheCpu(char** argv);

// `orca version`'s lines after the first: the CPU's vector level and how bfloat16
// weights are multiplied (with the timing that chose it), OpenBLAS's build and kernels.
std::string CpuVersionLines();

}  // namespace orca

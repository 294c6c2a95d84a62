// The orca subcommands. Each takes argv after the subcommand name and returns the
// process exit code; errors are printed to stderr as one clear line.
#pragma once

namespace orca {

int RunGenerateCommand(int argc, char** argv);
int RunModelCommand(int argc, char** argv);
int RunServeCommand(int argc, char** argv);
int RunSchedulerCommand(int argc, char** argv);
int RunWorkerCommand(int argc, char** argv);
int RunConfigCommand(int argc, char** argv);
// `orca pre-stop --seconds S`: the scheduler pod's preStop hook (waits, exits 0).
int RunPreStopCommand(int argc, char** argv);

}  // namespace orca

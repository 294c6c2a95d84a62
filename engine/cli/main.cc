// The `orca` binary: dispatches to the subcommands.
#include <cstring>
#include <iostream>
#include <string>

#include "engine/cli/commands.h"

namespace {

constexpr char kUsage[] =
    "orca: iteration-level LLM serving (ORCA, OSDI '22)\n\n"
    "usage: orca <command> [flags]\n\n"
    "commands:\n"
    "  serve      serve a model over the OpenAI-compatible HTTP API (orca serve --help)\n"
    "  generate   load a checkpoint and stream one completion (orca generate --help)\n"
    "  model      inspect a checkpoint or write a random-weight one (orca model --help)\n"
    "  version    print the version\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "help")) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  if (cmd == "generate") return orca::RunGenerateCommand(argc - 2, argv + 2);
  if (cmd == "model") return orca::RunModelCommand(argc - 2, argv + 2);
  if (cmd == "serve") return orca::RunServeCommand(argc - 2, argv + 2);
  if (cmd == "version" || cmd == "--version") {
    std::cout << "orca " << ORCA_VERSION << "\n";
    return 0;
  }
  std::cerr << "orca: unknown command '" << cmd << "'\n" << kUsage;
  return 2;
}

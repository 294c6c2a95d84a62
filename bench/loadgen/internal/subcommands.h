// The `orca bench` subcommands and the small helpers they share. Private to
// bench/loadgen. Each Run* takes argv after the subcommand name and returns an exit
// code as RunBenchCommand documents.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orca::bench {

int RunServeBench(int argc, char** argv);
int RunEngineBench(int argc, char** argv);
int RunPlot(int argc, char** argv);

// Parses a comma-separated list of numbers ("0.5,1,2"); names `flag` in errors.
absl::StatusOr<std::vector<double>> ParseNumberList(const std::string& text,
                                                    const std::string& flag);
// Returns the command line as one string (for the "command" field of results).
std::string CommandLine(const char* prefix, int argc, char** argv);
// Writes `doc` to `path` (pretty-printed); "-" or "" writes to stdout.
absl::Status WriteJson(const nlohmann::json& doc, const std::string& path);
// Returns `path` with its extension replaced by `ext` (".png").
std::string WithExtension(const std::string& path, const std::string& ext);

}  // namespace orca::bench

// Helpers shared by the libFuzzer targets of tests/fuzz (docs/fuzzing.md).
//
// Some parsers read only files (a checkpoint directory, a kubeconfig path): their
// fuzzers write each input into a scratch directory private to the fuzzer process and
// call the parser on it. A fuzz target calls these from one thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orca::fuzz {

// Returns this process's scratch directory, created under $TMPDIR (or /tmp) on the
// first call and removed when the process exits normally. Aborts when it cannot be made.
const std::string& ScratchDir();

// A file of a fixture directory: its name there and the file it is copied from.
struct FixtureFile {
  std::string name;
  std::string source;
};

// Returns ScratchDir()/`name`, a directory created on the first call with copies of
// `files`. Aborts when a source cannot be read: the fuzzer's environment is broken, not
// the input.
std::string FixtureDir(const std::string& name, const std::vector<FixtureFile>& files = {});

// Writes `data` to `path`, replacing it. Aborts on an I/O failure.
void WriteFileOrDie(const std::string& path, std::string_view data);

// Returns the contents of `path`. Aborts when it cannot be read.
std::string ReadFileOrDie(const std::string& path);

// Returns `relative` under the source checkout the fuzzers were built from (seed
// checkpoints and templates are read from there).
std::string SourcePath(const std::string& relative);

// Returns the input as a string.
inline std::string AsString(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace orca::fuzz

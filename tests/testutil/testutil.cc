#include "tests/testutil/testutil.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace orca::testing {

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

std::string SourceDir() {
  const char* s = std::getenv("ORCA_SOURCE_DIR");
  if (s != nullptr) return s;
  return std::filesystem::current_path().string();
}

std::optional<std::string> SharedModelDir(const std::string& name) {
  struct stat st;
  for (const std::string& dir :
       {SourceDir() + "/models/" + name, SourceDir() + "/../shared/models/" + name}) {
    if (::stat((dir + "/config.json").c_str(), &st) == 0) return dir;
  }
  return std::nullopt;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "orca-test-XXXXXX").string();
  char* p = ::mkdtemp(tmpl.data());
  path_ = p ? p : "";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

int RunCommand(const std::string& command, std::string* output) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) {
    if (output) output->append(buf.data(), n);
  }
  int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ReferencePython() {
  for (const char* py : {"/usr/bin/python3"}) {
    std::string cmd = std::string(py) + " -c 'import torch, numpy' >/dev/null 2>&1";
    if (RunCommand(cmd) == 0) return py;
  }
  return "";
}

}  // namespace orca::testing

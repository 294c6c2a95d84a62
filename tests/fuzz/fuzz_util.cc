#include "tests/fuzz/fuzz_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef ORCA_SOURCE_DIR
#error "ORCA_SOURCE_DIR must name the source checkout (tests/fuzz/CMakeLists.txt sets it)"
#endif

namespace orca::fuzz {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "fuzz harness: %s\n", what.c_str());
  std::abort();
}

std::string* scratch = nullptr;

void RemoveScratch() {
  std::error_code ignored;
  if (scratch != nullptr) std::filesystem::remove_all(*scratch, ignored);
}

}  // namespace

const std::string& ScratchDir() {
  if (scratch == nullptr) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/orca-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) Die("cannot create a directory " + pattern);
    scratch = new std::string(pattern);
    std::atexit(RemoveScratch);
  }
  return *scratch;
}

std::string FixtureDir(const std::string& name, const std::vector<FixtureFile>& files) {
  std::string dir = ScratchDir() + "/" + name;
  if (std::filesystem::exists(dir)) return dir;
  std::filesystem::create_directories(dir);
  for (const FixtureFile& file : files) {
    WriteFileOrDie(dir + "/" + file.name, ReadFileOrDie(file.source));
  }
  return dir;
}

void WriteFileOrDie(const std::string& path, std::string_view data) {
  // Rewritten in place, not truncated first: ext4 flushes a file truncated to zero when
  // it is closed (auto_da_alloc), which made each input cost over a millisecond.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) Die("cannot open " + path);
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n <= 0) Die("cannot write " + path);
    written += static_cast<size_t>(n);
  }
  if (::ftruncate(fd, static_cast<off_t>(data.size())) != 0 || ::close(fd) != 0) {
    Die("cannot write " + path);
  }
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("cannot read " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string SourcePath(const std::string& relative) {
  return std::string(ORCA_SOURCE_DIR) + "/" + relative;
}

}  // namespace orca::fuzz

// Fuzzes the safetensors reader (engine/model/safetensors.h): the 8-byte header length,
// the JSON header, dtypes, shapes and data offsets of a model.safetensors file.
//
// The reader maps a file, so each input is written to a scratch file first. A tensor
// the reader accepts must lie inside the mapping: its first and last bytes are read, so
// an offset check that lets one run past the file is an ASan report.

#include <cstddef>
#include <cstdint>

#include "engine/model/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = orca::fuzz::ScratchDir() + "/model.safetensors";
  orca::fuzz::WriteFileOrDie(path, std::string_view(reinterpret_cast<const char*>(data), size));
  auto file = orca::SafetensorsFile::Open(path);
  if (!file.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const auto& [name, tensor] : (*file)->tensors()) {
    (void)tensor.num_elements();
    if (tensor.nbytes == 0) continue;
    const auto* bytes = static_cast<const uint8_t*>(tensor.data);
    sink = sink ^ bytes[0] ^ bytes[tensor.nbytes - 1];
  }
  return 0;
}

// Safetensors files: a read-only, memory-mapped reader and a writer.
//
// The reader treats the file as untrusted: the header length, the JSON header, every
// dtype, shape and data offset is checked against the file's size before any tensor
// is exposed; errors name the file and the tensor. A SafetensorsFile is immutable
// after Open() and safe for concurrent reads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/common/dtype.h"

namespace orca {

// A tensor inside a mapped file (or any host memory). Does not own `data`.
struct HostTensorView {
  std::string name;
  std::string dtype_name;     // as in the file: "F32", "BF16", "I64", ...
  bool float_dtype = false;   // true when dtype_name is F32, F16 or BF16
  DType dtype = DType::kF32;  // meaningful only when float_dtype
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;

  int64_t num_elements() const;
};

class SafetensorsFile {
 public:
  // Maps and validates `path`.
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // Returns the tensor called `name`, or nullptr.
  const HostTensorView* Find(const std::string& name) const;
  const std::map<std::string, HostTensorView>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::map<std::string, HostTensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Accumulates tensors and writes one safetensors file. Not thread-safe.
class SafetensorsWriter {
 public:
  // Adds a tensor; `data` holds prod(shape) elements of `dtype` and is copied.
  void Add(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data);
  // Adds float32 `values`, converted to `dtype`.
  void AddF32(const std::string& name, DType dtype, std::vector<int64_t> shape,
              const std::vector<float>& values);
  // Writes the file (header padded to 8 bytes, tensors in insertion order).
  absl::Status Write(const std::string& path) const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::string bytes;
  };
  std::vector<Entry> entries_;
};

}  // namespace orca

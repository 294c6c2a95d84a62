#include "engine/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"

namespace orca {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // as the reference implementation

absl::Status Corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

// Sizes of the non-float dtypes safetensors defines (0 = unknown).
uint64_t OtherDTypeSize(const std::string& name) {
  if (name == "BOOL" || name == "U8" || name == "I8" || name == "F8_E4M3" || name == "F8_E5M2")
    return 1;
  if (name == "I16" || name == "U16") return 2;
  if (name == "I32" || name == "U32") return 4;
  if (name == "I64" || name == "U64" || name == "F64") return 8;
  return 0;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

}  // namespace

int64_t HostTensorView::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr && map_ != MAP_FAILED) ::munmap(map_, map_size_);
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot stat"));
  }
  auto file = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  file->path_ = path;
  size_t size = static_cast<size_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    return Corrupt(path, absl::StrCat("file is truncated (", size,
                                      " bytes; a safetensors file "
                                      "starts with an 8-byte header length)"));
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return absl::InternalError(absl::StrCat(path, ": mmap failed"));
  file->map_ = map;
  file->map_size_ = size;
  const uint8_t* base = static_cast<const uint8_t*>(map);

  uint64_t header_len = 0;
  std::memcpy(&header_len, base, 8);  // little-endian hosts only (x86-64, aarch64)
  if (header_len > kMaxHeaderBytes) {
    return Corrupt(path, absl::StrCat("header length ", header_len, " exceeds the 100 MiB limit"));
  }
  if (header_len > size - 8) {
    return Corrupt(path, absl::StrCat("header length ", header_len, " runs past the end of the ",
                                      size, "-byte file (truncated?)"));
  }
  std::string header(reinterpret_cast<const char*>(base + 8), header_len);
  json j = json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Corrupt(path, "header is not a JSON object");

  const uint8_t* data = base + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) return Corrupt(path, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (m.value().is_string()) file->metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& what) {
      return Corrupt(path, absl::StrCat("tensor '", name, "': ", what));
    };
    if (!v.is_object()) return bad("entry is not an object");
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || !dt->is_string()) return bad("missing dtype");
    if (sh == v.end() || !sh->is_array()) return bad("missing shape");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned()) {
      return bad("data_offsets must be two non-negative integers");
    }
    HostTensorView t;
    t.name = name;
    t.dtype_name = dt->get<std::string>();
    uint64_t elem_size = 0;
    if (auto dtype = ParseDType(t.dtype_name); dtype.ok()) {
      t.float_dtype = true;
      t.dtype = *dtype;
      elem_size = DTypeSize(t.dtype);
    } else {
      elem_size = OtherDTypeSize(t.dtype_name);
      if (elem_size == 0) return bad(absl::StrCat("unknown dtype '", t.dtype_name, "'"));
    }
    uint64_t elements = 1;
    for (const json& d : *sh) {
      if (!d.is_number_unsigned()) return bad("shape dimensions must be non-negative integers");
      uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && elements > (uint64_t{1} << 62) / dim) return bad("shape overflows");
      elements *= dim;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    uint64_t begin = (*off)[0].get<uint64_t>();
    uint64_t end = (*off)[1].get<uint64_t>();
    if (begin > end) return bad("data_offsets are reversed");
    if (end > data_size) {
      return bad(absl::StrCat("data_offsets [", begin, ",", end, ") run past the data section (",
                              data_size, " bytes; file truncated?)"));
    }
    uint64_t expected = elements * elem_size;
    if (end - begin != expected) {
      return bad(absl::StrCat("holds ", end - begin, " bytes but shape ", ShapeString(t.shape), " ",
                              t.dtype_name, " needs ", expected));
    }
    t.data = data + begin;
    t.nbytes = static_cast<size_t>(expected);
    ranges.emplace_back(begin, end);
    file->tensors_.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) return Corrupt(path, "tensor data ranges overlap");
  }
  return file;
}

const HostTensorView* SafetensorsFile::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

void SafetensorsWriter::Add(const std::string& name, DType dtype, std::vector<int64_t> shape,
                            const void* data) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  Entry e{name, dtype, std::move(shape),
          std::string(static_cast<const char*>(data), n * DTypeSize(dtype))};
  entries_.push_back(std::move(e));
}

void SafetensorsWriter::AddF32(const std::string& name, DType dtype, std::vector<int64_t> shape,
                               const std::vector<float>& values) {
  std::string bytes(values.size() * DTypeSize(dtype), '\0');
  ConvertFromF32(values.data(), values.size(), dtype, bytes.data());
  entries_.push_back(Entry{name, dtype, std::move(shape), std::move(bytes)});
}

absl::Status SafetensorsWriter::Write(const std::string& path) const {
  json header = json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const Entry& e : entries_) {
    header[e.name] = {{"dtype", std::string(DTypeName(e.dtype))},
                      {"shape", e.shape},
                      {"data_offsets", {offset, offset + e.bytes.size()}}};
    offset += e.bytes.size();
  }
  std::string h = header.dump();
  while ((h.size() + 8) % 8 != 0) h.push_back(' ');
  std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot create"));
  uint64_t len = h.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const Entry& e : entries_)
    out.write(e.bytes.data(), static_cast<std::streamsize>(e.bytes.size()));
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat(path, ": write failed"));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat(path, ": rename failed"));
  }
  return absl::OkStatus();
}

}  // namespace orca

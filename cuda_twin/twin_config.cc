#include "cuda_twin/twin_config.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace orca::cuda_twin {
namespace {

TwinConfig Load() {
  TwinConfig c;
  auto read = [&](const char* name, auto parse) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0' || !c.error.empty()) return;
    if (!parse(std::string(v))) c.error = absl::StrCat(name, "='", v, "' is not valid");
  };
  read("ORCA_CUDA_TWIN_DEVICES", [&](const std::string& v) {
    return absl::SimpleAtoi(v, &c.devices) && c.devices >= 0 && c.devices <= 64;
  });
  read("ORCA_CUDA_TWIN_DEVICE_MEMORY", [&](const std::string& v) {
    c.device_memory.clear();
    for (absl::string_view part : absl::StrSplit(v, ',')) {
      size_t bytes = 0;
      if (!ParseBytes(std::string(part), &bytes) || bytes == 0) return false;
      c.device_memory.push_back(bytes);
    }
    return !c.device_memory.empty();
  });
  read("ORCA_CUDA_TWIN_SMS", [&](const std::string& v) {
    return absl::SimpleAtoi(v, &c.sms) && c.sms >= 1 && c.sms <= 1024;
  });
  read("ORCA_CUDA_TWIN_SEED", [&](const std::string& v) { return absl::SimpleAtoi(v, &c.seed); });
  read("ORCA_CUDA_TWIN_POISON", [&](const std::string& v) {
    if (v != "0" && v != "1") return false;
    c.poison = v == "1";
    return true;
  });
  read("ORCA_CUDA_TWIN_HOST_GUARD", [&](const std::string& v) {
    if (v != "0" && v != "1") return false;
    c.host_guard = v == "1";
    return true;
  });
  if (!c.error.empty()) {
    std::fprintf(stderr, "orca CUDA twin: %s; no device is available\n", c.error.c_str());
    c.devices = 0;
    c.device_memory = TwinConfig{}.device_memory;  // never empty
  }
  return c;
}

}  // namespace

const TwinConfig& Config() {
  static const TwinConfig config = Load();
  return config;
}

bool ParseBytes(const std::string& text, size_t* out) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  uint64_t value = 0;
  if (digits == 0 || !absl::SimpleAtoi(text.substr(0, digits), &value)) return false;
  const std::string suffix = text.substr(digits);
  int shift = 0;
  uint64_t scale = 1;
  if (suffix.empty()) {
  } else if (suffix == "K") {
    scale = 1000;
  } else if (suffix == "M") {
    scale = 1000 * 1000;
  } else if (suffix == "G") {
    scale = 1000 * 1000 * 1000;
  } else if (suffix == "Ki") {
    shift = 10;
  } else if (suffix == "Mi") {
    shift = 20;
  } else if (suffix == "Gi") {
    shift = 30;
  } else {
    return false;
  }
  if (value > (UINT64_MAX >> shift) / scale) return false;
  *out = static_cast<size_t>((value << shift) * scale);
  return true;
}

}  // namespace orca::cuda_twin

#pragma once
#include <cstdint>
#include <cstring>
#include "cuda_runtime_api.h"
struct __nv_bfloat16 {
  uint16_t v;
};
inline float __bfloat162float(__nv_bfloat16 h) {
  uint32_t b = uint32_t(h.v) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint16_t EmuF32ToBf16(float);
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16{EmuF32ToBf16(f)}; }

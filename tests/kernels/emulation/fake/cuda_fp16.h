#pragma once
#include <cstdint>
#include "cuda_runtime_api.h"
struct __half {
  uint16_t v;
};
float EmuF16ToF32(uint16_t);
uint16_t EmuF32ToF16(float);
inline float __half2float(__half h) { return EmuF16ToF32(h.v); }
inline __half __float2half_rn(float f) { return __half{EmuF32ToF16(f)}; }

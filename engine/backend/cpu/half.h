// 16-bit floating-point elements as the CPU backend stores them (KV caches, weights):
// bit patterns, widened exactly to float32 (the conversions are in dtype.h).
#pragma once

#include <cstdint>

#include "engine/common/dtype.h"

namespace orca {

struct Fp16 {
  uint16_t bits;
};
struct Bf16 {
  uint16_t bits;
};

inline float ToF32(float x) { return x; }
inline float ToF32(Fp16 x) { return F16ToF32(x.bits); }
inline float ToF32(Bf16 x) { return Bf16ToF32(x.bits); }

}  // namespace orca

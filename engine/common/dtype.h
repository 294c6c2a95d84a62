// Element types of tensors in checkpoints and on devices, and the scalar conversions
// between them. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace orca {

enum class DType { kF32, kF16, kBF16 };

// Returns the size in bytes of one element.
inline size_t DTypeSize(DType t) { return t == DType::kF32 ? 4 : 2; }

// Returns the safetensors / Hugging Face spelling: "F32", "F16", "BF16".
std::string_view DTypeName(DType t);

// Parses "F32"/"F16"/"BF16" (safetensors) or "float32"/"float16"/"bfloat16" (torch_dtype).
absl::StatusOr<DType> ParseDType(std::string_view name);

inline float Bf16ToF32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Rounds to nearest even; NaN stays NaN.
inline uint16_t F32ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float F16ToF32(uint16_t h);
uint16_t F32ToF16(float f);

// Converts `n` elements of type `src_type` at `src` to float32 at `dst`.
void ConvertToF32(const void* src, DType src_type, size_t n, float* dst);
// Converts `n` float32 values to `dst_type` at `dst`.
void ConvertFromF32(const float* src, size_t n, DType dst_type, void* dst);

}  // namespace orca

// The cuBLAS twin (cuda_twin/README.md): host implementations of the cuBLAS calls orca
// makes — handles, stream, math and pointer modes, cublasGemmEx, status names — linked
// instead of libcublas. GemmEx keeps cuBLAS's column-major contract exactly and runs on
// the handle's stream (orca::cuda_twin::Enqueue) as OpenBLAS cblas_sgemm with the
// caller's transposes and leading dimensions, so a layout mistake gives the same wrong
// numbers here as on a GPU. 16-bit inputs are widened to F32 first; reduced-precision
// compute types round the inputs the way the tensor cores would (TF32: 10 mantissa
// bits, round to nearest even).
//
// Differences from cuBLAS, by design: only host pointer mode (alpha and beta are read
// at call time); A, B and C must be twin device memory (else INVALID_VALUE, where a GPU
// would fault later); results differ from a GPU's in the last bits (summation order);
// up to 256 columns, each column of C is computed on its own (RunGemm).
//
// Thread-safe: handles live in a registry guarded by one mutex.
#include <cblas.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "cuda_twin/streams.h"
#include "engine/common/dtype.h"

// The opaque handle type cublas_api.h declares.
struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};

namespace orca::cuda_twin {
namespace {

// Live handles. A destroyed handle is removed (and freed), so using it afterwards reads
// as "not initialized" instead of touching freed memory.
struct HandleRegistry {
  absl::Mutex mu;
  absl::flat_hash_map<cublasContext*, std::unique_ptr<cublasContext>> live ABSL_GUARDED_BY(mu);
};

HandleRegistry& Registry() {
  static HandleRegistry* registry = new HandleRegistry;  // never destroyed: used at exit
  return *registry;
}

// Runs `fn(context)` under the registry lock; NOT_INITIALIZED for a null or dead handle.
template <typename Fn>
cublasStatus_t WithHandle(cublasHandle_t handle, Fn fn) {
  HandleRegistry& r = Registry();
  absl::MutexLock lock(&r.mu);
  auto it = r.live.find(handle);
  if (handle == nullptr || it == r.live.end()) return CUBLAS_STATUS_NOT_INITIALIZED;
  return fn(*it->second);
}

// How the inputs are rounded before the F32 multiply.
enum class InputRounding { kNone, kTf32, kF16, kBf16 };

float RoundTf32(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u) return f;  // Inf and NaN stay as they are
  bits = (bits + 0xfffu + ((bits >> 13) & 1u)) & 0xffffe000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

float Round(float f, InputRounding r) {
  switch (r) {
    case InputRounding::kNone:
      return f;
    case InputRounding::kTf32:
      return RoundTf32(f);
    case InputRounding::kF16:
      return F16ToF32(F32ToF16(f));
    case InputRounding::kBf16:
      return Bf16ToF32(F32ToBf16(f));
  }
  return f;
}

size_t ElementSize(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

float LoadF32(const void* p, cudaDataType t, size_t i) {
  switch (t) {
    case CUDA_R_16F:
      return F16ToF32(static_cast<const uint16_t*>(p)[i]);
    case CUDA_R_16BF:
      return Bf16ToF32(static_cast<const uint16_t*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

void StoreF32(float v, cudaDataType t, void* p, size_t i) {
  switch (t) {
    case CUDA_R_16F:
      static_cast<uint16_t*>(p)[i] = F32ToF16(v);
      break;
    case CUDA_R_16BF:
      static_cast<uint16_t*>(p)[i] = F32ToBf16(v);
      break;
    default:
      static_cast<float*>(p)[i] = v;
  }
}

// Elements from a column-major matrix's first element to its last one read: `rows` x
// `cols` with leading dimension `ld` (0 when the matrix is empty).
size_t Extent(int rows, int cols, int ld) {
  if (rows <= 0 || cols <= 0) return 0;
  return static_cast<size_t>(cols - 1) * static_cast<size_t>(ld) + static_cast<size_t>(rows);
}

bool IsTransposed(cublasOperation_t op) { return op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

// Chooses the input rounding for a supported (types, compute, math mode) combination;
// false when cuBLAS's GemmEx table has no such combination.
bool ChooseRounding(cudaDataType ab_type, cudaDataType c_type, cublasComputeType_t compute,
                    cublasMath_t math, InputRounding* rounding) {
  const bool all_f32 = ab_type == CUDA_R_32F && c_type == CUDA_R_32F;
  const bool half = ab_type == CUDA_R_16F || ab_type == CUDA_R_16BF;
  switch (compute) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC: {
      if (!all_f32 && !(half && (c_type == CUDA_R_32F || c_type == ab_type))) return false;
      *rounding = InputRounding::kNone;
      // The handle's math mode lets cuBLAS use tensor cores for plain F32 compute.
      if (all_f32 && compute == CUBLAS_COMPUTE_32F) {
        const int base = static_cast<int>(math) & 0xf;
        if (base == CUBLAS_TF32_TENSOR_OP_MATH) *rounding = InputRounding::kTf32;
        if (base == CUBLAS_TENSOR_OP_MATH) *rounding = InputRounding::kF16;
      }
      return true;
    }
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      *rounding = InputRounding::kTf32;
      return all_f32;
    case CUBLAS_COMPUTE_32F_FAST_16F:
      *rounding = InputRounding::kF16;
      return all_f32;
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      *rounding = InputRounding::kBf16;
      return all_f32;
    default:
      return false;
  }
}

bool IsKnownAlgo(cublasGemmAlgo_t algo) {
  const int a = static_cast<int>(algo);
  return (a >= CUBLAS_GEMM_DEFAULT && a <= CUBLAS_GEMM_ALGO23) ||
         (a >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP);
}

// One GemmEx call's arguments, validated and copied at call time.
struct Gemm {
  bool trans_a, trans_b;
  int m, n, k;
  float alpha, beta;
  const void* a;
  const void* b;
  void* c;
  cudaDataType ab_type, c_type;
  int lda, ldb, ldc;
  InputRounding rounding;
};

// Widens (and rounds) `elems` elements of `p` to F32; returns `p` itself when no
// conversion is needed.
const float* InputAsF32(const void* p, cudaDataType t, size_t elems, InputRounding r,
                        std::vector<float>* buf) {
  if (t == CUDA_R_32F && r == InputRounding::kNone) return static_cast<const float*>(p);
  buf->resize(elems);
  for (size_t i = 0; i < elems; ++i) (*buf)[i] = Round(LoadF32(p, t, i), r);
  return buf->data();
}

// The device half of GemmEx: runs on the stream's device thread.
cudaError_t RunGemm(const Gemm& g) {
  const int a_rows = g.trans_a ? g.k : g.m, a_cols = g.trans_a ? g.m : g.k;
  const int b_rows = g.trans_b ? g.n : g.k, b_cols = g.trans_b ? g.k : g.n;
  std::vector<float> a_buf, b_buf, c_buf;
  const float* a = InputAsF32(g.a, g.ab_type, Extent(a_rows, a_cols, g.lda), g.rounding, &a_buf);
  const float* b = InputAsF32(g.b, g.ab_type, Extent(b_rows, b_cols, g.ldb), g.rounding, &b_buf);
  float* c = static_cast<float*>(g.c);
  const size_t c_extent = Extent(g.m, g.n, g.ldc);
  if (g.c_type != CUDA_R_32F) {
    // beta == 0 never reads C (it may hold NaN), as BLAS specifies.
    c_buf.assign(c_extent, 0.0f);
    if (g.beta != 0.0f) {
      for (size_t i = 0; i < c_extent; ++i) c_buf[i] = LoadF32(g.c, g.c_type, i);
    }
    c = c_buf.data();
  }
  // OpenBLAS honours beta == 0 without reading C (checked: NaN in C does not propagate).
  // Up to kColumnByColumn columns (tokens: a decode batch), each column of C is its own
  // call, so its sums do not depend on how many columns come with it: OpenBLAS's AVX2
  // (Haswell, Zen) kernels sum a column in an order that does, and a decode padded to
  // its graph's bucket must give the tokens of the same decode run op by op unpadded.
  constexpr int kColumnByColumn = 256;
  const CBLAS_TRANSPOSE ta = g.trans_a ? CblasTrans : CblasNoTrans,
                        tb = g.trans_b ? CblasTrans : CblasNoTrans;
  if (g.n > kColumnByColumn) {
    cblas_sgemm(CblasColMajor, ta, tb, g.m, g.n, g.k, g.alpha, a, g.lda, b, g.ldb, g.beta, c,
                g.ldc);
  } else {
    for (int j = 0; j < g.n; ++j) {
      // Column j of op(B): column j of B, or row j of B stored transposed.
      const float* bj = b + (g.trans_b ? static_cast<size_t>(j)
                                       : static_cast<size_t>(j) * static_cast<size_t>(g.ldb));
      cblas_sgemm(CblasColMajor, ta, tb, g.m, 1, g.k, g.alpha, a, g.lda, bj, g.ldb, g.beta,
                  c + static_cast<size_t>(j) * static_cast<size_t>(g.ldc), g.ldc);
    }
  }
  if (g.c_type != CUDA_R_32F) {
    // Only the m x n block is written back; the padding rows below it are not C's.
    for (int j = 0; j < g.n; ++j) {
      for (int i = 0; i < g.m; ++i) {
        const size_t at = static_cast<size_t>(j) * static_cast<size_t>(g.ldc) + i;
        StoreF32(c_buf[at], g.c_type, g.c, at);
      }
    }
  }
  return cudaSuccess;
}

}  // namespace
}  // namespace orca::cuda_twin

using orca::cuda_twin::Registry;
using orca::cuda_twin::WithHandle;

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto context = std::make_unique<cublasContext>();
  cublasContext* raw = context.get();
  auto& r = Registry();
  absl::MutexLock lock(&r.mu);
  r.live.emplace(raw, std::move(context));
  *handle = raw;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  auto& r = Registry();
  std::unique_ptr<cublasContext> doomed;
  absl::MutexLock lock(&r.mu);
  auto it = r.live.find(handle);
  if (handle == nullptr || it == r.live.end()) return CUBLAS_STATUS_NOT_INITIALIZED;
  // Work already enqueued holds copies of everything it needs, so the handle can go now.
  doomed = std::move(it->second);
  r.live.erase(it);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  return WithHandle(handle, [&](cublasContext& c) {
    c.stream = stream;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  return WithHandle(handle, [&](cublasContext& c) {
    if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *stream = c.stream;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  return WithHandle(handle, [&](cublasContext& c) {
    const int base = static_cast<int>(mode) & 0xf;
    const int flags = static_cast<int>(mode) & ~0xf;
    const bool known_base = base == CUBLAS_DEFAULT_MATH || base == CUBLAS_TENSOR_OP_MATH ||
                            base == CUBLAS_PEDANTIC_MATH || base == CUBLAS_TF32_TENSOR_OP_MATH ||
                            base == CUBLAS_FP32_EMULATED_BF16X9_MATH ||
                            base == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH;
    if (!known_base || (flags & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) != 0) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    c.math = mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  return WithHandle(handle, [&](cublasContext& c) {
    if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = c.math;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  return WithHandle(handle, [&](cublasContext& c) {
    if (mode == CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_NOT_SUPPORTED;  // twin limit
    if (mode != CUBLAS_POINTER_MODE_HOST) return CUBLAS_STATUS_INVALID_VALUE;
    c.pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  return WithHandle(handle, [&](cublasContext& c) {
    if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = c.pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
  using namespace orca::cuda_twin;
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasStatus_t s = WithHandle(handle, [&](cublasContext& c) {
    stream = c.stream;
    math = c.math;
    return CUBLAS_STATUS_SUCCESS;
  });
  if (s != CUBLAS_STATUS_SUCCESS) return s;

  const auto known_op = [](cublasOperation_t op) {
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
  };
  if (!known_op(transa) || !known_op(transb) || !IsKnownAlgo(algo)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  Gemm g{};
  g.trans_a = IsTransposed(transa);
  g.trans_b = IsTransposed(transb);
  const int a_rows = g.trans_a ? k : m, a_cols = g.trans_a ? m : k;
  const int b_rows = g.trans_b ? n : k, b_cols = g.trans_b ? k : n;
  if (m < 0 || n < 0 || k < 0 || lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) ||
      ldc < std::max(1, m) || alpha == nullptr || beta == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (Atype != Btype) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!ChooseRounding(Atype, Ctype, computeType, math, &g.rounding)) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;  // nothing to compute or write

  const size_t ab_size = ElementSize(Atype);
  const size_t a_bytes = Extent(a_rows, a_cols, lda) * ab_size;
  const size_t b_bytes = Extent(b_rows, b_cols, ldb) * ab_size;
  const size_t c_bytes = Extent(m, n, ldc) * ElementSize(Ctype);
  if ((a_bytes > 0 && !IsDeviceRange(A, a_bytes)) || (b_bytes > 0 && !IsDeviceRange(B, b_bytes)) ||
      !IsDeviceRange(C, c_bytes)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }

  // Host pointer mode: the scalars are read now, the matrices when the stream runs.
  g.m = m;
  g.n = n;
  g.k = k;
  std::memcpy(&g.alpha, alpha, sizeof(float));
  std::memcpy(&g.beta, beta, sizeof(float));
  g.a = A;
  g.b = B;
  g.c = C;
  g.ab_type = Atype;
  g.c_type = Ctype;
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  if (Enqueue(stream, [g]() { return RunGemm(g); }) != cudaSuccess) {
    return CUBLAS_STATUS_EXECUTION_FAILED;  // a destroyed or unknown stream
  }
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "error detected trying to check the license";
  }
  return "unknown error";
}

}  // extern "C"

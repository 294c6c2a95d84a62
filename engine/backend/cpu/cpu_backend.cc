// The CPU backend: packed-panel GEMMs for float32 linear weights and, on AVX2 and AVX-512
// CPUs, 16-bit ones (packed_gemm.h, packed_gemm_bf16.h; packed once at load), OpenBLAS
// and oneDNN for the others, a thread pool for attention and
// element-wise work. Computes in float32; weights are float32, float16 or bfloat16
// (16-bit ones are widened exactly where they are read: small_gemm.h, Linear), the KV
// cache float32, float16 or bfloat16 (attention_kernel.h). It is also the reference
// every CUDA kernel is checked against.
#include <cblas.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/backend/backend.h"
#include "engine/backend/cpu/activation_kernel.h"
#include "engine/backend/cpu/attention_kernel.h"
#include "engine/backend/cpu/norm_kernel.h"
#include "engine/backend/cpu/onednn_gemm.h"
#include "engine/backend/cpu/packed_gemm.h"
#include "engine/backend/cpu/packed_gemm_bf16.h"
#include "engine/backend/cpu/small_gemm.h"
#include "engine/common/cpu_limit.h"
#include "engine/common/status_macros.h"
#include "engine/common/thread_pool.h"

namespace orca {
namespace {

class HostBuffer : public DeviceBuffer {
 public:
  explicit HostBuffer(size_t bytes) : bytes_(bytes) {
    // 64-byte alignment for vector loads; round the size up as aligned_alloc requires.
    // Buffers of a huge page or more (weights, the KV cache, which every decode
    // iteration streams) are aligned to huge pages and asked to be backed by them
    // (transparent huge pages, where the kernel allows them): a decode's reads jump
    // between KV blocks that 4 KiB pages would each cost a TLB miss.
    const size_t align = bytes >= kHugePage ? kHugePage : 64;
    const size_t rounded = (std::max<size_t>(bytes, 1) + align - 1) / align * align;
    data_ = std::aligned_alloc(align, rounded);
    if (data_ != nullptr && align == kHugePage) madvise(data_, rounded, MADV_HUGEPAGE);
  }
  ~HostBuffer() override { std::free(data_); }
  void* data() override { return data_; }
  size_t size() const override { return bytes_; }
  bool ok() const { return data_ != nullptr; }

 private:
  static constexpr size_t kHugePage = size_t{2} << 20;
  void* data_;
  size_t bytes_;
};

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(int num_threads) : pool_(num_threads) {
    if (OneDnnBf16Gemm::Available()) onednn_ = std::make_unique<OneDnnBf16Gemm>(num_threads);
  }

  std::string name() const override { return "cpu"; }
  bool SupportsWeightDType(DType) const override { return true; }
  bool SupportsKvCacheDType(DType) const override { return true; }

  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) override {
    auto buf = std::make_unique<HostBuffer>(bytes);
    if (!buf->ok()) {
      return absl::ResourceExhaustedError(absl::StrCat("cpu: cannot allocate ", bytes, " bytes"));
    }
    return std::unique_ptr<DeviceBuffer>(std::move(buf));
  }
  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }

  // float32 weights are packed into panels (packed_gemm.h): at 16 rows 2-3.5x the rate of
  // the row-major kernels, and above sgemm's at prefill sizes on AVX-512 (docs/benchmarks.md);
  // float16 ones into the same panels where the CPU has AVX2 or AVX-512 (widened in
  // registers), and so bfloat16 ones (packed_gemm_bf16.h: bfloat16 products from 8 rows
  // where it has AVX512_BF16). ORCA_CPU_PACKED=0 keeps them
  // row-major (benchmarks compare the two in one build).
  absl::StatusOr<Tensor> UploadLinearWeight(const void* host, DType dtype, int64_t rows,
                                            int64_t cols,
                                            std::unique_ptr<DeviceBuffer>* storage) override {
    if (!Packs(dtype)) return Backend::UploadLinearWeight(host, dtype, rows, cols, storage);
    if (dtype == DType::kBF16) {
      ORCA_ASSIGN_OR_RETURN(
          *storage, Allocate(static_cast<size_t>(PackedWeightBf16Elements(rows, cols)) * 2));
      PackWeightsBf16(static_cast<const uint16_t*>(host), rows, cols,
                      static_cast<uint16_t*>((*storage)->data()));
    } else if (dtype == DType::kF16) {
      ORCA_ASSIGN_OR_RETURN(*storage,
                            Allocate(static_cast<size_t>(PackedWeightFloats(rows, cols)) * 2));
      PackWeightsF16(static_cast<const uint16_t*>(host), rows, cols,
                     static_cast<uint16_t*>((*storage)->data()));
    } else {
      ORCA_ASSIGN_OR_RETURN(*storage,
                            Allocate(static_cast<size_t>(PackedWeightFloats(rows, cols)) * 4));
      PackWeights(static_cast<const float*>(host), rows, cols,
                  static_cast<float*>((*storage)->data()));
    }
    return Tensor{(*storage)->data(), dtype, rows, cols, 0, TensorLayout::kPackedPanels};
  }
  // Whether UploadLinearWeight packs weights of `dtype`.
  static bool Packs(DType dtype) {
    static const bool enabled = [] {
      const char* env = std::getenv("ORCA_CPU_PACKED");
      return env == nullptr || std::strcmp(env, "0") != 0;
    }();
    return enabled && (dtype == DType::kF32 || CpuSimdLevel() >= SimdLevel::kAvx2);
  }

  MemoryInfo GetMemoryInfo() const override {
    MemoryInfo info;
    std::ifstream in("/proc/meminfo");
    std::string key;
    size_t value;
    std::string unit;
    while (in >> key >> value >> unit) {
      if (key == "MemTotal:") info.total_bytes = value * 1024;
      if (key == "MemAvailable:") info.free_bytes = value * 1024;
    }
    return info;
  }

  void Embedding(const int32_t* ids, int64_t n, const Tensor& table, Tensor out,
                 bool accumulate) override {
    const int64_t h = table.cols;
    // Rows that are not contiguous float32 in the table are copied out through `row`.
    const bool in_place = table.dtype == DType::kF32 && table.layout == TensorLayout::kRowMajor;
    std::vector<float> row(in_place ? 0 : static_cast<size_t>(h));
    for (int64_t i = 0; i < n; ++i) {
      const size_t first = static_cast<size_t>(ids[i]) * static_cast<size_t>(h);
      const float* src = row.data();
      if (table.layout == TensorLayout::kPackedPanels && table.dtype == DType::kBF16) {
        UnpackWeightRowBf16(static_cast<const uint16_t*>(table.data), h, ids[i], row.data());
      } else if (table.layout == TensorLayout::kPackedPanels && table.dtype == DType::kF16) {
        UnpackWeightRowF16(static_cast<const uint16_t*>(table.data), h, ids[i], row.data());
      } else if (table.layout == TensorLayout::kPackedPanels) {  // a tied LM head
        UnpackWeightRow(table.f32(), h, ids[i], row.data());
      } else if (table.dtype == DType::kF32) {
        src = table.f32() + first;
      } else {  // a 16-bit table, widened row by row
        ConvertToF32(static_cast<const char*>(table.data) + first * DTypeSize(table.dtype),
                     table.dtype, row.size(), row.data());
      }
      float* dst = out.f32() + i * h;
      if (accumulate) {
        for (int64_t j = 0; j < h; ++j) dst[j] += src[j];
      } else {
        std::memcpy(dst, src, h * sizeof(float));
      }
    }
  }

  // On AVX2 CPUs (not AVX-512), packed weights of any type from kAvx2SgemmMinRows rows
  // through sgemm over unpacked chunks (WidenedGemm); otherwise:
  // float32 weights: packed ones through PackedGemm at every size; row-major ones (a
  // table serving as LM head where packing is off, tests) through OpenBLAS (sgemv for one
  // row, sgemm from 17), SmallGemm between.
  // 16-bit weights (stored as the checkpoint has them, half the bytes to stream): packed
  // float16 ones through PackedGemmF16 at every size; packed bfloat16 ones through
  // PackedGemmBf16 at every size (bfloat16 products from
  // kPackedBf16DotMinRows rows where the CPU has them); row-major bfloat16 ones from
  // kOneDnnBf16MinRows rows go through oneDNN where the CPU multiplies bfloat16 pairs
  // (onednn_gemm.h: activations rounded to bfloat16, about 2x sgemm's rate); the rest through
  // SmallGemm up to 16 rows (widening in registers) and WidenedGemm beyond, both in float32
  // arithmetic.
  void Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) override {
    const int m = static_cast<int>(x.rows), k = static_cast<int>(x.cols),
              n = static_cast<int>(w.rows);
    if (m == 0) return;
    float beta = 0.0f;
    const int lda = static_cast<int>(x.ld()), ldc = static_cast<int>(out.ld());
    const float* b = bias ? bias->f32() : nullptr;
    const ParallelForFn spread = [this, m, n, k](int64_t tasks,
                                                 const std::function<void(int64_t)>& fn) {
      ParallelFor(tasks, int64_t{m} * n * k, fn);
    };
    if (w.layout == TensorLayout::kPackedPanels && m >= kAvx2SgemmMinRows &&
        CpuSimdLevel() == SimdLevel::kAvx2) {
      WidenedGemm(x, w, b, out);
      return;
    }
    if (w.layout == TensorLayout::kPackedPanels && w.dtype == DType::kBF16) {
      PackedGemmBf16(m, n, k, x.f32(), lda, static_cast<const uint16_t*>(w.data), b, out.f32(), ldc,
                     spread);
      return;
    }
    if (w.layout == TensorLayout::kPackedPanels && w.dtype == DType::kF16) {
      PackedGemmF16(m, n, k, x.f32(), lda, static_cast<const uint16_t*>(w.data), b, out.f32(), ldc,
                    spread);
      return;
    }
    if (w.layout == TensorLayout::kPackedPanels) {
      PackedGemm(m, n, k, x.f32(), lda, w.f32(), b, out.f32(), ldc, spread);
      return;
    }
    if (w.dtype != DType::kF32) {
      if (w.dtype == DType::kBF16 && m >= kOneDnnBf16MinRows && onednn_ != nullptr &&
          onednn_->Run(m, n, k, x.f32(), lda, static_cast<const uint16_t*>(w.data), b, out.f32(),
                       ldc)) {
        return;
      }
      if (m <= kSmallGemmMaxRows && w.dtype == DType::kBF16) {
        SmallGemm(m, n, k, x.f32(), lda, static_cast<const Bf16*>(w.data), b, out.f32(), ldc,
                  spread);
      } else if (m <= kSmallGemmMaxRows) {
        SmallGemm(m, n, k, x.f32(), lda, static_cast<const Fp16*>(w.data), b, out.f32(), ldc,
                  spread);
      } else {
        WidenedGemm(x, w, b, out);
      }
      return;
    }
    if (m >= 2 && m <= kSmallGemmMaxRows) {  // decode batches: stream the weights once
      SmallGemm(m, n, k, x.f32(), lda, w.f32(), b, out.f32(), ldc, spread);
      return;
    }
    if (bias != nullptr) {
      for (int i = 0; i < m; ++i)
        std::memcpy(out.f32() + int64_t{i} * ldc, bias->f32(), n * sizeof(float));
      beta = 1.0f;
    }
    if (m == 1) {
      cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w.f32(), k, x.f32(), 1, beta, out.f32(),
                  1);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x.f32(), lda, w.f32(), k,
                  beta, out.f32(), ldc);
    }
  }

  void Add(Tensor x, const Tensor& y) override {
    const int64_t n = x.rows * x.cols;
    float* a = x.f32();
    const float* b = y.f32();
    for (int64_t i = 0; i < n; ++i) a[i] += b[i];
  }

  // Rows in parallel, each by NormRow (sums in float64 on SIMD lanes). The fused forms
  // add a row's delta and normalize it while it is in L1.
  void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) override {
    NormRows(x, nullptr, weight, nullptr, eps, out);
  }
  void LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                 Tensor out) override {
    NormRows(x, nullptr, weight, &bias, eps, out);
  }
  void AddRmsNorm(Tensor residual, const Tensor& delta, const Tensor& weight, float eps,
                  Tensor out) override {
    NormRows(residual, &delta, weight, nullptr, eps, out);
  }
  void AddLayerNorm(Tensor residual, const Tensor& delta, const Tensor& weight, const Tensor& bias,
                    float eps, Tensor out) override {
    NormRows(residual, &delta, weight, &bias, eps, out);
  }

  // The angles' cosines and sines come from a table of every position seen so far
  // (RopeTableFor), computed once as they were per token: in double (positions reach 1e5
  // and float angles lose ~1e-3 there), rounded to float.
  void Rope(Tensor x, const int32_t* positions, int32_t num_heads, int32_t head_dim,
            double theta) override {
    const int32_t half = head_dim / 2;
    int32_t max_pos = 0;
    for (int64_t t = 0; t < x.rows; ++t) max_pos = std::max(max_pos, positions[t]);
    const float* table = RopeTableFor(theta, head_dim, max_pos);
    ParallelFor(x.rows, x.rows * num_heads * head_dim * 4, [&](int64_t t) {
      RopeRow(x.f32() + t * x.ld(), num_heads, head_dim,
              table + int64_t{std::max(positions[t], 0)} * 2 * half);
    });
  }

  void GatedActivation(const Tensor& gate_up, Activation act, Tensor out) override {
    const int64_t inter = out.cols;
    ParallelFor(gate_up.rows, gate_up.rows * inter * 16, [&](int64_t r) {
      const float* g = gate_up.f32() + r * gate_up.cols;
      const float* u = g + inter;
      float* o = out.f32() + r * inter;
      ActivationRow(g, u, inter, act, o);
    });
  }

  void ActivationInPlace(Tensor x, Activation act) override {
    ParallelFor(x.rows, x.rows * x.cols * 16, [&](int64_t r) {
      float* v = x.f32() + r * x.cols;
      ActivationRow(v, nullptr, x.cols, act, v);
    });
  }

  void KvWrite(const Tensor& k, const Tensor& v, const int32_t* slot_mapping,
               const KvCacheShape& shape, Tensor k_cache, Tensor v_cache) override {
    switch (shape.dtype) {
      case DType::kF32:
        return KvWriteAs<float>(k, v, slot_mapping, shape, k_cache, v_cache);
      case DType::kF16:
        return KvWriteAs<Fp16>(k, v, slot_mapping, shape, k_cache, v_cache);
      case DType::kBF16:
        return KvWriteAs<Bf16>(k, v, slot_mapping, shape, k_cache, v_cache);
    }
  }

  void Attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                 const AttentionBatch& batch, const KvCacheShape& shape, int32_t num_heads,
                 float scale, Tensor out) override {
    switch (shape.dtype) {
      case DType::kF32:
        return AttentionAs<float>(q, k_cache, v_cache, batch, shape, num_heads, scale, out);
      case DType::kF16:
        return AttentionAs<Fp16>(q, k_cache, v_cache, batch, shape, num_heads, scale, out);
      case DType::kBF16:
        return AttentionAs<Bf16>(q, k_cache, v_cache, batch, shape, num_heads, scale, out);
    }
  }

  void GatherRows(const Tensor& x, const int32_t* rows, int64_t n, Tensor out) override {
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(out.f32() + i * x.cols, x.f32() + int64_t{rows[i]} * x.ld(),
                  x.cols * sizeof(float));
    }
  }

 private:
  template <typename T>
  void KvWriteAs(const Tensor& k, const Tensor& v, const int32_t* slot_mapping,
                 const KvCacheShape& shape, Tensor k_cache, Tensor v_cache) {
    const int32_t d = shape.head_dim;
    T* kc = static_cast<T*>(k_cache.data);
    T* vc = static_cast<T*>(v_cache.data);
    // Tokens in parallel: each has its own slot (a prefill's 8,192 rows took 0.08 s on
    // one thread; docs/benchmarks.md section 24).
    ParallelFor(k.rows, k.rows * shape.num_kv_heads * d * 8, [&](int64_t t) {
      const float* kt = k.f32() + t * k.ld();
      const float* vt = v.f32() + t * v.ld();
      for (int32_t h = 0; h < shape.num_kv_heads; ++h) {
        const int64_t at = shape.Offset(slot_mapping[t], h);
        StoreKvRow(kt + int64_t{h} * d, d, kc + at);
        StoreKvRow(vt + int64_t{h} * d, d, vc + at);
      }
    });
  }

  // A decode iteration (one query row per sequence): one task per sequence and run of
  // kv heads, each reading its blocks' heads as one stream (AttendDecodeHeads); as many
  // heads a run as leave every thread two tasks or more. 1.4-1.7x one head at a time
  // on a 302 MB cache (AMD EPYC, Zen 4; docs/benchmarks.md section 18).
  template <typename T>
  void DecodeAttentionAs(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                         const AttentionBatch& batch, const KvCacheShape& shape, int32_t num_heads,
                         float scale, Tensor out) {
    const int32_t d = shape.head_dim, kv_heads = shape.num_kv_heads;
    const int32_t group = num_heads / kv_heads;
    const int64_t runs_wanted =
        (2 * int64_t{pool_.num_threads()} + batch.num_seqs - 1) / batch.num_seqs;
    const int32_t runs = static_cast<int32_t>(std::clamp<int64_t>(runs_wanted, 1, kv_heads));
    const int32_t run_heads = (kv_heads + runs - 1) / runs;
    const T* kc = static_cast<const T*>(k_cache.data);
    const T* vc = static_cast<const T*>(v_cache.data);
    const int64_t work = int64_t{batch.num_seqs} * num_heads * batch.max_kv_len * d * 4;
    ParallelFor(int64_t{batch.num_seqs} * runs, work, [&](int64_t task) {
      const int32_t s = static_cast<int32_t>(task / runs);
      const int32_t first_kvh = static_cast<int32_t>(task % runs) * run_heads;
      const int32_t heads = std::min(run_heads, kv_heads - first_kvh);
      if (heads <= 0) return;
      const int32_t kv_len = batch.kv_len[s];
      const int32_t blocks = (kv_len + shape.block_size - 1) / shape.block_size;
      const int32_t* table = batch.block_tables + int64_t{s} * batch.max_blocks_per_seq;
      thread_local std::vector<const void*> kblock_buf, vblock_buf;
      thread_local std::vector<float> scores;
      kblock_buf.resize(static_cast<size_t>(blocks));
      vblock_buf.resize(static_cast<size_t>(blocks));
      scores.resize(static_cast<size_t>(heads) * group * kv_len);
      const T** kblock = reinterpret_cast<const T**>(kblock_buf.data());
      const T** vblock = reinterpret_cast<const T**>(vblock_buf.data());
      for (int32_t b = 0; b < blocks; ++b) {
        const int64_t first = shape.Offset(int64_t{table[b]} * shape.block_size, first_kvh);
        kblock[b] = kc + first;
        vblock[b] = vc + first;
      }
      const int64_t row = batch.query_start[s];
      const int64_t first_head = int64_t{first_kvh} * group;
      DecodeHeads<T> a;
      a.head_dim = d;
      a.num_heads = heads * group;
      a.group = group;
      a.kv_len = kv_len;
      a.block_size = shape.block_size;
      a.kblock = kblock;
      a.vblock = vblock;
      a.head_stride = int64_t{shape.block_size} * d;
      a.q = q.f32() + row * q.ld() + first_head * d;
      a.scale = scale;
      a.out = out.f32() + row * out.cols + first_head * d;
      AttendDecodeHeads(a, scores.data());
    });
  }

  // One task per (sequence, kv head) when there are enough of them to share the
  // threads: the query heads of the kv head run one after another over the same keys
  // and values, which stay in cache between them. Otherwise one task per query head.
  template <typename T>
  void AttentionAs(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                   const AttentionBatch& batch, const KvCacheShape& shape, int32_t num_heads,
                   float scale, Tensor out) {
    if (batch.max_query_len == 1 && CpuSimdLevel() >= SimdLevel::kAvx2) {
      return DecodeAttentionAs<T>(q, k_cache, v_cache, batch, shape, num_heads, scale, out);
    }
    const int32_t d = shape.head_dim, kv_heads = shape.num_kv_heads;
    const int32_t group = num_heads / kv_heads;
    const int32_t heads_per_task =
        int64_t{batch.num_seqs} * kv_heads >= 2 * int64_t{pool_.num_threads()} ? group : 1;
    const int32_t tasks_per_seq = num_heads / heads_per_task;
    const T* kc = static_cast<const T*>(k_cache.data);
    const T* vc = static_cast<const T*>(v_cache.data);
    const AttentionProducts products =
        batch.bf16_products ? AttentionProducts::kBf16Allowed : AttentionProducts::kFloat32;
    // Work estimate: every query row reads at most max_kv_len keys and values.
    const int64_t work = q.rows * int64_t{num_heads} * batch.max_kv_len * d * 4;
    ParallelFor(int64_t{batch.num_seqs} * tasks_per_seq, work, [&](int64_t task) {
      const int32_t s = static_cast<int32_t>(task / tasks_per_seq);
      const int32_t first_head = static_cast<int32_t>(task % tasks_per_seq) * heads_per_task;
      const int32_t kvh = first_head / group;
      const int32_t q_begin = batch.query_start[s];
      const int32_t q_len = batch.query_start[s + 1] - q_begin;
      const int32_t kv_len = batch.kv_len[s];
      const int32_t* table = batch.block_tables + int64_t{s} * batch.max_blocks_per_seq;
      // Per-thread scratch, grown as needed and kept for later iterations.
      thread_local std::vector<const void*> krow_buf, vrow_buf;
      thread_local std::vector<float> scores;
      if (krow_buf.size() < static_cast<size_t>(kv_len)) {
        krow_buf.resize(kv_len);
        vrow_buf.resize(kv_len);
        scores.resize(kv_len);
      }
      const T** krow = reinterpret_cast<const T**>(krow_buf.data());
      const T** vrow = reinterpret_cast<const T**>(vrow_buf.data());
      // A block's rows of one head lie one after another (KvCacheShape::Offset): one
      // offset per block, not a division per key (which cost as much as the attention
      // itself at 512-token contexts).
      for (int32_t j = 0, b = 0; j < kv_len; ++b) {
        const int64_t first = shape.Offset(int64_t{table[b]} * shape.block_size, kvh);
        const int32_t rows = std::min(shape.block_size, kv_len - j);
        for (int32_t t = 0; t < rows; ++t, ++j) {
          krow[j] = kc + first + int64_t{t} * d;
          vrow[j] = vc + first + int64_t{t} * d;
        }
      }
      for (int32_t h = first_head; h < first_head + heads_per_task; ++h) {
        AttendOneHead(d, q_len, kv_len, q.f32() + int64_t{q_begin} * q.ld() + int64_t{h} * d,
                      q.ld(), krow, vrow, scale, scores.data(),
                      out.f32() + int64_t{q_begin} * out.cols + int64_t{h} * d, out.cols,
                      CpuSimdLevel(), products);
      }
    });
  }

  // out = x * w^T (+ bias) for row-major 16-bit w and more rows than SmallGemm takes,
  // and for packed w of any type from kAvx2SgemmMinRows rows on AVX2 CPUs: w is made
  // row-major float32 a chunk of rows at a time (16-bit rows widened, panels unpacked;
  // 16 MiB or more, every core making its share) and each chunk goes through sgemm, so
  // the conversion is paid once per weight row per call. Panels are transposed whole in
  // registers (UnpackWeightRows): unpacked a row at a time they took a fifth of a
  // 512-row chunk's GEMM time on a Zen 3 (docs/benchmarks.md section 29).
  void WidenedGemm(const Tensor& x, const Tensor& w, const float* bias, Tensor out) {
    const int m = static_cast<int>(x.rows), k = static_cast<int>(x.cols),
              n = static_cast<int>(w.rows);
    const int lda = static_cast<int>(x.ld()), ldc = static_cast<int>(out.ld());
    // Chunks of 4 Mi elements (16 MiB of float32; llama-110m's qkv and gate+up weights
    // whole) and at least 256 rows: sgemm over fewer output columns loses its rate (on a
    // Zen 3, a 4096 x 768 weight against 512-8192 rows ran at 0.8-0.9x in chunks of 1360
    // rows, the 4 MiB chunks this used before). Tasks of 16 rows: one packed panel each.
    constexpr int64_t kPanelElements = int64_t{1} << 22;
    constexpr int64_t kRowsPerTask = kPanelRows;
    const int64_t panel_rows =
        std::max<int64_t>(256, kPanelElements / std::max(k, 1)) / kRowsPerTask * kRowsPerTask;
    panel_.resize(static_cast<size_t>(std::min<int64_t>(panel_rows, n) * k));
    for (int64_t n0 = 0; n0 < n; n0 += panel_rows) {
      const int64_t rows = std::min<int64_t>(panel_rows, n - n0);
      ParallelFor((rows + kRowsPerTask - 1) / kRowsPerTask, rows * k, [&](int64_t t) {
        const int64_t r0 = t * kRowsPerTask, r1 = std::min(rows, r0 + kRowsPerTask);
        MakeRowsF32(w, n0 + r0, r1 - r0, panel_.data() + r0 * k);
      });
      float beta = 0.0f;
      if (bias != nullptr) {
        for (int i = 0; i < m; ++i) {
          std::memcpy(out.f32() + int64_t{i} * ldc + n0, bias + n0,
                      static_cast<size_t>(rows) * sizeof(float));
        }
        beta = 1.0f;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, static_cast<int>(rows), k, 1.0f,
                  x.f32(), lda, panel_.data(), k, beta, out.f32() + n0, ldc);
    }
  }

  // dst = rows [first, first + count) of the weight w (packed panels, or row-major 16-bit)
  // as row-major float32.
  static void MakeRowsF32(const Tensor& w, int64_t first, int64_t count, float* dst) {
    const int64_t k = w.cols;
    if (w.layout == TensorLayout::kPackedPanels) {
      if (w.dtype == DType::kBF16) {
        for (int64_t j = 0; j < count; ++j) {
          UnpackWeightRowBf16(static_cast<const uint16_t*>(w.data), k, first + j, dst + j * k);
        }
      } else if (w.dtype == DType::kF16) {
        UnpackWeightRowsF16(static_cast<const uint16_t*>(w.data), k, first, count, dst);
      } else {
        UnpackWeightRows(w.f32(), k, first, count, dst);
      }
    } else if (w.dtype == DType::kBF16) {
      WidenToF32(static_cast<const Bf16*>(w.data) + first * k, count * k, dst);
    } else {
      WidenToF32(static_cast<const Fp16*>(w.data) + first * k, count * k, dst);
    }
  }

  // Spreads fn over the pool only when the work (in rough flops) pays for the hand-off;
  // small iterations run on the calling thread.
  void ParallelFor(int64_t n, int64_t work, const std::function<void(int64_t)>& fn) {
    constexpr int64_t kMinParallelWork = 1 << 18;
    if (work < kMinParallelWork) {
      for (int64_t i = 0; i < n; ++i) fn(i);
    } else {
      pool_.ParallelFor(n, fn);
    }
  }

  // out = norm(x (+= delta, where given)) * weight: LayerNorm (+ bias) where bias is given,
  // RMSNorm otherwise.
  void NormRows(const Tensor& x, const Tensor* delta, const Tensor& weight, const Tensor* bias,
                float eps, Tensor out) {
    const int64_t h = x.cols;
    ParallelFor(x.rows, x.rows * h * 8, [&](int64_t r) {
      NormRow(x.f32() + r * h, delta != nullptr ? delta->f32() + r * h : nullptr, weight.f32(),
              bias != nullptr ? bias->f32() : nullptr, eps, h, out.f32() + r * h);
    });
  }

  // Rope's table for positions [0, max_pos]: per position, cos(pos * f_i) then
  // sin(pos * f_i) for i in [0, head_dim / 2), f_i = theta^(-2i / head_dim), in double
  // and rounded to float. Grown (at least doubling) when a later position needs it;
  // rebuilt when theta or head_dim change.
  const float* RopeTableFor(double theta, int32_t head_dim, int32_t max_pos) {
    const int32_t half = head_dim / 2;
    if (theta != rope_theta_ || head_dim != rope_head_dim_) {
      rope_theta_ = theta;
      rope_head_dim_ = head_dim;
      rope_positions_ = 0;
      rope_table_.clear();
    }
    if (max_pos >= rope_positions_) {
      const int32_t from = rope_positions_;
      const int64_t want = std::max<int64_t>({int64_t{max_pos} + 1, 2 * int64_t{from}, 256});
      rope_positions_ = static_cast<int32_t>(std::min<int64_t>(want, INT32_MAX));
      rope_table_.resize(static_cast<size_t>(rope_positions_) * 2 * half);
      std::vector<double> inv_freq(half);
      for (int32_t i = 0; i < half; ++i) inv_freq[i] = std::pow(theta, -2.0 * i / head_dim);
      ParallelFor(rope_positions_ - from, int64_t{rope_positions_ - from} * half * 64,
                  [&](int64_t p) {
                    const int64_t pos = from + p;
                    float* cos_v = rope_table_.data() + pos * 2 * half;
                    for (int32_t i = 0; i < half; ++i) {
                      const double angle = static_cast<double>(pos) * inv_freq[i];
                      cos_v[i] = static_cast<float>(std::cos(angle));
                      cos_v[half + i] = static_cast<float>(std::sin(angle));
                    }
                  });
    }
    return rope_table_.data();
  }

  ThreadPool pool_;
  double rope_theta_ = 0;
  int32_t rope_head_dim_ = 0;
  int32_t rope_positions_ = 0;              // positions rope_table_ holds
  std::vector<float> rope_table_;           // RopeTableFor's
  std::vector<float> panel_;                // WidenedGemm's widened weight rows
  std::unique_ptr<OneDnnBf16Gemm> onednn_;  // where OneDnnBf16Gemm::Available()
};

}  // namespace

std::unique_ptr<Backend> CreateCpuBackend(int num_threads) {
  // OpenBLAS starts one thread per core of the node by default; a container's CPU
  // limit, several ranks or a --threads limit would be oversubscribed by its spinning
  // threads.
  if (num_threads <= 0) num_threads = AvailableCpus();
  openblas_set_num_threads(num_threads);
  return std::make_unique<CpuBackend>(num_threads);
}

}  // namespace orca

// The CUDA runtime API of the twin: the entry points orca (and its tests and
// benchmarks) call, with the toolkit's own declarations (cuda_runtime_api.h). Each
// checks its arguments as CUDA documents, records failures as the thread's last error
// (runtime_internal.h), and puts device work on a stream (streams.h).
//
// Copies follow CUDA's host-synchronisation rules: a host-to-device copy from pageable
// memory returns once the source has been staged (the caller may reuse it); from
// pinned memory it reads the source when the stream gets there; a device-to-host copy
// into pageable memory returns once complete; into pinned memory it is asynchronous.
// A copy or memset whose device side is not inside one live allocation, or whose
// `kind` contradicts where its pointers live, fails with cudaErrorInvalidValue here,
// where a GPU would fault or corrupt memory later.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "cuda_twin/memory.h"
#include "cuda_twin/runtime_internal.h"
#include "cuda_twin/streams.h"
#include "cuda_twin/twin_config.h"

// A captured graph and its executable form: the work recorded from the stream, in order
// (the twin captures one stream, so a graph is a chain).
struct CUgraph_st {
  std::vector<orca::cuda_twin::DeviceWork> work;
};
struct CUgraphExec_st {
  std::vector<orca::cuda_twin::DeviceWork> work;
};

namespace orca::cuda_twin {
namespace {

constexpr size_t kSharedPerBlock = 48 * 1024;

cudaError_t CheckInit() {
  if (!Config().error.empty()) return cudaErrorInitializationError;
  if (Config().devices == 0) return cudaErrorNoDevice;
  return ValidDevice(CurrentDevice()) ? cudaSuccess : cudaErrorInvalidDevice;
}

enum class Where { kDevice, kPinned, kPageable };

Where Locate(const void* p, size_t bytes) {
  if (IsDeviceRange(p, bytes)) return Where::kDevice;
  if (IsPinnedRange(p, bytes)) return Where::kPinned;
  return Where::kPageable;
}

void Report(const char* call, const char* what) {
  std::fprintf(stderr, "orca CUDA twin: %s: %s\n", call, what);
}

// A pointer is device memory when any of its bytes is: then all of them must be.
bool PartlyDevice(const void* p, size_t bytes) {
  return DeviceOfPointer(p) >= 0 ||
         (bytes > 0 && DeviceOfPointer(static_cast<const char*>(p) + bytes - 1) >= 0);
}

cudaError_t Copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream,
                 bool synchronous, const char* call) {
  if (cudaError_t e = CheckInit(); e != cudaSuccess) return e;
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  const Where d = Locate(dst, bytes), s = Locate(src, bytes);
  if ((d != Where::kDevice && PartlyDevice(dst, bytes)) ||
      (s != Where::kDevice && PartlyDevice(src, bytes))) {
    Report(call, "a range runs past the end of its device allocation");
    return cudaErrorInvalidValue;
  }
  // A graph replays a copy later: pageable host memory cannot be captured.
  if (!synchronous && IsCapturing(stream) && (d == Where::kPageable || s == Where::kPageable)) {
    Report(call, "a copy to or from pageable host memory while the stream captures");
    return RefuseInCapture(stream);
  }
  const bool dst_device = d == Where::kDevice, src_device = s == Where::kDevice;
  bool ok = true;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      ok = !src_device && dst_device;
      break;
    case cudaMemcpyDeviceToHost:
      ok = src_device && !dst_device;
      break;
    case cudaMemcpyDeviceToDevice:
      ok = src_device && dst_device;
      break;
    case cudaMemcpyHostToHost:
      ok = !src_device && !dst_device;
      break;
    case cudaMemcpyDefault:
      break;
    default:
      return cudaErrorInvalidMemcpyDirection;
  }
  if (!ok) {
    Report(call, "the copy's kind contradicts where its pointers live (host vs device)");
    return cudaErrorInvalidValue;
  }
  if (!src_device && s == Where::kPageable && !synchronous) {
    // Staged now: the caller may reuse a pageable source as soon as the call returns.
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + bytes);
    return Enqueue(stream, [dst, staged] {
      std::memcpy(dst, staged->data(), staged->size());
      return cudaSuccess;
    });
  }
  auto work = [dst, src, bytes] {
    std::memcpy(dst, src, bytes);
    return cudaSuccess;
  };
  if (synchronous || (!dst_device && d == Where::kPageable)) return RunAndWait(stream, work);
  return Enqueue(stream, work);
}

cudaError_t Memset(void* ptr, int value, size_t bytes, cudaStream_t stream, bool synchronous) {
  if (cudaError_t e = CheckInit(); e != cudaSuccess) return e;
  if (bytes == 0) return cudaSuccess;
  if (!IsDeviceRange(ptr, bytes)) {
    Report("cudaMemset", "the range is not inside one device allocation");
    return cudaErrorInvalidValue;
  }
  auto work = [ptr, value, bytes] {
    std::memset(ptr, value, bytes);
    return cudaSuccess;
  };
  return synchronous ? RunAndWait(stream, work) : Enqueue(stream, work);
}

struct MemPool {
  int device;
};

}  // namespace
}  // namespace orca::cuda_twin

using namespace orca::cuda_twin;  // NOLINT: the C API below is the twin's

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Fail(cudaErrorInvalidValue);
  *count = Config().devices;
  if (!Config().error.empty()) return Fail(cudaErrorInitializationError);
  return Config().devices == 0 ? Fail(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (!Config().error.empty()) return Fail(cudaErrorInitializationError);
  if (!ValidDevice(device))
    return Fail(Config().devices == 0 ? cudaErrorNoDevice : cudaErrorInvalidDevice);
  SetCurrentDevice(device);
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Fail(cudaErrorInvalidValue);
  if (cudaError_t e = CheckInit(); e != cudaSuccess) return Fail(e);
  *device = CurrentDevice();
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return Fail(cudaErrorInvalidValue);
  if (!ValidDevice(device)) return Fail(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof(*prop));
  std::snprintf(prop->name, sizeof(prop->name), "orca CUDA twin %d (host)", device);
  prop->totalGlobalMem = Config().DeviceMemory(device);
  prop->sharedMemPerBlock = kSharedPerBlock;
  prop->sharedMemPerBlockOptin = kSharedPerBlock;
  prop->sharedMemPerMultiprocessor = kSharedPerBlock;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->major = 8;
  prop->minor = 0;
  prop->multiProcessorCount = Config().sms;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->concurrentKernels = 1;
  prop->unifiedAddressing = 1;
  prop->memoryPoolsSupported = 1;
  prop->pciBusID = device;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return Fail(cudaErrorInvalidValue);
  if (!ValidDevice(device)) return Fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMemoryPoolsSupported:
      *value = 1;
      return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock:
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(kSharedPerBlock);
      return cudaSuccess;
    case cudaDevAttrWarpSize:
      *value = 32;
      return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
      *value = Config().sms;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
      *value = 8;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      return cudaSuccess;
    default:
      std::fprintf(stderr, "orca CUDA twin: cudaDeviceGetAttribute: attribute %d is not modelled\n",
                   static_cast<int>(attr));
      return Fail(cudaErrorNotSupported);
  }
}

cudaError_t cudaDeviceSynchronize(void) {
  if (cudaError_t e = CheckInit(); e != cudaSuccess) return Fail(e);
  return Fail(SynchronizeDevice(CurrentDevice()));
}

cudaError_t cudaDeviceReset(void) {
  if (cudaError_t e = CheckInit(); e != cudaSuccess) return Fail(e);
  return Fail(SynchronizeDevice(CurrentDevice()));
}

cudaError_t cudaGetLastError(void) { return TakeLastError(); }
cudaError_t cudaPeekAtLastError(void) { return PeekLastError(); }

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return Fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return Fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return Fail(cudaErrorInvalidValue);
  if (cudaError_t e = CheckInit(); e != cudaSuccess) return Fail(e);
  *total_bytes = Config().DeviceMemory(CurrentDevice());
  *free_bytes = *total_bytes - DeviceBytesInUse(CurrentDevice());
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  if (ptr == nullptr) return Fail(cudaErrorInvalidValue);
  if (cudaError_t e = CheckInit(); e != cudaSuccess) return Fail(e);
  return Fail(DeviceAllocate(CurrentDevice(), bytes, ptr));
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  if (cudaError_t e = CheckInit(); e != cudaSuccess) return Fail(e);
  // cudaFree synchronises the device: no queued work may still use the memory.
  const int device = DeviceOfPointer(ptr);
  if (device >= 0) (void)SynchronizeDevice(device);
  return Fail(DeviceFree(ptr));
}

cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t stream) {
  if (ptr == nullptr) return Fail(cudaErrorInvalidValue);
  if (cudaError_t e = CheckInit(); e != cudaSuccess) return Fail(e);
  const int device = StreamDevice(stream);
  if (device < 0) return Fail(cudaErrorInvalidResourceHandle);
  return Fail(DeviceAllocate(device, bytes, ptr));
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  if (ptr == nullptr) return cudaSuccess;
  if (DeviceOfPointer(ptr) < 0) return Fail(cudaErrorInvalidValue);
  // Stream-ordered: freed once the work queued before it on `stream` has run.
  return Fail(Enqueue(stream, [ptr] { return DeviceFree(ptr); }));
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  if (pool == nullptr || props == nullptr || props->location.type != cudaMemLocationTypeDevice ||
      !ValidDevice(props->location.id)) {
    return Fail(cudaErrorInvalidValue);
  }
  *pool = reinterpret_cast<cudaMemPool_t>(new MemPool{props->location.id});
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  if (pool == nullptr || value == nullptr) return Fail(cudaErrorInvalidValue);
  if (attr != cudaMemPoolAttrReleaseThreshold && attr != cudaMemPoolReuseFollowEventDependencies &&
      attr != cudaMemPoolReuseAllowOpportunistic &&
      attr != cudaMemPoolReuseAllowInternalDependencies) {
    return Fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;  // caching policy: the twin frees at once, which is stricter
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  if (pool == nullptr) return Fail(cudaErrorInvalidValue);
  delete reinterpret_cast<MemPool*>(pool);
  return cudaSuccess;
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t bytes, cudaMemPool_t pool,
                                    cudaStream_t stream) {
  if (ptr == nullptr || pool == nullptr) return Fail(cudaErrorInvalidValue);
  if (StreamDevice(stream) < 0) return Fail(cudaErrorInvalidResourceHandle);
  return Fail(DeviceAllocate(reinterpret_cast<MemPool*>(pool)->device, bytes, ptr));
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  if (ptr == nullptr) return Fail(cudaErrorInvalidValue);
  return Fail(PinnedAllocate(bytes, ptr));
}

cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned int /*flags*/) {
  if (ptr == nullptr) return Fail(cudaErrorInvalidValue);
  return Fail(PinnedAllocate(bytes, ptr));
}

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  return Fail(PinnedFree(ptr));
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  return Fail(Copy(dst, src, bytes, kind, nullptr, /*synchronous=*/true, "cudaMemcpy"));
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return Fail(Copy(dst, src, bytes, kind, stream, /*synchronous=*/false, "cudaMemcpyAsync"));
}

cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
  return Fail(Memset(ptr, value, bytes, nullptr, /*synchronous=*/true));
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) {
  return Fail(Memset(ptr, value, bytes, stream, /*synchronous=*/false));
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  if (cudaError_t e = CheckInit(); e != cudaSuccess) return Fail(e);
  return Fail(CreateStream(cudaStreamDefault, stream));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (cudaError_t e = CheckInit(); e != cudaSuccess) return Fail(e);
  return Fail(CreateStream(flags, stream));
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) { return Fail(DestroyStream(stream)); }
cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return Fail(SynchronizeStream(stream)); }
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  const cudaError_t e = QueryStream(stream);
  return e == cudaErrorNotReady ? e : Fail(e);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (flags != 0 && flags != cudaEventWaitDefault) return Fail(cudaErrorInvalidValue);
  return Fail(StreamWaitEvent(stream, event));
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return Fail(cudaErrorInvalidValue);
  }
  return Fail(BeginCapture(stream));
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  if (graph == nullptr) return Fail(cudaErrorInvalidValue);
  auto g = std::make_unique<CUgraph_st>();
  if (cudaError_t e = EndCapture(stream, &g->work); e != cudaSuccess) return Fail(e);
  *graph = g.release();
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* status) {
  if (status == nullptr) return Fail(cudaErrorInvalidValue);
  *status = IsCapturing(stream) ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags) {
  if (exec == nullptr || graph == nullptr || flags != 0) return Fail(cudaErrorInvalidValue);
  auto e = std::make_unique<CUgraphExec_st>();
  e->work = graph->work;
  *exec = e.release();
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return Fail(cudaErrorInvalidValue);
  if (IsCapturing(stream)) return Fail(RefuseInCapture(stream));
  // One item runs the graph's work in order, as its single chain of nodes does.
  return Fail(Enqueue(stream, [work = exec->work]() {
    cudaError_t first = cudaSuccess;
    for (const auto& w : work) {
      const cudaError_t e = w ? w() : cudaSuccess;
      if (e != cudaSuccess && first == cudaSuccess) first = e;
    }
    return first;
  }));
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  if (fn == nullptr) return Fail(cudaErrorInvalidValue);
  return Fail(Enqueue(stream, [fn, user_data] {
    fn(user_data);
    return cudaSuccess;
  }));
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return Fail(CreateEvent(cudaEventDefault, event));
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  return Fail(CreateEvent(flags, event));
}
cudaError_t cudaEventDestroy(cudaEvent_t event) { return Fail(DestroyEvent(event)); }
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return Fail(RecordEvent(event, stream));
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) { return Fail(SynchronizeEvent(event)); }
cudaError_t cudaEventQuery(cudaEvent_t event) {
  const cudaError_t e = QueryEvent(event);
  return e == cudaErrorNotReady ? e : Fail(e);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  return Fail(EventElapsedMs(ms, start, end));
}

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define ORCA_TWIN_NAME(code) \
  case code:                 \
    return #code;
    ORCA_TWIN_NAME(cudaSuccess)
    ORCA_TWIN_NAME(cudaErrorInvalidValue)
    ORCA_TWIN_NAME(cudaErrorMemoryAllocation)
    ORCA_TWIN_NAME(cudaErrorInitializationError)
    ORCA_TWIN_NAME(cudaErrorInvalidConfiguration)
    ORCA_TWIN_NAME(cudaErrorInvalidMemcpyDirection)
    ORCA_TWIN_NAME(cudaErrorInvalidDevice)
    ORCA_TWIN_NAME(cudaErrorNoDevice)
    ORCA_TWIN_NAME(cudaErrorInvalidResourceHandle)
    ORCA_TWIN_NAME(cudaErrorNotReady)
    ORCA_TWIN_NAME(cudaErrorLaunchFailure)
    ORCA_TWIN_NAME(cudaErrorNotSupported)
    ORCA_TWIN_NAME(cudaErrorIllegalAddress)
    ORCA_TWIN_NAME(cudaErrorCapturedEvent)
    ORCA_TWIN_NAME(cudaErrorUnknown)
#undef ORCA_TWIN_NAME
    default:
      return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInitializationError:
      return "initialization error (see the CUDA twin's message on stderr)";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection:
      return "invalid copy direction for memcpy";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure (the CUDA twin named the kernel on stderr)";
    case cudaErrorNotSupported:
      return "operation not supported";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorCapturedEvent:
      return "operation not permitted on an event last recorded in a capturing stream";
    default:
      return "unknown error";
  }
}

}  // extern "C"

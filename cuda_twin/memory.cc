#include "cuda_twin/memory.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "cuda_twin/host_guard.h"
#include "cuda_twin/streams.h"
#include "cuda_twin/twin_config.h"

namespace orca::cuda_twin {
namespace {

constexpr size_t kAlignment = 256;

struct Allocation {
  size_t bytes;  // as requested
  int device;    // -1: pinned host memory
};

class Registry {
 public:
  cudaError_t Add(int device, size_t bytes, void** out) {
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (device >= 0) {
      absl::MutexLock lock(&mu_);
      if (in_use_.size() <= static_cast<size_t>(device)) in_use_.resize(device + 1, 0);
      if (rounded > Config().DeviceMemory(device) - in_use_[device])
        return cudaErrorMemoryAllocation;
      in_use_[device] += rounded;
    }
    const bool guarded = device >= 0 && HostGuardEnabled();
    void* p = guarded ? GuardedAllocate(rounded, Config().poison)
                      : std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
    if (p == nullptr) {
      if (device >= 0) Release(device, rounded);
      return cudaErrorMemoryAllocation;
    }
    if (device >= 0 && !guarded && Config().poison) std::memset(p, 0xff, rounded);
    {
      absl::MutexLock lock(&mu_);
      live_[reinterpret_cast<uintptr_t>(p)] = Allocation{bytes, device};
    }
    *out = p;
    return cudaSuccess;
  }

  cudaError_t Remove(void* ptr, bool device) {
    Allocation a;
    {
      absl::MutexLock lock(&mu_);
      auto it = live_.find(reinterpret_cast<uintptr_t>(ptr));
      if (it == live_.end() || (it->second.device >= 0) != device) return cudaErrorInvalidValue;
      a = it->second;
      live_.erase(it);
    }
    const size_t rounded = (a.bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (a.device >= 0) Release(a.device, rounded);
    if (a.device >= 0 && HostGuardEnabled()) {
      GuardedFree(ptr, rounded);
    } else {
      std::free(ptr);
    }
    return cudaSuccess;
  }

  // The allocation containing [p, p + bytes), or null.
  bool Find(const void* p, size_t bytes, Allocation* out) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    absl::MutexLock lock(&mu_);
    auto it = live_.upper_bound(a);
    if (it == live_.begin()) return false;
    --it;
    const uintptr_t begin = it->first, end = begin + it->second.bytes;
    if (a < begin || a > end || bytes > end - a) {
      return false;
    }
    *out = it->second;
    return true;
  }

  size_t InUse(int device) {
    absl::MutexLock lock(&mu_);
    return static_cast<size_t>(device) < in_use_.size() ? in_use_[device] : 0;
  }

 private:
  void Release(int device, size_t rounded) {
    absl::MutexLock lock(&mu_);
    in_use_[device] -= rounded;
  }

  absl::Mutex mu_;
  std::map<uintptr_t, Allocation> live_ ABSL_GUARDED_BY(mu_);
  std::vector<size_t> in_use_ ABSL_GUARDED_BY(mu_);
};

Registry& Memory() {
  static Registry* registry = new Registry();  // never destroyed: used until exit
  return *registry;
}

}  // namespace

cudaError_t DeviceAllocate(int device, size_t bytes, void** out) {
  return Memory().Add(device, bytes, out);
}
cudaError_t DeviceFree(void* ptr) { return Memory().Remove(ptr, /*device=*/true); }
size_t DeviceBytesInUse(int device) { return Memory().InUse(device); }

int DeviceOfPointer(const void* p) {
  Allocation a;
  return Memory().Find(p, 1, &a) ? a.device : -1;
}

bool IsDeviceRange(const void* p, size_t bytes) {
  Allocation a;
  return Memory().Find(p, bytes, &a) && a.device >= 0;
}

cudaError_t PinnedAllocate(size_t bytes, void** out) { return Memory().Add(-1, bytes, out); }
cudaError_t PinnedFree(void* ptr) { return Memory().Remove(ptr, /*device=*/false); }

bool IsPinnedRange(const void* p, size_t bytes) {
  Allocation a;
  return Memory().Find(p, bytes, &a) && a.device < 0;
}

}  // namespace orca::cuda_twin

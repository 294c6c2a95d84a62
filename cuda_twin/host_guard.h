// The CUDA twin's host guard (ORCA_CUDA_TWIN_HOST_GUARD=1): device memory is mapped
// without access (PROT_NONE) whenever no device work runs anywhere in the process, so
// host code that dereferences a device pointer faults at once, and the fault is named
// on stderr ("the host touched device memory at ..."), as a GPU would punish it
// (an illegal access, or garbage). Device work (streams.cc) opens the memory for its
// duration. A host access that happens while some stream is running work is not
// caught: the guard narrows the window, it does not close it. Device allocations
// become whole pages (mmap) while it is on; it is off under AddressSanitizer, whose
// red zones need malloc'd memory. Thread-safe.
#pragma once

#include <cstddef>

namespace orca::cuda_twin {

bool HostGuardEnabled();

// Maps `bytes` of device memory (filled with 0xff when `poison`); null on failure.
void* GuardedAllocate(size_t bytes, bool poison);
void GuardedFree(void* ptr, size_t bytes);

// Brackets every unit of device work: memory is accessible between the first Enter and
// the matching last Leave.
void EnterDeviceWork();
void LeaveDeviceWork();

}  // namespace orca::cuda_twin

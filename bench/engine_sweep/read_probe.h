// The read-bandwidth probe behind `orca bench engine`'s roofline: every core sums its
// slice of a buffer far larger than the caches, with the widest loads the CPU runs.
//
// Why the widest loads: the decode kernels it is the roof of read weights and KV with
// them, and narrower loads leave bandwidth unused. On a 2-vCPU Xeon (Emerald Rapids) a
// sum of uint64 words read 22 GB/s where 64-byte loads read 32 GB/s (the same for
// 256 MiB, 1 GiB and 2 GiB buffers), so a roof from the narrow probe was 30 % too low
// and decode fractions of it above 100 %.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/backend/cpu/simd.h"

namespace orca::bench {

// The probe's buffer: at least 256 MiB and four times the last-level cache (STREAM's
// rule), so that no pass is served from the cache. `llc_bytes` 0 = unknown.
size_t ReadProbeBytes(size_t llc_bytes);

// This CPU's last-level cache in bytes (sysconf, else sysfs); 0 when neither says.
size_t LastLevelCacheBytes();

// The wrapping sum of words[0, n) read with `level`'s loads (any n, any alignment).
// Every level returns the same sum; the widest one is what the probe measures with.
uint64_t SumWords(const uint64_t* words, size_t n, SimdLevel level);

// Streams a `bytes` buffer for about `seconds` on `threads` threads (0 = every core)
// with CpuSimdLevel()'s loads, pass after pass; returns the fastest pass's GB/s (1e9
// bytes per second), STREAM's convention: on a shared machine the neighbours' traffic
// only ever slows a pass, so the best one is nearest what the machine can do.
double ReadBandwidthGbs(double seconds, size_t bytes, int threads = 0);

// The same over `words` (written by the caller), so that several measurements (say,
// every core and one) share one buffer instead of each allocating and filling its own.
double ReadBandwidthGbs(double seconds, const std::vector<uint64_t>& words, int threads = 0);

}  // namespace orca::bench

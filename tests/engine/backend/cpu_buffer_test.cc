// CpuBackend::Allocate: buffers of a huge page (2 MiB) or more start on a huge-page
// boundary (and are madvised for transparent huge pages, which the kernel may or may not
// grant: not asserted), smaller ones on 64 bytes for vector loads; every byte asked for
// is writable.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "engine/backend/backend.h"

namespace orca {
namespace {

TEST(CpuBufferTest, LargeBuffersStartOnHugePages) {
  auto backend = CreateCpuBackend(1);
  for (size_t bytes : {size_t{2} << 20, (size_t{3} << 20) + 5, size_t{64} << 20}) {
    auto buf = backend->Allocate(bytes);
    ASSERT_TRUE(buf.ok()) << buf.status();
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*buf)->data()) % (uintptr_t{2} << 20), 0u) << bytes;
    EXPECT_EQ((*buf)->size(), bytes);
    std::memset((*buf)->data(), 0x5a, bytes);
  }
  for (size_t bytes : {size_t{1}, size_t{100}, (size_t{2} << 20) - 1}) {
    auto buf = backend->Allocate(bytes);
    ASSERT_TRUE(buf.ok()) << buf.status();
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*buf)->data()) % 64, 0u) << bytes;
    std::memset((*buf)->data(), 0x5a, bytes);
  }
}

}  // namespace
}  // namespace orca

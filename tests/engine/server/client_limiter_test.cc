// ClientLimiter: the per-client concurrency limit (server.max_concurrent_per_client) and
// the client keys of both transports. No server, no model.
#include "engine/server/client_limiter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"

namespace orca {
namespace {

TEST(ClientLimiterTest, RefusesTheRequestBeyondTheLimitOfOneClientOnly) {
  ClientLimiter limiter(2);
  ASSERT_TRUE(limiter.enabled());
  auto a = limiter.Acquire("10.0.0.1");
  auto b = limiter.Acquire("10.0.0.1");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(limiter.open("10.0.0.1"), 2);
  auto c = limiter.Acquire("10.0.0.1");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(c.status())) << c.status();
  // The message names the limit and the setting, for the client and the operator.
  EXPECT_TRUE(absl::StrContains(c.status().message(), "at most 2")) << c.status();
  EXPECT_TRUE(absl::StrContains(c.status().message(), "server.max_concurrent_per_client"));
  EXPECT_EQ(limiter.open("10.0.0.1"), 2) << "a refusal takes nothing";
  // Another client is not affected.
  auto other = limiter.Acquire("10.0.0.2");
  EXPECT_TRUE(other.ok());
  EXPECT_EQ(limiter.clients(), 2);
}

TEST(ClientLimiterTest, ASlotGivesItsPlaceBackOnceWhenDestroyed) {
  ClientLimiter limiter(1);
  {
    auto a = limiter.Acquire("c");
    ASSERT_TRUE(a.ok());
    EXPECT_FALSE(limiter.Acquire("c").ok());
    // Moving the slot moves the place, it does not free or duplicate it.
    ClientLimiter::Slot moved = std::move(*a);
    EXPECT_EQ(limiter.open("c"), 1);
    ClientLimiter::Slot again = std::move(moved);
    EXPECT_EQ(limiter.open("c"), 1);
    EXPECT_FALSE(limiter.Acquire("c").ok());
  }
  EXPECT_EQ(limiter.open("c"), 0);
  EXPECT_EQ(limiter.clients(), 0) << "idle clients keep no entry";
  auto b = limiter.Acquire("c");
  EXPECT_TRUE(b.ok());
  // Assigning over a held slot gives the old place back.
  auto other = limiter.Acquire("d");
  ASSERT_TRUE(other.ok());
  *b = std::move(*other);
  EXPECT_EQ(limiter.open("c"), 0);
  EXPECT_EQ(limiter.open("d"), 1);
}

TEST(ClientLimiterTest, ZeroMeansNoLimitAndCountsNothing) {
  ClientLimiter limiter(0);
  EXPECT_FALSE(limiter.enabled());
  std::vector<ClientLimiter::Slot> held;
  for (int i = 0; i < 1000; ++i) {
    auto s = limiter.Acquire("c");
    ASSERT_TRUE(s.ok());
    held.push_back(std::move(*s));
  }
  EXPECT_EQ(limiter.open("c"), 0);
  EXPECT_EQ(limiter.clients(), 0);
}

// Many threads of two clients acquire and release at once: no client ever has more than
// the limit open (counted independently of the limiter), and everything is given back.
TEST(ClientLimiterTest, HoldsUnderContention) {
  constexpr int kLimit = 3;
  ClientLimiter limiter(kLimit);
  std::atomic<int> open[2] = {0, 0};
  std::atomic<int> peak[2] = {0, 0};
  std::atomic<int> admitted{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const int client = t % 2;
      const std::string key = client == 0 ? "10.0.0.1" : "::1";
      for (int i = 0; i < 5000; ++i) {
        auto slot = limiter.Acquire(key);
        if (!slot.ok()) {
          ++refused;
          continue;
        }
        ++admitted;
        const int now = ++open[client];
        int seen = peak[client].load();
        while (now > seen && !peak[client].compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        --open[client];  // before the slot goes
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(peak[0].load(), kLimit);
  EXPECT_LE(peak[1].load(), kLimit);
  EXPECT_GT(admitted.load(), 0);
  EXPECT_EQ(admitted.load() + refused.load(), 8 * 5000);
  EXPECT_EQ(limiter.clients(), 0);
}

TEST(ClientKeyTest, GrpcPeersAndHttpAddressesOfOneClientShareAKey) {
  EXPECT_EQ(ClientKeyFromGrpcPeer("ipv4:10.0.0.7:5123"), "10.0.0.7");
  EXPECT_EQ(ClientKeyFromGrpcPeer("ipv6:[::1]:5123"), "::1");
  EXPECT_EQ(ClientKeyFromGrpcPeer("ipv6:%5B::1%5D:5123"), "::1");
  EXPECT_EQ(ClientKeyFromGrpcPeer("ipv6:[2001:db8::2]:443"), "2001:db8::2");
  EXPECT_EQ(ClientKeyFromGrpcPeer("ipv6:[::ffff:10.0.0.7]:5123"), "10.0.0.7");
  EXPECT_EQ(ClientKeyFromGrpcPeer("unix:/run/orca.sock"), "unix:/run/orca.sock");
  EXPECT_EQ(ClientKeyFromAddress("10.0.0.7"), "10.0.0.7");
  EXPECT_EQ(ClientKeyFromAddress("::ffff:10.0.0.7"), "10.0.0.7");
  EXPECT_EQ(ClientKeyFromAddress("::FFFF:10.0.0.7"), "10.0.0.7");
  EXPECT_EQ(ClientKeyFromAddress("::ffff:a00:7"), "::ffff:a00:7");  // not dotted: kept
  EXPECT_EQ(ClientKeyFromAddress("2001:db8::2"), "2001:db8::2");
}

}  // namespace
}  // namespace orca

#include "engine/comm/gloo/gloo_communicator.h"

#include <gloo/allreduce.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace orca {
namespace {

// A Send/Recv slot (Gloo matches a send with the receive of the same slot on that pair):
// its own top byte, so it never meets the slots Gloo's collectives derive from their tags
// (top bytes 0x01..0x08); then the low 32 bits of the float count; then 24 bits of the
// message's index in its direction of the pair (wrapping is harmless: Gloo matches equal
// slots in order). With the count in the slot, a Send and a Recv of different counts never
// match and both time out; Gloo itself would abort the process from its I/O thread when
// the sender's message is the longer one, and silently fill part of a longer receive.
constexpr uint64_t kPointToPointSlotBase = uint64_t{0xf0} << 56;
// The slots of DirectAllReduce's messages: the same layout, the all-reduce's tag as index.
constexpr uint64_t kAllReduceSlotBase = uint64_t{0xf1} << 56;
constexpr int kMaxDirectAllReduceRanks = 8;
constexpr int kSlotIndexBits = 24;
constexpr uint64_t kSlotCountMask = (uint64_t{1} << 32) - 1;
constexpr uint64_t kSlotIndexMask = (uint64_t{1} << kSlotIndexBits) - 1;

// Gloo reports a timeout as an IoException whose text says so ("Timed out waiting ...",
// "Wait timeout for key(s) ..."); every other IoException is a broken connection.
absl::Status FromIoException(const std::string& what, const std::string& msg) {
  std::string text = absl::StrCat(what, ": ", msg);
  const std::string lower = absl::AsciiStrToLower(msg);
  if (absl::StrContains(lower, "timed out") || absl::StrContains(lower, "timeout")) {
    return absl::DeadlineExceededError(std::move(text));
  }
  return absl::UnavailableError(std::move(text));
}

// Runs `fn`, turning whatever Gloo throws into a Status that names the operation
// (`describe()`, called only on failure: these calls sit on the per-layer hot path):
// exceptions never leave this file.
template <typename Describe, typename Fn>
absl::Status CatchGloo(Describe&& describe, Fn&& fn) {
  try {
    fn();
    return absl::OkStatus();
  } catch (const gloo::IoException& e) {
    return FromIoException(describe(), e.what());
  } catch (const gloo::Exception& e) {
    return absl::InternalError(absl::StrCat(describe(), ": ", e.what()));
  } catch (const gloo::EnforceNotMet& e) {
    return absl::InternalError(absl::StrCat(describe(), ": ", e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(describe(), ": ", e.what()));
  } catch (...) {
    return absl::UnknownError(absl::StrCat(describe(), ": unknown exception"));
  }
}

class GlooCommunicator : public Communicator {
 public:
  // `context` is null for a group of one rank.
  GlooCommunicator(std::shared_ptr<gloo::rendezvous::Context> context, int rank, int world_size,
                   std::chrono::milliseconds timeout)
      : context_(std::move(context)),
        rank_(rank),
        world_size_(world_size),
        timeout_(timeout),
        sent_(world_size, 0),
        received_(world_size, 0) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  absl::Status AllReduceSum(float* data, size_t count) override {
    if (world_size_ == 1 || count == 0) return absl::OkStatus();
    if (!broken_.ok()) return Broken();
    const uint32_t tag = allreduce_tag_++;
    auto what = [&] { return absl::StrCat("gloo rank ", rank_, ": AllReduceSum of ", count); };
    if (world_size_ <= kMaxDirectAllReduceRanks) {
      return Track(ExplainTimeout(CatchGloo(what, [&] { DirectAllReduce(data, count, tag); })));
    }
    return Track(CatchGloo(what, [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(data, count);
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    }));
  }

  absl::Status Send(const float* data, size_t count, int peer) override {
    if (!ValidPeer(peer)) return BadPeer("Send to", peer);
    if (count == 0) return absl::OkStatus();
    if (!broken_.ok()) return Broken();
    const uint64_t slot = Slot(sent_[peer]++, count);
    auto what = [&] {
      return absl::StrCat("gloo rank ", rank_, ": Send of ", count, " to ", peer);
    };
    return Track(ExplainTimeout(CatchGloo(what, [&] {
      // Gloo only reads a buffer it sends from.
      auto buffer = context_->createUnboundBuffer(const_cast<float*>(data), count * sizeof(float));
      buffer->send(peer, slot);
      if (!buffer->waitSend(timeout_)) throw gloo::IoException("send aborted");
    })));
  }

  absl::Status Recv(float* data, size_t count, int peer) override {
    if (!ValidPeer(peer)) return BadPeer("Recv from", peer);
    if (count == 0) return absl::OkStatus();
    if (!broken_.ok()) return Broken();
    const uint64_t slot = Slot(received_[peer]++, count);
    auto what = [&] {
      return absl::StrCat("gloo rank ", rank_, ": Recv of ", count, " from ", peer);
    };
    return Track(ExplainTimeout(CatchGloo(what, [&] {
      auto buffer = context_->createUnboundBuffer(data, count * sizeof(float));
      buffer->recv(peer, slot);
      if (!buffer->waitRecv(timeout_)) throw gloo::IoException("recv aborted");
    })));
  }

 private:
  // Tensor-parallel groups are small and their all-reduces latency-bound (one
  // [tokens, hidden] activation per layer half): every rank sends its buffer to every
  // peer and sums all of them in rank order, one round trip instead of Gloo's ring
  // (2 (W-1) dependent steps; measured on loopback for 768 floats: ~0.1 ms against
  // ~1.5 ms). Every rank adds the same values in the same order, so all end bitwise
  // equal. Receives are posted before the sends: Gloo's send waits for the matching
  // receive.
  void DirectAllReduce(float* data, size_t count, uint32_t tag) {
    const size_t bytes = count * sizeof(float);
    scratch_.resize(static_cast<size_t>(world_size_));
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> recvs, sends;
    const uint64_t slot = kAllReduceSlotBase |
                          ((static_cast<uint64_t>(count) & kSlotCountMask) << kSlotIndexBits) |
                          (tag & kSlotIndexMask);
    for (int peer = 0; peer < world_size_; ++peer) {
      if (peer == rank_) continue;
      scratch_[peer].resize(count);
      recvs.push_back(context_->createUnboundBuffer(scratch_[peer].data(), bytes));
      recvs.back()->recv(peer, slot);
    }
    for (int peer = 0; peer < world_size_; ++peer) {
      if (peer == rank_) continue;
      sends.push_back(context_->createUnboundBuffer(data, bytes));
      sends.back()->send(peer, slot);
    }
    for (auto& b : recvs) {
      if (!b->waitRecv(timeout_)) throw gloo::IoException("all-reduce receive aborted");
    }
    for (auto& b : sends) {
      if (!b->waitSend(timeout_)) throw gloo::IoException("all-reduce send aborted");
    }
    scratch_[rank_].assign(data, data + count);
    std::copy(scratch_[0].begin(), scratch_[0].end(), data);
    for (int r = 1; r < world_size_; ++r) {
      const float* src = scratch_[r].data();
      for (size_t i = 0; i < count; ++i) data[i] += src[i];
    }
  }

  static uint64_t Slot(uint64_t message_index, size_t count) {
    return kPointToPointSlotBase |
           ((static_cast<uint64_t>(count) & kSlotCountMask) << kSlotIndexBits) |
           (message_index & kSlotIndexMask);
  }

  // Names the likely causes of a point-to-point timeout, which Gloo cannot tell apart.
  static absl::Status ExplainTimeout(absl::Status status) {
    if (status.code() != absl::StatusCode::kDeadlineExceeded) return status;
    return absl::DeadlineExceededError(absl::StrCat(
        status.message(), " (the peer posted no matching call of the same count in time)"));
  }

  bool ValidPeer(int peer) const { return peer >= 0 && peer < world_size_ && peer != rank_; }

  absl::Status BadPeer(const char* op, int peer) const {
    return absl::InvalidArgumentError(absl::StrCat("gloo rank ", rank_, ": ", op, " peer ", peer,
                                                   " invalid in a group of ", world_size_));
  }

  // Remembers the first failure: Gloo has closed the group's connections by then, and the
  // message counters of the ranks no longer agree.
  absl::Status Track(absl::Status status) {
    if (!status.ok() && broken_.ok()) broken_ = status;
    return status;
  }

  absl::Status Broken() const {
    return absl::FailedPreconditionError(absl::StrCat(
        "gloo rank ", rank_, ": communicator broken by an earlier error: ", broken_.message()));
  }

  std::shared_ptr<gloo::rendezvous::Context> context_;
  int rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
  std::vector<uint64_t> sent_;      // messages sent to each peer so far
  std::vector<uint64_t> received_;  // messages received from each peer so far
  uint32_t allreduce_tag_ = 0;
  std::vector<std::vector<float>> scratch_;  // DirectAllReduce: each rank's buffer
  absl::Status broken_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(gloo::rendezvous::Store& store,
                                                                     const std::string& prefix,
                                                                     int rank, int world_size,
                                                                     const GlooOptions& options) {
  if (world_size <= 0 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("gloo rank ", rank, " invalid in a group of ", world_size));
  }
  if (options.timeout <= absl::ZeroDuration() || options.timeout == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("gloo timeout must be positive and finite, got ",
                                                   absl::FormatDuration(options.timeout)));
  }
  // Round up so that a sub-millisecond timeout does not become Gloo's "no timeout" (0).
  const auto timeout = std::chrono::milliseconds(
      absl::ToInt64Milliseconds(absl::Ceil(options.timeout, absl::Milliseconds(1))));
  if (world_size == 1) {
    return std::unique_ptr<Communicator>(new GlooCommunicator(nullptr, rank, world_size, timeout));
  }
  std::shared_ptr<gloo::rendezvous::Context> context;
  absl::Status status = CatchGloo(
      [&] {
        return absl::StrCat("gloo rank ", rank, " of ", world_size, ": joining group '", prefix,
                            "'");
      },
      [&] {
        gloo::transport::tcp::attr attr;
        attr.hostname = options.hostname;
        std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
        context = std::make_shared<gloo::rendezvous::Context>(rank, world_size);
        context->setTimeout(timeout);
        gloo::rendezvous::PrefixStore prefixed(prefix, store);
        context->connectFullMesh(prefixed, device);
      });
  if (!status.ok()) return status;
  return std::unique_ptr<Communicator>(
      new GlooCommunicator(std::move(context), rank, world_size, timeout));
}

}  // namespace orca

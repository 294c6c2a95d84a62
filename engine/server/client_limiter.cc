#include "engine/server/client_limiter.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace orca {

ClientLimiter::Slot& ClientLimiter::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    limiter_ = std::exchange(other.limiter_, nullptr);
    client_ = std::move(other.client_);
  }
  return *this;
}

void ClientLimiter::Slot::Release() {
  if (ClientLimiter* l = std::exchange(limiter_, nullptr)) l->Release(client_);
}

absl::StatusOr<ClientLimiter::Slot> ClientLimiter::Acquire(absl::string_view client) {
  if (max_ <= 0) return Slot();
  absl::MutexLock lock(&mu_);
  int& n = open_[client];
  if (n >= max_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("Too many concurrent requests from this client: at most ", max_,
                     " may be open at once (server.max_concurrent_per_client). Retry after one "
                     "of them finishes."));
  }
  ++n;
  return Slot(this, std::string(client));
}

void ClientLimiter::Release(const std::string& client) {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(client);
  if (it == open_.end()) return;
  if (--it->second <= 0) open_.erase(it);
}

int ClientLimiter::open(absl::string_view client) const {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(client);
  return it == open_.end() ? 0 : it->second;
}

int ClientLimiter::clients() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(open_.size());
}

std::string ClientKeyFromAddress(absl::string_view address) {
  constexpr absl::string_view kMapped = "::ffff:";
  if (absl::StartsWithIgnoreCase(address, kMapped) &&
      address.find('.') != absl::string_view::npos) {
    address.remove_prefix(kMapped.size());
  }
  return std::string(address);
}

std::string ClientKeyFromGrpcPeer(absl::string_view peer) {
  absl::string_view rest = peer;
  if (absl::ConsumePrefix(&rest, "ipv4:")) {
    return ClientKeyFromAddress(rest.substr(0, rest.rfind(':')));
  }
  if (absl::ConsumePrefix(&rest, "ipv6:")) {
    // "[addr]:port", possibly percent-encoded by gRPC ("%5B::1%5D:port").
    std::string text(rest);
    for (const auto& [from, to] : {std::pair<const char*, const char*>{"%5B", "["},
                                   std::pair<const char*, const char*>{"%5D", "]"}}) {
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from)) {
        text.replace(at, 3, to);
      }
    }
    const size_t open = text.find('[');
    const size_t close = text.find(']');
    if (open != std::string::npos && close != std::string::npos && close > open) {
      return ClientKeyFromAddress(text.substr(open + 1, close - open - 1));
    }
    return ClientKeyFromAddress(text.substr(0, text.rfind(':')));
  }
  return std::string(peer);
}

}  // namespace orca

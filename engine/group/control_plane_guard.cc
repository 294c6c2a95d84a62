#include "engine/group/control_plane_guard.h"

#include <grpcpp/grpcpp.h>

#include "absl/time/clock.h"
#include "engine/common/log.h"

namespace orca {

ControlPlaneGuard::ControlPlaneGuard(std::string token, absl::Duration log_interval)
    : auth_(std::move(token), "control-plane token"), log_interval_(log_interval) {}

grpc::Status ControlPlaneGuard::Admit(const grpc::ServerContext& ctx, absl::string_view method) {
  if (!auth_.enabled()) return grpc::Status::OK;
  absl::string_view authorization;
  const auto& metadata = ctx.client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    authorization = absl::string_view(it->second.data(), it->second.size());
  }
  const absl::Status s = auth_.Check(authorization);
  if (s.ok()) return grpc::Status::OK;
  {
    absl::MutexLock lock(&mu_);
    ++refused_;
    ++unlogged_;
    const absl::Time now = absl::Now();
    if (now - last_logged_ >= log_interval_) {
      ORCA_LOG(WARNING) << "control plane: refused " << method << " from " << ctx.peer() << ": "
                        << s.message()
                        << (unlogged_ > 1 ? " (" + std::to_string(unlogged_ - 1) +
                                                " more refusal(s) since the last line)"
                                          : "");
      last_logged_ = now;
      unlogged_ = 0;
    }
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      std::string(s.message()) +
                          " The scheduler's control plane requires the shared token "
                          "(parallelism.control_token_file).");
}

int64_t ControlPlaneGuard::refused() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

}  // namespace orca

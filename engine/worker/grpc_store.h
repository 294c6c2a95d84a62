// GrpcStore: the gloo rendezvous Store of a worker, backed by its scheduler's
// ControlPlane.StoreSet/StoreGet (proto/orca/v1/control.proto). Like every gloo
// store it reports failure by throwing gloo::IoException; CreateGlooCommunicator
// turns that into a Status. Every call carries the control-plane token, when there is
// one (`authorization: Bearer <token>`, as the worker's Join does).
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "gloo/rendezvous/store.h"
#include "orca/v1/control.grpc.pb.h"

namespace orca {

class GrpcStore : public gloo::rendezvous::Store {
 public:
  // `stub` must outlive the store; `timeout` bounds every call; `control_token` ("" =
  // none) goes with every call.
  GrpcStore(v1::ControlPlane::Stub* stub, std::chrono::milliseconds timeout,
            std::string control_token = "")
      : stub_(stub), timeout_(timeout), control_token_(std::move(control_token)) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  v1::StoreGetResponse Get(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  // Sets the deadline and the token of one call.
  void Prepare(grpc::ClientContext& ctx, std::chrono::milliseconds timeout) const;

  v1::ControlPlane::Stub* stub_;
  std::chrono::milliseconds timeout_;
  std::string control_token_;
};

}  // namespace orca

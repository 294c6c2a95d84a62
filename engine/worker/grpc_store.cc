#include "engine/worker/grpc_store.h"

#include <grpcpp/grpcpp.h>

#include "gloo/common/error.h"

namespace orca {

void GrpcStore::Prepare(grpc::ClientContext& ctx, std::chrono::milliseconds timeout) const {
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  if (!control_token_.empty()) ctx.AddMetadata("authorization", "Bearer " + control_token_);
}

void GrpcStore::set(const std::string& key, const std::vector<char>& data) {
  grpc::ClientContext ctx;
  Prepare(ctx, timeout_);
  v1::StoreSetRequest req;
  req.set_key(key);
  req.set_value(std::string(data.begin(), data.end()));
  v1::StoreSetResponse resp;
  grpc::Status s = stub_->StoreSet(&ctx, req, &resp);
  if (!s.ok()) throw gloo::IoException("rendezvous store set " + key + ": " + s.error_message());
}

v1::StoreGetResponse GrpcStore::Get(const std::vector<std::string>& keys,
                                    std::chrono::milliseconds timeout) {
  grpc::ClientContext ctx;
  Prepare(ctx, timeout);
  v1::StoreGetRequest req;
  for (const std::string& k : keys) req.add_keys(k);
  v1::StoreGetResponse resp;
  grpc::Status s = stub_->StoreGet(&ctx, req, &resp);
  if (!s.ok() || resp.values_size() != static_cast<int>(keys.size())) {
    throw gloo::IoException("rendezvous store get " + (keys.empty() ? "" : keys[0]) + ": " +
                            (s.ok() ? "short answer" : s.error_message()));
  }
  return resp;
}

std::vector<char> GrpcStore::get(const std::string& key) {
  v1::StoreGetResponse resp = Get({key}, timeout_);
  const std::string& v = resp.values(0);
  return std::vector<char>(v.begin(), v.end());
}

void GrpcStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  Get(keys, timeout);
}

}  // namespace orca

// Fuzzes kubeconfig files (controller/client/kube_config.h: LoadKubeconfig), which
// orca-controller reads outside a cluster: contexts, clusters, users, inline and
// file-referenced certificates, tokens; and what it does next with a config that loads,
// RestClient::Create (the server URL, the PEM certificates and key; nothing connects).
// The input is written to a scratch file; paths it names are resolved beside it, where
// nothing else lives.

#include <cstddef>
#include <cstdint>

#include "controller/client/kube_config.h"
#include "controller/client/rest_client.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = orca::fuzz::FixtureDir("kubeconfig") + "/config";
  orca::fuzz::WriteFileOrDie(path, std::string_view(reinterpret_cast<const char*>(data), size));
  for (const char* context : {"", "other-context"}) {
    auto config = orca::controller::LoadKubeconfig(path, context);
    if (!config.ok()) {
      // The header's promise: an unusable file is InvalidArgument.
      if (config.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
      continue;
    }
    auto client = orca::controller::RestClient::Create(*config);
    if (!client.ok() && client.status().code() != absl::StatusCode::kInvalidArgument) {
      __builtin_trap();
    }
  }
  return 0;
}

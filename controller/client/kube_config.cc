#include "controller/client/kube_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "yaml-cpp/yaml.h"

namespace orca::controller {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Returns the named entry (`name` field) of a kubeconfig list such as clusters.
YAML::Node FindNamed(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& item : list) {
    if (item["name"] && item["name"].as<std::string>() == name) return item;
  }
  return YAML::Node();
}

// Reads `<key>-data` (base64) or `<key>` (a path relative to the kubeconfig) of `node`.
absl::StatusOr<std::string> ReadPemField(const YAML::Node& node, const std::string& key,
                                         const std::string& base_dir, const std::string& what) {
  if (node[key + "-data"]) {
    std::string decoded;
    if (!absl::Base64Unescape(node[key + "-data"].as<std::string>(), &decoded)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", key, "-data is not valid base64"));
    }
    return decoded;
  }
  if (node[key]) {
    std::filesystem::path p = node[key].as<std::string>();
    if (p.is_relative()) p = std::filesystem::path(base_dir) / p;
    auto data = ReadFile(p.string());
    if (!data.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", key, ": ", data.status().message()));
    }
    return *data;
  }
  return std::string();
}

}  // namespace

absl::StatusOr<RestConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadFile(path);
  if (!text.ok())
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": cannot read file"));
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  try {
    YAML::Node root = YAML::Load(*text);
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": not a YAML mapping"));
    }
    std::string ctx_name = context;
    if (ctx_name.empty() && root["current-context"]) {
      ctx_name = root["current-context"].as<std::string>();
    }
    if (ctx_name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("kubeconfig ", path, ": no current-context and no --context given"));
    }
    YAML::Node ctx = FindNamed(root["contexts"], ctx_name);
    if (!ctx || !ctx["context"]) {
      return absl::InvalidArgumentError(
          absl::StrCat("kubeconfig ", path, ": context \"", ctx_name, "\" not found"));
    }
    std::string cluster_name =
        ctx["context"]["cluster"] ? ctx["context"]["cluster"].as<std::string>() : "";
    std::string user_name = ctx["context"]["user"] ? ctx["context"]["user"].as<std::string>() : "";
    YAML::Node cluster = FindNamed(root["clusters"], cluster_name);
    if (!cluster || !cluster["cluster"] || !cluster["cluster"]["server"]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kubeconfig ", path, ": cluster \"", cluster_name, "\" not found or has no server"));
    }
    RestConfig config;
    std::string what = absl::StrCat("kubeconfig ", path);
    const YAML::Node c = cluster["cluster"];
    config.server = c["server"].as<std::string>();
    if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": server \"", config.server,
                                                     "\" must start with https:// or http://"));
    }
    auto ca = ReadPemField(c, "certificate-authority", base_dir, what);
    if (!ca.ok()) return ca.status();
    config.ca_pem = *ca;
    if (c["insecure-skip-tls-verify"]) {
      config.insecure_skip_tls_verify = c["insecure-skip-tls-verify"].as<bool>();
    }
    YAML::Node user = FindNamed(root["users"], user_name);
    if (user && user["user"]) {
      const YAML::Node u = user["user"];
      auto cert = ReadPemField(u, "client-certificate", base_dir, what);
      if (!cert.ok()) return cert.status();
      auto key = ReadPemField(u, "client-key", base_dir, what);
      if (!key.ok()) return key.status();
      config.client_cert_pem = *cert;
      config.client_key_pem = *key;
      if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": user \"", user_name, "\" has a client certificate without key or vice versa"));
      }
      if (u["token"]) config.bearer_token = u["token"].as<std::string>();
      if (u["tokenFile"]) config.token_file = u["tokenFile"].as<std::string>();
      if (u["exec"] || u["auth-provider"]) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": user \"", user_name,
                         "\" uses exec/auth-provider plugins, which orca-controller does not run; "
                         "use a token or client certificate"));
      }
    } else if (!user_name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": user \"", user_name, "\" not found"));
    }
    return config;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": malformed YAML at line ",
                                                   e.mark.line + 1, ": ", e.msg));
  }
}

absl::StatusOr<RestConfig> LoadInClusterConfig(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0') {
    return absl::FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are unset");
  }
  RestConfig config;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = absl::StrCat("[", h, "]");  // IPv6
  config.server = absl::StrCat("https://", h, ":", port);
  config.token_file = sa_dir + "/token";
  auto token = ReadFile(config.token_file);
  if (!token.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster config: cannot read service account token ", config.token_file));
  }
  config.bearer_token = std::string(absl::StripAsciiWhitespace(*token));
  auto ca = ReadFile(sa_dir + "/ca.crt");
  if (!ca.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster config: cannot read ", sa_dir, "/ca.crt"));
  }
  config.ca_pem = *ca;
  return config;
}

absl::StatusOr<RestConfig> LoadDefaultConfig(const std::string& kubeconfig) {
  if (!kubeconfig.empty()) return LoadKubeconfig(kubeconfig);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string first = env;
    first = first.substr(0, first.find(':'));
    return LoadKubeconfig(first);
  }
  auto in_cluster = LoadInClusterConfig();
  if (in_cluster.ok()) return in_cluster;
  if (const char* home = std::getenv("HOME"); home != nullptr) {
    std::string path = absl::StrCat(home, "/.kube/config");
    if (std::filesystem::exists(path)) return LoadKubeconfig(path);
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "no API server configuration: pass --kubeconfig, set KUBECONFIG, or run in a cluster (",
      in_cluster.status().message(), ")"));
}

std::string InClusterNamespace(const std::string& fallback) {
  if (const char* env = std::getenv("POD_NAMESPACE"); env != nullptr && *env != '\0') return env;
  auto ns = ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace");
  if (ns.ok() && !ns->empty()) return std::string(absl::StripAsciiWhitespace(*ns));
  return fallback;
}

}  // namespace orca::controller

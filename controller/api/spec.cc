#include "controller/api/spec.h"

#include <regex>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/api/quantity.h"

namespace orca::controller {
namespace {

// Reads typed fields of one JSON object, applying defaults and collecting every
// violation with its path, as the API server's structural schema validation does.
class FieldReader {
 public:
  FieldReader(const Json* object, std::string path, std::vector<std::string>* errors)
      : object_(object), path_(std::move(path)), errors_(errors) {
    if (object_ != nullptr && !object_->is_null() && !object_->is_object()) {
      Error(path_, "must be an object");
      object_ = nullptr;
    }
  }

  bool Has(const char* key) const {
    return object_ != nullptr && object_->is_object() && object_->contains(key) &&
           !(*object_)[key].is_null();
  }

  FieldReader Child(const char* key) const {
    return FieldReader(Has(key) ? &(*object_)[key] : nullptr, Path(key), errors_);
  }

  int Int(const char* key, int def, int64_t min, int64_t max) const {
    if (!Has(key)) return def;
    const Json& v = (*object_)[key];
    if (!v.is_number_integer()) {
      Error(Path(key), "must be an integer");
      return def;
    }
    int64_t x = v.get<int64_t>();
    if (x < min || x > max) {
      Error(Path(key), absl::StrCat("must be between ", min, " and ", max, ", got ", x));
      return def;
    }
    return static_cast<int>(x);
  }

  std::optional<int> OptionalInt(const char* key, int64_t min, int64_t max) const {
    if (!Has(key)) return std::nullopt;
    return Int(key, 0, min, max);
  }

  double Number(const char* key, double def, double min, double max) const {
    if (!Has(key)) return def;
    const Json& v = (*object_)[key];
    if (!v.is_number()) {
      Error(Path(key), "must be a number");
      return def;
    }
    double x = v.get<double>();
    if (x < min || x > max) {
      Error(Path(key), absl::StrCat("must be between ", min, " and ", max, ", got ", x));
      return def;
    }
    return x;
  }

  bool Bool(const char* key, bool def) const {
    if (!Has(key)) return def;
    const Json& v = (*object_)[key];
    if (!v.is_boolean()) {
      Error(Path(key), "must be a boolean");
      return def;
    }
    return v.get<bool>();
  }

  std::string String(const char* key, std::string def, const char* pattern = nullptr,
                     size_t max_length = 4096) const {
    if (!Has(key)) return def;
    const Json& v = (*object_)[key];
    if (!v.is_string()) {
      Error(Path(key), "must be a string");
      return def;
    }
    std::string s = v.get<std::string>();
    if (s.size() > max_length) {
      Error(Path(key), absl::StrCat("must be at most ", max_length, " characters"));
      return def;
    }
    if (pattern != nullptr && !std::regex_match(s, std::regex(pattern))) {
      Error(Path(key), absl::StrCat("\"", s, "\" does not match ", pattern));
      return def;
    }
    return s;
  }

  std::string Enum(const char* key, std::string def, std::vector<std::string> allowed) const {
    std::string s = String(key, def);
    for (const auto& a : allowed) {
      if (s == a) return s;
    }
    Error(Path(key),
          absl::StrCat("must be one of ", absl::StrJoin(allowed, ", "), ", got \"", s, "\""));
    return def;
  }

  std::string Required(const char* key, const char* pattern = nullptr,
                       size_t max_length = 4096) const {
    if (!Has(key)) {
      Error(Path(key), "is required");
      return "";
    }
    std::string s = String(key, "", pattern, max_length);
    if (s.empty()) Error(Path(key), "must not be empty");
    return s;
  }

  // Returns the integers of array `key`: at most `max_items`, each between `min` and
  // `max`. nullopt when the key is absent or the array is invalid (the errors say why).
  std::optional<std::vector<int>> IntList(const char* key, int64_t min, int64_t max,
                                          size_t max_items) const {
    if (!Has(key)) return std::nullopt;
    const Json& v = (*object_)[key];
    if (!v.is_array()) {
      Error(Path(key), "must be an array");
      return std::nullopt;
    }
    if (v.size() > max_items) {
      Error(Path(key), absl::StrCat("must have at most ", max_items, " items"));
      return std::nullopt;
    }
    std::vector<int> out;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string at = absl::StrCat(Path(key), "[", i, "]");
      if (!v[i].is_number_integer()) {
        Error(at, "must be an integer");
        continue;
      }
      const int64_t x = v[i].get<int64_t>();
      if (x < min || x > max) {
        Error(at, absl::StrCat("must be between ", min, " and ", max, ", got ", x));
        continue;
      }
      out.push_back(static_cast<int>(x));
    }
    if (out.size() != v.size()) return std::nullopt;
    return out;
  }

  // Returns the raw JSON of `key` when it has the given JSON type, else null.
  Json Raw(const char* key, Json::value_t type) const {
    if (!Has(key)) return Json();
    const Json& v = (*object_)[key];
    if (v.type() != type) {
      Error(Path(key), type == Json::value_t::array ? "must be an array" : "must be an object");
      return Json();
    }
    return v;
  }

  // Returns a map of string to string, or null.
  Json StringMap(const char* key) const {
    Json m = Raw(key, Json::value_t::object);
    for (const auto& [k, v] : m.items()) {
      if (!v.is_string()) Error(Path(key) + "." + k, "must be a string");
    }
    return m;
  }

  void Error(const std::string& path, const std::string& message) const {
    errors_->push_back(absl::StrCat(path, ": ", message));
  }
  std::string Path(const char* key) const { return path_ + "." + key; }
  const std::string& path() const { return path_; }
  // Returns the object read (null when absent).
  const Json* object() const { return object_; }

 private:
  const Json* object_;
  std::string path_;
  std::vector<std::string>* errors_;
};

constexpr char kDnsLabel[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr char kDnsSubdomain[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

PodSettings ReadPodSettings(const FieldReader& r) {
  PodSettings p;
  p.resources = r.Raw("resources", Json::value_t::object);
  if (!p.resources.is_null()) {
    FieldReader res = r.Child("resources");
    for (const char* k : {"limits", "requests"}) {
      Json m = res.Raw(k, Json::value_t::object);
      for (const auto& [name, q] : m.items()) {
        // The builders render quantities in canonical form, so they must parse.
        if (absl::StatusOr<std::string> c = CanonicalQuantity(q); !c.ok()) {
          res.Error(res.Path(k) + "." + name, std::string(c.status().message()));
        }
      }
    }
  }
  p.node_selector = r.StringMap("nodeSelector");
  p.tolerations = r.Raw("tolerations", Json::value_t::array);
  p.affinity = r.Raw("affinity", Json::value_t::object);
  p.env = r.Raw("env", Json::value_t::array);
  for (size_t i = 0; i < p.env.size(); ++i) {
    const Json& e = p.env[i];
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
        e["name"].get<std::string>().empty()) {
      r.Error(absl::StrCat(r.Path("env"), "[", i, "].name"), "is required");
    }
  }
  p.pod_annotations = r.StringMap("podAnnotations");
  p.service_account_name = r.String("serviceAccountName", "");
  p.priority_class_name = r.String("priorityClassName", "");
  return p;
}

absl::StatusOr<ModelSource> ParseModelUri(const std::string& uri) {
  ModelSource src;
  if (uri.rfind("pvc://", 0) == 0) {
    std::string rest = uri.substr(6);
    size_t slash = rest.find('/');
    src.kind = ModelSource::Kind::kPvc;
    src.claim = rest.substr(0, slash);
    src.path = slash == std::string::npos ? "" : rest.substr(slash + 1);
    while (!src.path.empty() && src.path.back() == '/') src.path.pop_back();
    return src;
  }
  if (uri.rfind("hostpath:///", 0) == 0) {
    src.kind = ModelSource::Kind::kHostPath;
    src.path = uri.substr(11);
    return src;
  }
  if (uri.rfind("hf://", 0) == 0) {
    std::string rest = uri.substr(5);
    size_t at = rest.find('@');
    src.kind = ModelSource::Kind::kHuggingFace;
    src.repo = rest.substr(0, at);
    src.revision = at == std::string::npos ? "" : rest.substr(at + 1);
    return src;
  }
  if (uri.rfind("https://", 0) == 0) {
    src.kind = ModelSource::Kind::kHttps;
    return src;
  }
  return absl::InvalidArgumentError("unsupported scheme");
}

// The model.uri forms (ModelSource). Hub names: letters, digits, '-', '_', '.'; a
// revision is a branch, tag or commit (branches may contain '/').
constexpr char kModelUriPattern[] =
    "^(pvc://[a-z0-9]([-a-z0-9]*[a-z0-9])?(/.*)?"
    "|hostpath:///.*"
    "|hf://[A-Za-z0-9][-A-Za-z0-9_.]*/[A-Za-z0-9][-A-Za-z0-9_.]*(@[-A-Za-z0-9_./]+)?"
    "|https://[^/?#[:space:]]+/[^?#[:space:]]*\\.(tar|tar\\.gz|tgz))$";

// Reads the model fields that only apply to pulled models (hf://, https://).
void ReadModelPull(const FieldReader& r, const FieldReader& model, ModelSpec& m,
                   const ModelSource& src) {
  bool pulled = !m.uri.empty() && IsPulled(src);
  bool https = !m.uri.empty() && src.kind == ModelSource::Kind::kHttps;
  if (model.Has("tokenSecret")) {
    FieldReader ts = model.Child("tokenSecret");
    SecretKeyRef ref;
    ref.name = ts.Required("name", kDnsSubdomain, 253);
    ref.key = ts.String("key", "token", "^[-._a-zA-Z0-9]+$", 253);
    m.token_secret = ref;
    if (!pulled) {
      r.Error(model.path(), "model.tokenSecret is only used with an hf:// or https:// model.uri");
    }
  }
  m.sha256 = model.String("sha256", "", "^[a-f0-9]{64}$");
  if (model.Has("sha256") && !https) {
    r.Error(model.path(), "model.sha256 is only checked for an https:// model.uri");
  }
  if (model.Has("downloadSizeLimit")) {
    absl::StatusOr<std::string> q = CanonicalQuantity((*model.object())["downloadSizeLimit"]);
    if (!q.ok()) {
      model.Error(model.Path("downloadSizeLimit"), std::string(q.status().message()));
    } else {
      m.download_size_limit = *q;
    }
    if (!pulled) {
      r.Error(model.path(),
              "model.downloadSizeLimit is only used with an hf:// or https:// model.uri");
    }
  }
}

void ReadLifecycle(const FieldReader& r, LifecycleSpec& l) {
  FieldReader lc = r.Child("lifecycle");
  l.termination_grace_period_seconds = lc.Int("terminationGracePeriodSeconds", 60, 5, 3600);
  l.pre_stop_sleep_seconds = lc.Int("preStopSleepSeconds", 5, 0, 60);
  l.drain_seconds = lc.Int("drainSeconds", 45, 1, 3600);
  l.join_timeout_seconds = lc.Int("joinTimeoutSeconds", 300, 0, 86400);
  if (l.pre_stop_sleep_seconds + l.drain_seconds >= l.termination_grace_period_seconds) {
    r.Error(lc.path(),
            "lifecycle.preStopSleepSeconds + lifecycle.drainSeconds must be less than "
            "lifecycle.terminationGracePeriodSeconds (the kubelet kills the pod when the grace "
            "period ends)");
  }
}

void ReadRouting(const FieldReader& r, RoutingSpec& routing) {
  FieldReader ip = r.Child("routing").Child("inferencePool");
  InferencePoolSpec& pool = routing.inference_pool;
  pool.enabled = ip.Bool("enabled", false);
  if (ip.Has("endpointPicker")) {
    FieldReader epp = ip.Child("endpointPicker");
    EndpointPickerRef ref;
    ref.name = epp.Required("name", kDnsLabel, 63);
    ref.port = epp.Int("port", 9002, 1, 65535);
    ref.failure_mode = epp.Enum("failureMode", "FailClose", {"FailOpen", "FailClose"});
    pool.endpoint_picker = ref;
  }
  if (pool.enabled && !pool.endpoint_picker) {
    r.Error(ip.path(),
            "routing.inferencePool.enabled needs routing.inferencePool.endpointPicker.name (the "
            "endpoint picker Service)");
  }
}

// spec.controlPlane.tokenSecretRef and spec.tls.
void ReadSecurity(const FieldReader& r, InferenceDeploymentSpec& s) {
  FieldReader cp = r.Child("controlPlane");
  if (cp.Has("tokenSecretRef")) {
    FieldReader ts = cp.Child("tokenSecretRef");
    SecretKeyRef ref;
    ref.name = ts.Required("name", kDnsSubdomain, 253);
    ref.key = ts.String("key", "token", "^[-._a-zA-Z0-9]+$", 253);
    s.control_plane.token_secret = ref;
  }
  if (r.Has("tls")) {
    TlsSpec tls;
    tls.secret_name = r.Child("tls").Required("secretName", kDnsSubdomain, 253);
    s.tls = tls;
  }
}

void ReadSpec(const FieldReader& r, InferenceDeploymentSpec& s) {
  s.replicas = r.Int("replicas", 1, 0, 1000);

  FieldReader model = r.Child("model");
  if (!r.Has("model")) r.Error(r.Path("model"), "is required");
  s.model.name = model.Required("name", nullptr, 253);
  s.model.uri = model.Required("uri", kModelUriPattern, 1024);
  s.model.dtype = model.Enum("dtype", "auto", {"auto", "float32", "float16", "bfloat16"});
  if (!s.model.uri.empty()) {
    auto src = ParseModelUri(s.model.uri);
    if (src.ok()) s.model_source = *src;
  }
  ReadModelPull(r, model, s.model, s.model_source);

  FieldReader par = r.Child("parallelism");
  s.parallelism.tensor = par.Int("tensor", 1, 1, 64);
  s.parallelism.pipeline = par.Int("pipeline", 1, 1, 32);
  s.parallelism.gpus_per_pod = par.Int("gpusPerPod", 1, 1, 16);
  s.parallelism.device = par.Enum("device", "gpu", {"gpu", "cpu"});
  if (s.parallelism.tensor % s.parallelism.gpus_per_pod != 0) {
    r.Error(par.path(),
            "parallelism.tensor must be a multiple of parallelism.gpusPerPod (pods per stage = "
            "tensor / gpusPerPod)");
  }
  if (auto layers = par.IntList("pipelineLayers", 1, 100000, 32)) {
    s.parallelism.pipeline_layers = *layers;
    if (static_cast<int>(layers->size()) != s.parallelism.pipeline) {
      r.Error(par.path(),
              "parallelism.pipelineLayers must give one layer count per stage (as many items as "
              "parallelism.pipeline)");
    }
  }

  FieldReader eng = r.Child("engine");
  EngineSpec& e = s.engine;
  e.max_batch_size = eng.Int("maxBatchSize", 64, 1, 4096);
  e.max_batched_tokens = eng.Int("maxBatchedTokens", 2048, 1, 1048576);
  e.kv_policy = eng.Enum("kvPolicy", "paged", {"paged", "reserve"});
  e.block_size = eng.Int("blockSize", 16, 8, 128);
  if (e.block_size != 8 && e.block_size != 16 && e.block_size != 32 && e.block_size != 64 &&
      e.block_size != 128) {
    eng.Error(eng.Path("blockSize"), "must be one of 8, 16, 32, 64, 128");
  }
  e.chunked_prefill = eng.Bool("chunkedPrefill", true);
  e.prefix_caching = eng.Bool("prefixCaching", false);
  e.memory_fraction = eng.Number("memoryFraction", 0.9, 0.05, 1.0);
  e.scheduling_policy = eng.Enum("schedulingPolicy", "iteration", {"iteration", "request"});
  e.target_itl_ms = eng.Number("targetItlMs", 0, 0, 60000);
  if (e.max_batched_tokens < e.max_batch_size) {
    r.Error(eng.path(),
            "engine.maxBatchedTokens must be at least engine.maxBatchSize (every running "
            "sequence needs one token per iteration)");
  }
  if (e.prefix_caching && e.kv_policy != "paged") {
    r.Error(eng.path(), "engine.prefixCaching requires engine.kvPolicy 'paged'");
  }
  if (e.prefix_caching && e.scheduling_policy != "iteration") {
    r.Error(eng.path(),
            "engine.prefixCaching requires engine.schedulingPolicy 'iteration' (request-level "
            "batching never shares KV blocks, so the engine would turn prefix caching off)");
  }

  s.image = r.String("image", s.image);
  if (s.image.empty()) r.Error(r.Path("image"), "must not be empty");
  s.image_pull_policy =
      r.Enum("imagePullPolicy", "IfNotPresent", {"Always", "IfNotPresent", "Never"});
  s.image_pull_secrets = r.Raw("imagePullSecrets", Json::value_t::array);
  s.scheduler = ReadPodSettings(r.Child("scheduler"));
  s.worker = ReadPodSettings(r.Child("worker"));

  FieldReader gp = r.Child("groupPolicy");
  s.group_policy.max_group_restarts = gp.Int("maxGroupRestarts", 5, 0, 1000);
  s.group_policy.restart_backoff_seconds = gp.Int("restartBackoffSeconds", 10, 0, 3600);

  FieldReader ro = r.Child("rolloutStrategy");
  s.rollout.type = ro.Enum("type", "RollingUpdate", {"RollingUpdate", "Recreate"});
  if (ro.Has("rollingUpdate") && s.rollout.type != "RollingUpdate") {
    r.Error(ro.path(),
            "rolloutStrategy.rollingUpdate may only be set when rolloutStrategy.type is "
            "RollingUpdate");
  }
  s.rollout.max_unavailable = ro.Child("rollingUpdate").Int("maxUnavailable", 1, 1, 1000);

  FieldReader svc = r.Child("service");
  s.service.type = svc.Enum("type", "ClusterIP", {"ClusterIP", "NodePort", "LoadBalancer"});
  s.service.port = svc.Int("port", 8000, 1, 65535);
  s.service.grpc_port = svc.Int("grpcPort", 8001, 1, 65535);
  s.service.annotations = svc.StringMap("annotations");

  FieldReader ing = r.Child("ingress");
  s.ingress.enabled = ing.Bool("enabled", false);
  s.ingress.class_name = ing.String("className", "");
  s.ingress.host = ing.String(
      "host", "", "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
  s.ingress.path = ing.String("path", "/", "^/.*");
  s.ingress.path_type =
      ing.Enum("pathType", "Prefix", {"Prefix", "Exact", "ImplementationSpecific"});
  if (ing.Has("tls")) {
    s.ingress.tls_secret_name = ing.Child("tls").Required("secretName");
    if (!ing.Has("host")) r.Error(ing.path(), "ingress.tls requires ingress.host");
  }
  s.ingress.annotations = ing.StringMap("annotations");

  FieldReader as = r.Child("autoscaling");
  AutoscalingSpec& a = s.autoscaling;
  a.enabled = as.Bool("enabled", false);
  a.min_replicas = as.Int("minReplicas", 1, 1, 1000);
  a.max_replicas = as.OptionalInt("maxReplicas", 1, 1000);
  a.backend = as.Enum("backend", "HPA", {"HPA", "KEDA"});
  a.metric = as.String("metric", a.metric, "^[a-zA-Z_:][a-zA-Z0-9_:]*$");
  a.target = as.String("target", a.target, "^[0-9]+(\\.[0-9]+)?(m|k|M|G)?$");
  FieldReader prom = as.Child("prometheus");
  a.prometheus_server = prom.String("serverAddress", a.prometheus_server);
  a.prometheus_query = prom.String("query", "");
  a.behavior = as.Raw("behavior", Json::value_t::object);
  if (a.enabled && !a.max_replicas) {
    r.Error(as.path(), "autoscaling.maxReplicas is required when autoscaling is enabled");
  }
  if (a.max_replicas && a.min_replicas > *a.max_replicas) {
    r.Error(as.path(), "autoscaling.minReplicas must not exceed autoscaling.maxReplicas");
  }
  if (a.enabled &&
      (s.replicas < a.min_replicas || (a.max_replicas && s.replicas > *a.max_replicas))) {
    r.Error(r.path(),
            "with autoscaling enabled, spec.replicas is owned by the autoscaler and must stay "
            "within [autoscaling.minReplicas, autoscaling.maxReplicas]");
  }

  if (r.Has("apiKeySecretRef")) {
    FieldReader ak = r.Child("apiKeySecretRef");
    ApiKeySecretRef ref;
    ref.name = ak.Required("name");
    ref.key = ak.String("key", "api-key");
    s.api_key = ref;
  }

  ReadSecurity(r, s);
  ReadLifecycle(r, s.lifecycle);
  ReadRouting(r, s.routing);
}

}  // namespace

absl::StatusOr<InferenceDeployment> ParseInferenceDeployment(const Json& object) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError("InferenceDeployment: not an object");
  }
  std::vector<std::string> errors;
  FieldReader root(&object, "", &errors);
  if (root.String("apiVersion", "") != kApiVersion) {
    errors.push_back(absl::StrCat("apiVersion: must be ", kApiVersion));
  }
  if (root.String("kind", "") != kKind) errors.push_back(absl::StrCat("kind: must be ", kKind));

  InferenceDeployment d;
  FieldReader meta = root.Child("metadata");
  d.name = meta.Required("name", kDnsLabel);
  if (d.name.size() > static_cast<size_t>(kMaxNameLength)) {
    errors.push_back(absl::StrCat("metadata.name: must be at most ", kMaxNameLength,
                                  " characters: the names of the owned objects are derived "
                                  "from it"));
  }
  d.ns = meta.String("namespace", "default", kDnsLabel);
  d.uid = meta.String("uid", "");
  d.resource_version = meta.String("resourceVersion", "");
  if (meta.Has("generation") && object["metadata"]["generation"].is_number_integer()) {
    d.generation = object["metadata"]["generation"].get<int64_t>();
  }
  if (!root.Has("spec")) errors.push_back("spec: is required");
  ReadSpec(root.Child("spec"), d.spec);
  if (object.contains("status")) d.status = object["status"];

  if (!errors.empty()) {
    for (auto& e : errors) {
      if (!e.empty() && e[0] == '.') e.erase(0, 1);
    }
    return absl::InvalidArgumentError(absl::StrCat("invalid InferenceDeployment ", d.ns, "/",
                                                   d.name, ": ", absl::StrJoin(errors, "; ")));
  }
  return d;
}

Json PodTemplateInputs(const InferenceDeploymentSpec& s) {
  auto pod = [](const PodSettings& p) {
    return Json{{"resources", p.resources},
                {"nodeSelector", p.node_selector},
                {"tolerations", p.tolerations},
                {"affinity", p.affinity},
                {"env", p.env},
                {"podAnnotations", p.pod_annotations},
                {"serviceAccountName", p.service_account_name},
                {"priorityClassName", p.priority_class_name}};
  };
  const EngineSpec& e = s.engine;
  const LifecycleSpec& l = s.lifecycle;
  Json inputs = Json{
      {"model",
       {{"name", s.model.name},
        {"uri", s.model.uri},
        {"dtype", s.model.dtype},
        {"tokenSecret", s.model.token_secret ? Json{{"name", s.model.token_secret->name},
                                                    {"key", s.model.token_secret->key}}
                                             : Json()},
        {"sha256", s.model.sha256},
        {"downloadSizeLimit", s.model.download_size_limit}}},
      {"lifecycle",
       {{"terminationGracePeriodSeconds", l.termination_grace_period_seconds},
        {"preStopSleepSeconds", l.pre_stop_sleep_seconds},
        {"drainSeconds", l.drain_seconds},
        {"joinTimeoutSeconds", l.join_timeout_seconds}}},
      {"parallelism",
       {{"tensor", s.parallelism.tensor},
        {"pipeline", s.parallelism.pipeline},
        {"gpusPerPod", s.parallelism.gpus_per_pod},
        {"device", s.parallelism.device}}},
      {"engine",
       {{"maxBatchSize", e.max_batch_size},
        {"maxBatchedTokens", e.max_batched_tokens},
        {"kvPolicy", e.kv_policy},
        {"blockSize", e.block_size},
        {"chunkedPrefill", e.chunked_prefill},
        {"prefixCaching", e.prefix_caching},
        {"memoryFraction", e.memory_fraction},
        {"schedulingPolicy", e.scheduling_policy}}},
      {"image", s.image},
      {"imagePullPolicy", s.image_pull_policy},
      {"imagePullSecrets", s.image_pull_secrets},
      {"scheduler", pod(s.scheduler)},
      {"worker", pod(s.worker)},
      {"apiKeySecretRef",
       s.api_key ? Json{{"name", s.api_key->name}, {"key", s.api_key->key}} : Json()},
  };
  // Fields added later enter only when set, so that a controller upgrade does not change
  // the revision of (and roll) deployments that do not use them.
  if (s.control_plane.token_secret) {
    inputs["controlPlane"] = {{"tokenSecretRef",
                               {{"name", s.control_plane.token_secret->name},
                                {"key", s.control_plane.token_secret->key}}}};
  }
  if (s.tls) inputs["tls"] = {{"secretName", s.tls->secret_name}};
  if (e.target_itl_ms > 0) inputs["engine"]["targetItlMs"] = e.target_itl_ms;
  if (!s.parallelism.pipeline_layers.empty()) {
    inputs["parallelism"]["pipelineLayers"] = s.parallelism.pipeline_layers;
  }
  return inputs;
}

}  // namespace orca::controller

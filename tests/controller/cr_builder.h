// A fluent builder of InferenceDeployment objects for tests (LWS test/wrappers style).
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace orca::controller::testing {

class CrBuilder {
 public:
  explicit CrBuilder(std::string name = "demo", std::string ns = "default") {
    cr_ = {{"apiVersion", "serving.orca.dev/v1alpha1"},
           {"kind", "InferenceDeployment"},
           {"metadata", {{"name", std::move(name)}, {"namespace", std::move(ns)}}},
           {"spec",
            {{"model", {{"name", "tiny"}, {"uri", "pvc://models/tiny"}}}, {"image", "orca:test"}}}};
  }
  CrBuilder& Replicas(int n) { return Set("/spec/replicas", n); }
  CrBuilder& Tensor(int n) { return Set("/spec/parallelism/tensor", n); }
  CrBuilder& Pipeline(int n) { return Set("/spec/parallelism/pipeline", n); }
  CrBuilder& GpusPerPod(int n) { return Set("/spec/parallelism/gpusPerPod", n); }
  CrBuilder& Image(const std::string& image) { return Set("/spec/image", image); }
  CrBuilder& MaxUnavailable(int n) {
    return Set("/spec/rolloutStrategy/rollingUpdate/maxUnavailable", n);
  }
  CrBuilder& Recreate() { return Set("/spec/rolloutStrategy/type", "Recreate"); }
  CrBuilder& MaxGroupRestarts(int n) { return Set("/spec/groupPolicy/maxGroupRestarts", n); }
  CrBuilder& RestartBackoff(int s) { return Set("/spec/groupPolicy/restartBackoffSeconds", s); }
  CrBuilder& Autoscaling(const std::string& backend, int min, int max) {
    Set("/spec/autoscaling/enabled", true);
    Set("/spec/autoscaling/backend", backend);
    Set("/spec/autoscaling/minReplicas", min);
    return Set("/spec/autoscaling/maxReplicas", max);
  }
  CrBuilder& Ingress(const std::string& host) {
    Set("/spec/ingress/enabled", true);
    return Set("/spec/ingress/host", host);
  }
  CrBuilder& ModelUri(const std::string& uri) { return Set("/spec/model/uri", uri); }
  CrBuilder& TokenSecret(const std::string& name) {
    return Set("/spec/model/tokenSecret/name", name);
  }
  CrBuilder& WorkerEnv(const std::string& name, const std::string& value) {
    return Set("/spec/worker/env", nlohmann::json::array({{{"name", name}, {"value", value}}}));
  }
  CrBuilder& InferencePool(const std::string& endpoint_picker) {
    Set("/spec/routing/inferencePool/enabled", true);
    return Set("/spec/routing/inferencePool/endpointPicker/name", endpoint_picker);
  }
  CrBuilder& Set(const std::string& pointer, nlohmann::json value) {
    cr_[nlohmann::json::json_pointer(pointer)] = std::move(value);
    return *this;
  }
  nlohmann::json Build() const { return cr_; }

 private:
  nlohmann::json cr_;
};

}  // namespace orca::controller::testing

// The narrow Kubernetes API the controller needs, and the resource types it uses.
//
// KubeClient is an interface so the reconciler can be driven by the REST client
// against a real API server or the fake one in tests/controller. Implementations
// are safe for concurrent use from multiple threads.
//
// Errors are absl::Status with one code per API failure class (see kube_errors.h):
// NotFound (404), Aborted (409 conflict), AlreadyExists (409 on create), OutOfRange
// (410 Gone: resourceVersion too old), PermissionDenied (403), Unauthenticated (401),
// InvalidArgument (400, 422), ResourceExhausted (429), Unavailable (5xx, connection
// and TLS failures), DeadlineExceeded (timeouts).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace orca::controller {

using Json = nlohmann::json;

// Where a resource type lives in the REST API.
struct ResourceType {
  std::string api_version;  // "v1", "apps/v1", "serving.orca.dev/v1alpha1"
  std::string kind;
  std::string plural;
  bool namespaced = true;
};

namespace resources {
extern const ResourceType kInferenceDeployment;
extern const ResourceType kConfigMap;
extern const ResourceType kService;
extern const ResourceType kPod;
extern const ResourceType kEvent;
extern const ResourceType kDeployment;
extern const ResourceType kStatefulSet;
extern const ResourceType kIngress;
extern const ResourceType kHorizontalPodAutoscaler;
extern const ResourceType kScaledObject;
extern const ResourceType kInferencePool;  // Gateway API Inference Extension
extern const ResourceType kLease;
// Returns the type of `object` (by apiVersion and kind), or nullptr if unknown.
const ResourceType* ForObject(const Json& object);
}  // namespace resources

// Returns the REST path of a collection ("/apis/apps/v1/namespaces/ns/deployments") or,
// with a name, of one object. An empty namespace means all namespaces.
std::string ResourcePath(const ResourceType& type, const std::string& ns,
                         const std::string& name = "");

struct ListOptions {
  std::string label_selector;
  std::string resource_version;
};

struct ObjectList {
  std::vector<Json> items;
  std::string resource_version;
};

struct WatchOptions {
  std::string label_selector;
  std::string resource_version;
  int timeout_seconds = 300;
  bool allow_bookmarks = true;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  Json object;
};

enum class Propagation { kBackground, kForeground, kOrphan };

class KubeClient {
 public:
  virtual ~KubeClient() = default;

  // Returns the object, or NotFound.
  virtual absl::StatusOr<Json> Get(const ResourceType& type, const std::string& ns,
                                   const std::string& name) = 0;

  // Returns the objects matching `options` and the list's resourceVersion.
  virtual absl::StatusOr<ObjectList> List(const ResourceType& type, const std::string& ns,
                                          const ListOptions& options) = 0;

  // Streams changes after options.resource_version to `on_event` until the server
  // ends the stream (returns OK), `on_event` returns false (OK), or the stream fails.
  // Returns OutOfRange when the resourceVersion is too old (410 Gone): relist.
  virtual absl::Status Watch(const ResourceType& type, const std::string& ns,
                             const WatchOptions& options,
                             const std::function<bool(const WatchEvent&)>& on_event) = 0;

  // Server-side applies `object` (field manager "orca-controller"); returns the
  // stored object.
  virtual absl::StatusOr<Json> Apply(const ResourceType& type, const Json& object, bool force) = 0;

  // Creates `object`; AlreadyExists when it exists.
  virtual absl::StatusOr<Json> Create(const ResourceType& type, const Json& object) = 0;

  // Replaces `object`, which must carry metadata.resourceVersion; Aborted on conflict.
  virtual absl::StatusOr<Json> Update(const ResourceType& type, const Json& object) = 0;

  // Replaces the status subresource of `object` (resourceVersion precondition as Update).
  virtual absl::StatusOr<Json> UpdateStatus(const ResourceType& type, const Json& object) = 0;

  // Deletes the object; NotFound when it is gone already.
  virtual absl::Status Delete(const ResourceType& type, const std::string& ns,
                              const std::string& name, Propagation propagation) = 0;
};

}  // namespace orca::controller

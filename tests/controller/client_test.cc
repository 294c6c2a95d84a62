// RestClient, kubeconfig loading and the informer against the fake API server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "controller/client/kube_config.h"
#include "controller/client/kube_errors.h"
#include "controller/client/rest_client.h"
#include "controller/client/watch_event.h"
#include "controller/reconcile/informer.h"
#include "tests/controller/fake_api_server.h"

namespace orca::controller {
namespace {

using testing::FakeApiServer;
using testing::FakeApiServerOptions;
using ::testing::HasSubstr;

Json ConfigMap(const std::string& name, const std::string& value,
               const std::string& owner_uid = "") {
  Json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", name}, {"namespace", "ns"}, {"labels", {{"app", "x"}}}}},
             {"data", {{"k", value}}}};
  if (!owner_uid.empty()) {
    cm["metadata"]["ownerReferences"] = Json::array(
        {{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "o"}, {"uid", owner_uid}}});
  }
  return cm;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }
  void Start(FakeApiServerOptions opts, const std::string& token = "") {
    opts.simulate_workloads = false;
    auto f = FakeApiServer::Start(opts);
    ASSERT_TRUE(f.ok()) << f.status();
    fake_ = std::move(*f);
    RestConfig config;
    config.server = fake_->url();
    config.bearer_token = token;
    config.timeout = absl::Seconds(5);
    config.retry_backoff = {absl::Milliseconds(5), absl::Milliseconds(20), 2.0, 0.2};
    auto c = RestClient::Create(config);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }
  std::unique_ptr<FakeApiServer> fake_;
  std::unique_ptr<RestClient> client_;
};

TEST_F(ClientTest, CrudWithTypedErrors) {
  auto created = client_->Create(resources::kConfigMap, ConfigMap("a", "1"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(
      absl::IsAlreadyExists(client_->Create(resources::kConfigMap, ConfigMap("a", "1")).status()));
  EXPECT_TRUE(absl::IsNotFound(client_->Get(resources::kConfigMap, "ns", "nope").status()));

  Json stale = *created;
  Json fresh = *created;
  fresh["data"]["k"] = "2";
  ASSERT_TRUE(client_->Update(resources::kConfigMap, fresh).ok());
  stale["data"]["k"] = "3";
  absl::Status conflict = client_->Update(resources::kConfigMap, stale).status();
  EXPECT_TRUE(IsConflict(conflict)) << conflict;

  ASSERT_TRUE(client_->Create(resources::kConfigMap, ConfigMap("b", "1")).ok());
  Json other = ConfigMap("c", "1");
  other["metadata"]["labels"]["app"] = "y";
  ASSERT_TRUE(client_->Create(resources::kConfigMap, other).ok());
  auto list = client_->List(resources::kConfigMap, "ns", {"app=x", ""});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[0]["kind"], "ConfigMap") << "list items get their kind back";
  EXPECT_FALSE(list->resource_version.empty());

  EXPECT_TRUE(client_->Delete(resources::kConfigMap, "ns", "a", Propagation::kBackground).ok());
  EXPECT_TRUE(absl::IsNotFound(
      client_->Delete(resources::kConfigMap, "ns", "a", Propagation::kBackground)));
}

TEST_F(ClientTest, DeleteCascadesToOwnedObjects) {
  auto owner = client_->Create(resources::kConfigMap, ConfigMap("owner", "1"));
  ASSERT_TRUE(owner.ok());
  std::string uid = (*owner)["metadata"]["uid"];
  ASSERT_TRUE(client_->Create(resources::kConfigMap, ConfigMap("child", "1", uid)).ok());
  ASSERT_TRUE(client_->Delete(resources::kConfigMap, "ns", "owner", Propagation::kBackground).ok());
  EXPECT_TRUE(absl::IsNotFound(client_->Get(resources::kConfigMap, "ns", "child").status()));
}

TEST_F(ClientTest, ServerSideApplyTracksOwnership) {
  auto a = client_->Apply(resources::kConfigMap, ConfigMap("s", "1"), true);
  ASSERT_TRUE(a.ok()) << a.status();
  std::string rv = (*a)["metadata"]["resourceVersion"];
  auto again = client_->Apply(resources::kConfigMap, ConfigMap("s", "1"), true);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)["metadata"]["resourceVersion"], rv) << "a no-op apply must not bump it";

  // Another writer takes data.k; a non-forced apply conflicts, a forced one wins.
  Json edited = *again;
  edited["data"]["k"] = "edited";
  ASSERT_TRUE(client_->Update(resources::kConfigMap, edited).ok());
  absl::Status c = client_->Apply(resources::kConfigMap, ConfigMap("s", "1"), false).status();
  EXPECT_TRUE(IsConflict(c)) << c;
  EXPECT_THAT(std::string(c.message()), HasSubstr("/data/k"));
  auto forced = client_->Apply(resources::kConfigMap, ConfigMap("s", "1"), true);
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ((*forced)["data"]["k"], "1");

  // Fields the manager stops applying are removed.
  Json less = ConfigMap("s", "1");
  less["metadata"].erase("labels");
  auto pruned = client_->Apply(resources::kConfigMap, less, true);
  ASSERT_TRUE(pruned.ok());
  EXPECT_FALSE((*pruned)["metadata"].contains("labels") &&
               (*pruned)["metadata"]["labels"].contains("app"));
}

TEST_F(ClientTest, StatusSubresourceAndGenerations) {
  Json cr = {{"apiVersion", "serving.orca.dev/v1alpha1"},
             {"kind", "InferenceDeployment"},
             {"metadata", {{"name", "d"}, {"namespace", "ns"}}},
             {"spec", {{"replicas", 1}}},
             {"status", {{"replicas", 9}}}};
  auto created = client_->Create(resources::kInferenceDeployment, cr);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ((*created)["metadata"]["generation"], 1);
  Json with_status = *created;
  with_status["status"] = {{"replicas", 1}};
  with_status["spec"]["replicas"] = 5;  // ignored by the status subresource
  auto s = client_->UpdateStatus(resources::kInferenceDeployment, with_status);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)["spec"]["replicas"], 1);
  EXPECT_EQ((*s)["status"]["replicas"], 1);
  EXPECT_EQ((*s)["metadata"]["generation"], 1) << "status writes do not bump generation";
  Json spec_change = *s;
  spec_change["spec"]["replicas"] = 2;
  spec_change["status"] = {{"replicas", 7}};  // ignored by the main resource
  auto u = client_->Update(resources::kInferenceDeployment, spec_change);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ((*u)["metadata"]["generation"], 2);
  EXPECT_EQ((*u)["status"]["replicas"], 1);
}

TEST_F(ClientTest, WatchStreamsEventsAndBookmarks) {
  auto list = client_->List(resources::kConfigMap, "ns", {});
  ASSERT_TRUE(list.ok());
  std::thread writer([&] {
    absl::SleepFor(absl::Milliseconds(50));
    (void)client_->Create(resources::kConfigMap, ConfigMap("w", "1"));
    (void)client_->Delete(resources::kConfigMap, "ns", "w", Propagation::kBackground);
  });
  std::vector<WatchEventType> seen;
  absl::Status s =
      client_->Watch(resources::kConfigMap, "ns", {"", list->resource_version, 30, true},
                     [&](const WatchEvent& ev) {
                       seen.push_back(ev.type);
                       return seen.size() < 3;
                     });
  writer.join();
  EXPECT_TRUE(s.ok()) << s;
  ASSERT_GE(seen.size(), 2u);
  std::vector<WatchEventType> changes;
  for (auto t : seen) {
    if (t != WatchEventType::kBookmark) changes.push_back(t);
  }
  EXPECT_EQ(changes[0], WatchEventType::kAdded);
  if (changes.size() > 1) {
    EXPECT_EQ(changes[1], WatchEventType::kDeleted);
  }
}

TEST_F(ClientTest, WatchFromCompactedVersionIsGone) {
  auto list = client_->List(resources::kConfigMap, "ns", {});
  ASSERT_TRUE(client_->Create(resources::kConfigMap, ConfigMap("g", "1")).ok());
  fake_->Compact();
  absl::Status s =
      client_->Watch(resources::kConfigMap, "ns", {"", list->resource_version, 30, true},
                     [](const WatchEvent&) { return true; });
  EXPECT_TRUE(IsGone(s)) << s;
}

TEST_F(ClientTest, RetriesTransientFailures) {
  ASSERT_TRUE(client_->Create(resources::kConfigMap, ConfigMap("r", "1")).ok());
  fake_->FailNextRequests(2, 503);
  EXPECT_TRUE(client_->Get(resources::kConfigMap, "ns", "r").ok());
  fake_->FailNextRequests(10, 500);
  absl::Status s = client_->Get(resources::kConfigMap, "ns", "r").status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  fake_->FailNextRequests(0);
  fake_->FailNextRequests(1, 404);
  EXPECT_TRUE(absl::IsNotFound(client_->Get(resources::kConfigMap, "ns", "r").status()))
      << "a 404 is not retried";
}

TEST_F(ClientTest, RereadsRotatedTokenFileOn401) {
  FakeApiServerOptions opts;
  opts.required_token = "fresh";
  Start(opts, "expired");
  EXPECT_TRUE(IsUnauthorized(client_->List(resources::kConfigMap, "ns", {}).status()));

  std::string path = ::testing::TempDir() + "/token";
  std::ofstream(path) << "expired\n";
  RestConfig config = client_->config();
  config.token_file = path;
  auto c = RestClient::Create(config);
  ASSERT_TRUE(c.ok());
  std::ofstream(path) << "fresh\n";  // the kubelet rotated the projected token
  EXPECT_TRUE((*c)->List(resources::kConfigMap, "ns", {}).ok());
}

TEST_F(ClientTest, UnservedApiIsNotFound) {
  FakeApiServerOptions opts;
  opts.unserved = {"scaledobjects"};
  Start(opts);
  EXPECT_TRUE(absl::IsNotFound(client_->List(resources::kScaledObject, "ns", {}).status()));
}

TEST_F(ClientTest, InformerRelistsAfterGoneAndKeepsDelivering) {
  ASSERT_TRUE(client_->Create(resources::kConfigMap, ConfigMap("i0", "1")).ok());
  std::atomic<bool> stop{false};
  absl::Mutex mu;
  std::set<std::string> names;
  InformerOptions opts;
  opts.ns = "ns";
  opts.backoff = {absl::Milliseconds(5), absl::Milliseconds(20), 2.0, 0.2};
  Informer informer(client_.get(), resources::kConfigMap, opts, [&](const WatchEvent& ev) {
    absl::MutexLock lock(&mu);
    names.insert(ev.object["metadata"]["name"].get<std::string>());
  });
  std::thread t([&] { informer.Run(&stop); });
  auto wait_for = [&](const std::string& name) {
    for (int i = 0; i < 2000; ++i) {
      {
        absl::MutexLock lock(&mu);
        if (names.count(name)) return true;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    return false;
  };
  EXPECT_TRUE(wait_for("i0"));
  EXPECT_TRUE(informer.HasSynced());
  ASSERT_TRUE(client_->Create(resources::kConfigMap, ConfigMap("i1", "1")).ok());
  EXPECT_TRUE(wait_for("i1"));
  // Expire history, then drop the watch: the informer must relist (410) and continue.
  fake_->Compact();
  ASSERT_TRUE(client_->Create(resources::kConfigMap, ConfigMap("i2", "1")).ok());
  fake_->Compact();
  fake_->DropWatches();
  EXPECT_TRUE(wait_for("i2"));
  ASSERT_TRUE(client_->Create(resources::kConfigMap, ConfigMap("i3", "1")).ok());
  EXPECT_TRUE(wait_for("i3"));
  EXPECT_GE(informer.restarts(), 1);
  stop = true;
  fake_->DropWatches();
  t.join();
}

TEST(KubeconfigTest, LoadsClusterUserAndContext) {
  std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/ca.crt") << "CA-PEM";
  std::ofstream(dir + "/kubeconfig") << R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority: ca.crt
- name: c2
  cluster:
    server: http://127.0.0.1:8080
    insecure-skip-tls-verify: true
users:
- name: u1
  user:
    token: secret-token
- name: u2
  user:
    client-certificate-data: )" << absl::Base64Escape("CERT")
                                     << R"(
    client-key-data: )" << absl::Base64Escape("KEY")
                                     << R"(
contexts:
- name: dev
  context: {cluster: c1, user: u1}
- name: other
  context: {cluster: c2, user: u2}
)";
  auto c = LoadKubeconfig(dir + "/kubeconfig");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "CA-PEM");
  EXPECT_EQ(c->bearer_token, "secret-token");
  auto o = LoadKubeconfig(dir + "/kubeconfig", "other");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->insecure_skip_tls_verify);
  EXPECT_EQ(o->client_cert_pem, "CERT");
  EXPECT_EQ(o->client_key_pem, "KEY");
  EXPECT_THAT(std::string(LoadKubeconfig(dir + "/kubeconfig", "missing").status().message()),
              HasSubstr("context \"missing\" not found"));
}

TEST(KubeconfigTest, BrokenFilesNameTheProblem) {
  std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/broken") << "clusters: [\n  - name: x\n";
  auto b = LoadKubeconfig(dir + "/broken");
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("malformed YAML at line"));
  EXPECT_FALSE(LoadKubeconfig(dir + "/does-not-exist").ok());
  std::ofstream(dir + "/exec")
      << "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
         "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
         "users: [{name: u, user: {exec: {command: aws}}}]\n";
  EXPECT_THAT(std::string(LoadKubeconfig(dir + "/exec").status().message()), HasSubstr("exec"));
  RestConfig ftp;
  ftp.server = "ftp://x";
  EXPECT_FALSE(RestClient::Create(ftp).ok());
  RestConfig bad_ca;
  bad_ca.server = "https://127.0.0.1:1";
  bad_ca.ca_pem = "not a certificate";
  EXPECT_FALSE(RestClient::Create(bad_ca).ok());
}

TEST(KubeconfigTest, InClusterConfig) {
  std::string dir = ::testing::TempDir() + "/sa";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/token") << "sa-token\n";
  std::ofstream(dir + "/ca.crt") << "CA";
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto c = LoadInClusterConfig(dir);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->bearer_token, "sa-token");
  EXPECT_EQ(c->token_file, dir + "/token");
  EXPECT_TRUE(absl::IsFailedPrecondition(LoadInClusterConfig(dir).status()));
}

// A kubeconfig whose server port does not fit an int made orca-controller die of an
// uncaught std::out_of_range from std::stoi (found by tests/fuzz/kubeconfig_fuzzer); ports
// outside [1, 65535] and URLs too long for the URL pattern are refused.
TEST(KubeconfigTest, ServerPortsOutOfRangeAreRefused) {
  for (const std::string& server :
       {std::string("https://h:99999999999"), std::string("https://h:65536"),
        std::string("http://h:0"), "https://" + std::string(100000, 'h')}) {
    RestConfig config;
    config.server = server;
    auto client = RestClient::Create(config);
    ASSERT_FALSE(client.ok()) << server.substr(0, 40);
    EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(client.status().message()), HasSubstr("API server URL"));
  }
  RestConfig config;
  config.server = "https://[::1]:6443";
  EXPECT_TRUE(RestClient::Create(config).ok());
}

// Lines of a watch stream that the informers could not read (found by
// tests/fuzz/watch_event_fuzzer): each is refused as a malformed event, so the watch
// ends with an error and is restarted, instead of an exception or an undefined read in
// the informer (metadata.resourceVersion) or the manager (metadata.name/namespace, labels).
TEST(WatchEventTest, RefusesEventsTheInformersCannotRead) {
  for (const char* line : {
           R"({"type": 7, "object": {"metadata": {}}})",
           R"({"type": "ADDED"})",
           R"({"type": "ADDED", "object": "pod"})",
           R"({"type": "ADDED", "object": {"kind": "Pod"}})",
           R"({"type": "MODIFIED", "object": {"metadata": "x"}})",
           R"({"type": "MODIFIED", "object": {"metadata": {"name": 5}}})",
           R"({"type": "DELETED", "object": {"metadata": {"namespace": ["a"]}}})",
           R"({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": 42}}})",
           R"({"type": "ADDED", "object": {"metadata": {"labels": {"a": 1}}}})",
           R"({"type": "ADDED", "object": {"metadata": {"labels": []}}})",
       }) {
    auto event = DecodeWatchEventLine(line, "watch pods");
    ASSERT_FALSE(event.ok()) << line;
    EXPECT_EQ(event.status().code(), absl::StatusCode::kInternal) << line;
    EXPECT_THAT(std::string(event.status().message()),
                HasSubstr("watch pods: malformed watch event"))
        << line;
  }
}

// An ERROR event always ends the watch with an error: its code picks the Status (410 Gone
// relists), and a code that is missing, not an integer, out of range or a success is an
// internal error, not OK and not an exception (tests/fuzz/watch_event_fuzzer).
TEST(WatchEventTest, ErrorEventsAreNeverOk) {
  auto gone = DecodeWatchEventLine(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})",
      "watch pods");
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(IsGone(gone.status())) << gone.status();
  for (const char* line : {
           R"({"type": "ERROR", "object": {"code": "410"}})",
           R"({"type": "ERROR", "object": {"code": 1e300}})",
           R"({"type": "ERROR", "object": {"code": 200}})",
           R"({"type": "ERROR", "object": {"code": -1}})",
           R"({"type": "ERROR", "object": {"code": 18446744073709551615}})",
           R"({"type": "ERROR"})",
       }) {
    auto event = DecodeWatchEventLine(line, "watch pods");
    ASSERT_FALSE(event.ok()) << line;
    EXPECT_FALSE(IsGone(event.status())) << line;
  }
}

TEST(WatchEventTest, DecodesEventsAndSkipsUnknownTypes) {
  auto added = DecodeWatchEventLine(
      R"({"type":"ADDED","object":{"metadata":{"name":"p","namespace":"ns","resourceVersion":"7","labels":{"a":"b"}}}})",
      "watch pods");
  ASSERT_TRUE(added.ok()) << added.status();
  ASSERT_TRUE(added->has_value());
  EXPECT_EQ((*added)->type, WatchEventType::kAdded);
  EXPECT_EQ((*added)->object["metadata"]["resourceVersion"], "7");
  auto bookmark = DecodeWatchEventLine(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"9"}}})", "w");
  ASSERT_TRUE(bookmark.ok() && bookmark->has_value());
  EXPECT_EQ((*bookmark)->type, WatchEventType::kBookmark);
  for (const char* skipped : {"", "  \r", R"({"type":"SYNC","object":1})"}) {
    auto event = DecodeWatchEventLine(skipped, "w");
    ASSERT_TRUE(event.ok()) << skipped;
    EXPECT_FALSE(event->has_value()) << skipped;
  }
}

}  // namespace
}  // namespace orca::controller

// The control-plane token (parallelism.control_token_file; docs/security.md): with one,
// the scheduler's orca.v1.ControlPlane refuses every call that does not carry it
// (UNAUTHENTICATED, a message naming neither token) before it does anything: a refused
// StoreSet writes nothing, a refused Join is no rank. Refusals are logged with the peer,
// rate limited. Workers with the token form the group (Join and the Gloo rendezvous
// store both carry it); a worker with a wrong or no token ends at once with "control-plane
// token refused" (the `orca worker` process exits 1 saying so). `orca serve` with local
// workers authenticates its group with a token it generates into a 0600 file that only
// the workers' command lines name, and removes it at exit. Needs models/stories260K; the
// process tests need ORCA_BIN (skipped without it, failed under CI=true).
#include <dirent.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/group/group_executor.h"
#include "orca/v1/control.grpc.pb.h"
#include "tests/engine/group/group_test_util.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using testing::Ranks;

constexpr char kToken[] = "5f2b9c0d41e8a7763e1c9b0a2d4f6e8a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e";

GroupExecutorOptions Options(const std::string& dir, int32_t tensor, std::string token) {
  GroupExecutorOptions go;
  go.model_dir = dir;
  go.parallel.tensor = tensor;
  go.listen = "127.0.0.1:0";
  go.kv_cache.block_size = 16;
  go.kv_cache.num_blocks = 64;
  go.comm_timeout_s = 20;
  go.iteration_timeout_s = 30;
  go.control_token = std::move(token);
  return go;
}

std::unique_ptr<v1::ControlPlane::Stub> StubFor(int port) {
  return v1::ControlPlane::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
}

// A bare call's context: a deadline, and `token` as the Bearer ("" = no metadata).
void Prepare(grpc::ClientContext& ctx, const std::string& token, int deadline_ms = 5000) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
}

grpc::Status StoreSet(v1::ControlPlane::Stub& stub, const std::string& token,
                      const std::string& key, const std::string& value) {
  grpc::ClientContext ctx;
  Prepare(ctx, token);
  v1::StoreSetRequest req;
  req.set_key(key);
  req.set_value(value);
  v1::StoreSetResponse resp;
  return stub.StoreSet(&ctx, req, &resp);
}

grpc::Status StoreGet(v1::ControlPlane::Stub& stub, const std::string& token,
                      const std::string& key, std::string* value, int deadline_ms = 5000) {
  grpc::ClientContext ctx;
  Prepare(ctx, token, deadline_ms);
  v1::StoreGetRequest req;
  req.add_keys(key);
  v1::StoreGetResponse resp;
  grpc::Status s = stub.StoreGet(&ctx, req, &resp);
  if (s.ok() && resp.values_size() == 1) *value = resp.values(0);
  return s;
}

// A bare Join: sends a hello and returns how the call ends.
grpc::Status BareJoin(v1::ControlPlane::Stub& stub, const std::string& token) {
  grpc::ClientContext ctx;
  Prepare(ctx, token);
  auto stream = stub.Join(&ctx);
  v1::WorkerMessage hello;
  hello.mutable_hello()->set_device("cpu");
  hello.mutable_hello()->set_worker("intruder");
  stream->Write(hello);
  v1::SchedulerMessage in;
  while (stream->Read(&in)) {
  }
  return stream->Finish();
}

int CountOccurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ControlPlaneAuthTest, CallsWithoutTheTokenAreRefusedBeforeTheyDoAnything) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto group = GroupExecutor::Create(Options(dir, 2, kToken));
  ASSERT_TRUE(group.ok()) << group.status();
  auto stub = StubFor((*group)->port());

  ::testing::internal::CaptureStderr();
  for (const std::string& sent : {std::string(), std::string("wrong-guess-123")}) {
    grpc::Status set = StoreSet(*stub, sent, "orca/g1/k", "planted");
    EXPECT_EQ(set.error_code(), grpc::StatusCode::UNAUTHENTICATED) << set.error_message();
    EXPECT_TRUE(absl::StrContains(set.error_message(), "control-plane token"));
    EXPECT_FALSE(absl::StrContains(set.error_message(), kToken));
    EXPECT_FALSE(absl::StrContains(set.error_message(), "wrong-guess"));
    std::string value;
    EXPECT_EQ(StoreGet(*stub, sent, "orca/g1/k", &value).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(BareJoin(*stub, sent).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  for (int i = 0; i < 20; ++i) (void)StoreSet(*stub, "", "orca/g1/k", "planted");
  const std::string log = ::testing::internal::GetCapturedStderr();
  // 26 refusals within the 10 s interval: one line, naming the peer and the method.
  EXPECT_EQ(CountOccurrences(log, "control plane: refused"), 1) << log;
  EXPECT_TRUE(absl::StrContains(log, "refused StoreSet from ipv4:127.0.0.1:")) << log;
  EXPECT_FALSE(absl::StrContains(log, kToken)) << log;
  EXPECT_FALSE(absl::StrContains(log, "wrong-guess")) << log;

  // Nothing joined, nothing was written: the refused StoreSet left no key behind.
  EXPECT_EQ((*group)->group_status().ranks_joined, 0);
  std::string value;
  EXPECT_EQ(StoreGet(*stub, kToken, "orca/g1/k", &value, 300).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  // With the token the store works.
  ASSERT_TRUE(StoreSet(*stub, kToken, "orca/g1/k", "v").ok());
  ASSERT_TRUE(StoreGet(*stub, kToken, "orca/g1/k", &value).ok());
  EXPECT_EQ(value, "v");
}

TEST(ControlPlaneAuthTest, WorkersWithTheTokenFormTheGroupOthersEndAtOnce) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto group = GroupExecutor::Create(Options(dir, 2, kToken));
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor& exec = **group;
  Ranks ranks(dir, exec.port(), 2);
  for (const std::string& token : {std::string(), std::string("not-the-token")}) {
    WorkerOptions o = ranks.Options(0);
    o.control_token = token;
    const absl::Time start = absl::Now();
    ranks.Start(0, o);
    absl::Status s = ranks.WaitExit(0, absl::Seconds(20));
    EXPECT_TRUE(absl::IsUnauthenticated(s)) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "control-plane token refused")) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "--control-token-file")) << s;
    EXPECT_FALSE(absl::StrContains(s.message(), kToken)) << s;
    EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << "refused at once, not retried";
  }
  EXPECT_EQ(exec.group_status().ranks_joined, 0);
  // Both ranks with the token: Join and the Gloo rendezvous (StoreSet/StoreGet) pass.
  for (int32_t rank = 0; rank < 2; ++rank) {
    WorkerOptions o = ranks.Options(rank);
    o.control_token = kToken;
    ranks.Start(rank, o);
  }
  EXPECT_TRUE(exec.WaitReady(absl::Seconds(60)));
  EXPECT_TRUE(ranks.StopRank(0).ok());
  EXPECT_TRUE(ranks.StopRank(1).ok());
}

// ---------------------------------------------------------------------------------------
// The processes.

const char* OrcaBin() {
  const char* bin = std::getenv("ORCA_BIN");
  return bin != nullptr && access(bin, X_OK) == 0 ? bin : nullptr;
}

#define ORCA_REQUIRE_BIN(var)                                             \
  const char* var = OrcaBin();                                            \
  do {                                                                    \
    if (var == nullptr) {                                                 \
      if (::orca::testing::InCi()) FAIL() << "ORCA_BIN is not set in CI"; \
      GTEST_SKIP() << "ORCA_BIN not set";                                 \
    }                                                                     \
  } while (0)

TEST(ControlPlaneAuthProcessTest, AWorkerWithAWrongTokenExitsNonZeroSayingSo) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  ORCA_REQUIRE_BIN(orca);
  auto group = GroupExecutor::Create(Options(dir, 1, kToken));
  ASSERT_TRUE(group.ok()) << group.status();
  testing::TempDir tmp;
  std::ofstream(tmp.file("token")) << "a-stale-token\n";
  std::string out;
  const absl::Time start = absl::Now();
  const int code = testing::RunCommand(
      absl::StrCat("timeout 60 ", orca, " worker --scheduler 127.0.0.1:", (*group)->port(),
                   " --model ", dir, " --metrics-port -1 --join-timeout 120 --control-token-file ",
                   tmp.file("token"), " 2>&1"),
      &out);
  EXPECT_EQ(code, 1) << out;
  EXPECT_TRUE(absl::StrContains(out, "control-plane token refused")) << out;
  EXPECT_FALSE(absl::StrContains(out, "a-stale-token")) << out;
  EXPECT_LT(absl::Now() - start, absl::Seconds(30)) << "not bounded by the join timeout";
}

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The files of `dir` whose names start with `prefix`.
std::vector<std::string> FilesWithPrefix(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (absl::StartsWith(e->d_name, prefix)) out.push_back(dir + "/" + e->d_name);
    }
    ::closedir(d);
  }
  return out;
}

// The command lines of the children of `pid`, arguments joined by spaces.
std::vector<std::string> ChildCommandLines(pid_t pid) {
  std::vector<std::string> out;
  for (absl::string_view child :
       absl::StrSplit(ReadAll(absl::StrCat("/proc/", pid, "/task/", pid, "/children")), ' ',
                      absl::SkipWhitespace())) {
    std::string cmdline = ReadAll(absl::StrCat("/proc/", child, "/cmdline"));
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    out.push_back(cmdline);
  }
  return out;
}

TEST(ControlPlaneAuthProcessTest, OrcaServeAuthenticatesItsLocalGroupWithAGeneratedToken) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  ORCA_REQUIRE_BIN(orca);
  testing::TempDir tmp;
  const int http_port = FreePort();
  const int control_port = FreePort();
  const std::string log = tmp.file("serve.log");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("TMPDIR", tmp.path().c_str(), 1);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const std::string port = std::to_string(http_port), control = std::to_string(control_port);
    ::execl(orca, orca, "serve", "--model", dir.c_str(), "--tensor-parallel", "2", "--host",
            "127.0.0.1", "--port", port.c_str(), "--grpc-port", "-1", "--control-port",
            control.c_str(), "--threads", "2", nullptr);
    ::_exit(127);
  }
  struct Reap {
    pid_t pid;
    ~Reap() {
      if (pid <= 0) return;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{pid};
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  while (!absl::StrContains(ReadAll(log), "orca: serving")) {
    ASSERT_LT(absl::Now(), deadline) << ReadAll(log);
    ASSERT_EQ(::waitpid(pid, nullptr, WNOHANG), 0) << "orca serve exited:\n" << ReadAll(log);
    absl::SleepFor(absl::Milliseconds(100));
  }

  // One token file, only its owner may read it, 32 random bytes in hex.
  const std::vector<std::string> files = FilesWithPrefix(tmp.path(), "orca-control-");
  ASSERT_EQ(files.size(), 1u) << ReadAll(log);
  struct stat st {};
  ASSERT_EQ(::stat(files[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string token = ReadAll(files[0]);
  ASSERT_EQ(token.size(), 65u) << token;
  EXPECT_EQ(token.back(), '\n');
  token.pop_back();
  EXPECT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos) << token;
  // The workers are told the file, never the token itself.
  const std::vector<std::string> workers = ChildCommandLines(pid);
  ASSERT_EQ(workers.size(), 2u);
  for (const std::string& w : workers) {
    EXPECT_TRUE(absl::StrContains(w, "--control-token-file=" + files[0])) << w;
    EXPECT_FALSE(absl::StrContains(w, token)) << w;
  }
  EXPECT_FALSE(absl::StrContains(ReadAll(log), token)) << "the token is never logged";

  // The group formed with it and serves; the control port refuses calls without it.
  httplib::Client client("127.0.0.1", http_port);
  client.set_read_timeout(60, 0);
  auto res = client.Post("/v1/completions",
                         R"({"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0})",
                         "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_TRUE(absl::StrContains(res->body, ", there was a little girl")) << res->body;
  auto stub = StubFor(control_port);
  EXPECT_EQ(StoreSet(*stub, "", "orca/g1/x", "v").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(BareJoin(*stub, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(StoreSet(*stub, token, "orca/probe", "v").ok());

  // Shutdown removes the file.
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  const absl::Time stop_deadline = absl::Now() + absl::Seconds(60);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    ASSERT_LT(absl::Now(), stop_deadline) << ReadAll(log);
    absl::SleepFor(absl::Milliseconds(50));
  }
  reap.pid = 0;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadAll(log);
  EXPECT_TRUE(FilesWithPrefix(tmp.path(), "orca-control-").empty()) << "the token file is left";
}

}  // namespace
}  // namespace orca

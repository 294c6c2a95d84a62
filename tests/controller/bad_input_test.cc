// Bad input to `orca-controller run`: a broken kubeconfig, an unreachable API
// server, an expired token and a TLS failure each give a clear log line and a
// retry, never a crash. Runs the real binary as a child process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/controller/fake_api_server.h"

namespace orca::controller {
namespace {

using ::testing::HasSubstr;

struct RunResult {
  std::string log;
  bool alive_before_sigterm = false;
  int exit_code = -1;
};

std::string Binary() {
  const char* dir = std::getenv("ORCA_BINARY_DIR");
  return absl::StrCat(dir != nullptr ? dir : ".", "/controller/orca-controller");
}

std::string WriteKubeconfig(const std::string& name, const std::string& server,
                            const std::string& token) {
  std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                      << "clusters: [{name: c, cluster: {server: '" << server << "'}}]\n"
                      << "users: [{name: u, user: {token: " << token << "}}]\n"
                      << "contexts: [{name: t, context: {cluster: c, user: u}}]\n";
  return path;
}

// Runs orca-controller run with `args` until the log has `lines` lines containing
// `needle` (or 20 s pass), then sends SIGTERM.
RunResult RunController(std::vector<std::string> args, const std::string& needle, int lines) {
  std::string log = absl::StrCat(::testing::TempDir(), "/controller-", ::getpid(), "-",
                                 absl::ToUnixNanos(absl::Now()), ".log");
  args.insert(args.begin(),
              {Binary(), "run", "--metrics-bind-address=0", "--health-probe-bind-address=0"});
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = freopen(log.c_str(), "w", stderr);
    (void)f;
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    execv(argv[0], argv.data());
    _exit(127);
  }
  RunResult r;
  for (int i = 0; i < 400; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    std::ifstream in(log);
    std::stringstream buf;
    buf << in.rdbuf();
    r.log = buf.str();
    int found = 0;
    for (absl::string_view line : absl::StrSplit(r.log, '\n')) {
      if (line.find(needle) != absl::string_view::npos) ++found;
    }
    if (found >= lines) break;
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return r;
    }
  }
  r.alive_before_sigterm = waitpid(pid, nullptr, WNOHANG) == 0;
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(log);
  std::stringstream buf;
  buf << in.rdbuf();
  r.log = buf.str();
  return r;
}

// Every line mentioning `needle` is one complete, self-explaining line with a retry.
void ExpectRetriedWithClearLine(const RunResult& r, const std::string& needle,
                                const std::string& retry_word) {
  EXPECT_TRUE(r.alive_before_sigterm) << "the controller exited instead of retrying:\n" << r.log;
  EXPECT_EQ(r.exit_code, 0) << r.log;
  int lines = 0;
  for (absl::string_view line : absl::StrSplit(r.log, '\n')) {
    if (line.find(needle) == absl::string_view::npos) continue;
    ++lines;
    EXPECT_THAT(std::string(line), HasSubstr(retry_word)) << line;
  }
  EXPECT_GE(lines, 2) << "expected a retry:\n" << r.log;
  EXPECT_THAT(r.log, ::testing::Not(HasSubstr("terminate called"))) << r.log;
}

TEST(BadInputTest, BrokenKubeconfig) {
  std::string path = absl::StrCat(::testing::TempDir(), "/broken-kubeconfig");
  std::ofstream(path) << "clusters: [\n  - name: x\n  users: {\n";
  RunResult r = RunController({"--kubeconfig", path}, "malformed YAML", 2);
  ExpectRetriedWithClearLine(r, "malformed YAML", "retrying in");
  EXPECT_THAT(r.log, HasSubstr(path));
}

TEST(BadInputTest, UnreachableApiServer) {
  std::string path = WriteKubeconfig("unreachable", "http://127.0.0.1:1", "t");
  RunResult r = RunController({"--kubeconfig", path, "--leader-elect=false"}, "cannot connect", 2);
  ExpectRetriedWithClearLine(r, "cannot connect", "retrying in");
  EXPECT_THAT(r.log, HasSubstr("http://127.0.0.1:1"));
}

TEST(BadInputTest, UnreachableApiServerDuringLeaderElection) {
  std::string path = WriteKubeconfig("unreachable-le", "http://127.0.0.1:1", "t");
  RunResult r = RunController({"--kubeconfig", path, "--retry-period=200ms",
                               "--renew-deadline=500ms", "--lease-duration=1s"},
                              "waiting for leadership", 1);
  EXPECT_TRUE(r.alive_before_sigterm) << r.log;
  EXPECT_EQ(r.exit_code, 0) << r.log;
  EXPECT_THAT(r.log, HasSubstr("cannot connect to API server http://127.0.0.1:1"));
}

TEST(BadInputTest, ExpiredToken) {
  testing::FakeApiServerOptions opts;
  opts.required_token = "fresh";
  auto fake = testing::FakeApiServer::Start(opts);
  ASSERT_TRUE(fake.ok());
  std::string path = WriteKubeconfig("expired", (*fake)->url(), "expired");
  // "HTTP 401", not "401": the start-up line names the fake's port, which may contain 401.
  RunResult r = RunController({"--kubeconfig", path, "--leader-elect=false"}, "HTTP 401", 2);
  ExpectRetriedWithClearLine(r, "HTTP 401", "retrying in");
  EXPECT_THAT(r.log, HasSubstr("token may have expired"));
}

TEST(BadInputTest, TlsFailure) {
  auto fake = testing::FakeApiServer::Start({});
  ASSERT_TRUE(fake.ok());
  // The fake speaks plain HTTP: a TLS client cannot complete the handshake.
  std::string server = (*fake)->url();
  server.replace(0, 4, "https");
  std::string path = WriteKubeconfig("tls", server, "t");
  RunResult r = RunController({"--kubeconfig", path, "--leader-elect=false"}, "TLS", 2);
  ExpectRetriedWithClearLine(r, "TLS", "retrying in");
}

}  // namespace
}  // namespace orca::controller

#include "tests/engine/group/group_test_util.h"

#include <gtest/gtest.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace orca::testing {

Collected Collect(RequestStream& stream, absl::Duration timeout, int min_tokens, Collected so_far) {
  Collected c = std::move(so_far);
  const absl::Time deadline = absl::Now() + timeout;
  while (!c.finished) {
    if (min_tokens >= 0 && static_cast<int>(c.tokens.size()) >= min_tokens) break;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    StreamEvent ev;
    if (!stream.Pop(&ev, left)) break;
    c.tokens.insert(c.tokens.end(), ev.token_ids.begin(), ev.token_ids.end());
    c.finished = ev.finished;
    if (ev.finished) c.last = std::move(ev);
  }
  return c;
}

std::shared_ptr<RequestStream> SubmitGreedy(Engine& engine, const TestRequest& r) {
  GenerateParams p;
  p.prompt_tokens = engine.tokenizer().Encode(r.prompt, true);
  p.max_tokens = r.max_tokens;
  p.ignore_eos = true;
  p.sampling.temperature = 0;
  if (!r.guide.empty()) {
    auto guide = engine.Guide(r.guide, r.guide_syntax);
    EXPECT_TRUE(guide.ok()) << guide.status();
    if (!guide.ok()) return nullptr;
    p.guide = *guide;
  }
  auto s = engine.Submit(std::move(p));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : nullptr;
}

std::vector<std::vector<int32_t>> RunRequests(Engine& engine,
                                              const std::vector<TestRequest>& requests,
                                              absl::Duration timeout) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const TestRequest& r : requests) streams.push_back(SubmitGreedy(engine, r));
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < streams.size(); ++i) {
    if (streams[i] == nullptr) {
      out.emplace_back();
      continue;
    }
    Collected c = Collect(*streams[i], timeout);
    EXPECT_TRUE(c.finished) << "request " << i << " did not finish within " << timeout;
    EXPECT_EQ(c.last.finish_reason, FinishReason::kLength)
        << "request " << i << ": " << c.last.status;
    EXPECT_EQ(c.tokens.size(), static_cast<size_t>(requests[i].max_tokens)) << "request " << i;
    out.push_back(c.finished ? c.tokens : std::vector<int32_t>{});
  }
  return out;
}

Ranks::~Ranks() {
  for (auto& [rank, w] : workers_) w.worker->Stop();
  std::vector<int32_t> ranks;
  for (auto& [rank, w] : workers_) ranks.push_back(rank);
  for (int32_t rank : ranks) (void)StopRank(rank);
}

WorkerOptions Ranks::Options(int32_t rank, Device device) const {
  WorkerOptions o;
  o.scheduler = absl::StrCat("127.0.0.1:", port_);
  o.model.dir = dir_;
  o.stage = rank / tensor_;
  o.tp_rank = rank % tensor_;
  o.device.type = device;
  o.device.index = device == Device::kCuda ? rank : 0;
  o.device.threads = 1;
  o.host = "127.0.0.1";
  o.name = absl::StrCat("rank", rank, "-", ++started_);
  o.retry = absl::Milliseconds(200);
  return o;
}

void Ranks::Start(int32_t rank, WorkerOptions options) {
  ASSERT_EQ(workers_.count(rank), 0u) << "rank " << rank << " is running";
  Worker& w = workers_[rank];
  w.worker = std::make_unique<WorkerRank>(std::move(options));
  auto promise = std::make_shared<std::promise<absl::Status>>();
  w.done = promise->get_future();
  WorkerRank* raw = w.worker.get();
  w.thread = std::thread([raw, promise] { promise->set_value(raw->Run()); });
}

absl::Status Ranks::WaitExit(int32_t rank, absl::Duration timeout) {
  Worker& w = workers_.at(rank);
  if (w.done.wait_for(absl::ToChronoMilliseconds(timeout)) != std::future_status::ready) {
    return absl::DeadlineExceededError("the worker is still running");
  }
  absl::Status s = w.done.get();
  w.thread.join();
  workers_.erase(rank);
  return s;
}

absl::Status Ranks::StopRank(int32_t rank, absl::Duration timeout) {
  auto it = workers_.find(rank);
  if (it == workers_.end()) return absl::NotFoundError("not running");
  Worker& w = it->second;
  w.worker->Stop();
  absl::Status s;
  if (w.done.wait_for(absl::ToChronoMilliseconds(timeout)) == std::future_status::ready) {
    s = w.done.get();
    w.thread.join();
  } else {
    ADD_FAILURE() << "rank " << rank << " did not stop within " << timeout;
    s = absl::DeadlineExceededError("did not stop");
    w.thread.detach();
    (void)w.worker.release();  // its thread may still use it
  }
  workers_.erase(it);
  return s;
}

}  // namespace orca::testing

// What a grammar's token mask costs (GrammarAutomaton::AllowTokens, what TokenGuide::Mask
// runs for a state it has no mask for), made from kept stack tops against one walk of the
// vocabulary's trie from the state's whole configuration (the way before; still the
// fallback). States come from random token walks that nest (fixed seeds), over the
// synthetic byte-level vocabulary `orca model random` writes, at 32,000 and 128,256
// tokens (Llama 2's and Llama 3's sizes).
//   BM_MaskByWalk/<grammar>/<vocab>      one trie walk per mask
//   BM_MaskFromTops/<grammar>/<vocab>    from kept tops, every top already made (a
//                                        guide that served requests before)
//   BM_FirstRequest/<grammar>/<vocab>    a fresh guide: compile, then a walk's masks and
//                                        steps, tops made as they are met; per token
//   BM_FirstRequestByWalk/<...>          the same, each mask one trie walk
//   BM_AdvanceRows/<grammar>/<threads>  one iteration's guide steps for 32 rows (the
//                                        state after each row's sampled token), one after
//                                        another (threads 1) or on a ThreadPool, as
//                                        IterationScheduler::AdvanceGuides runs them
//   BM_ServedRequests/<grammar>/<vocab>/<served>  a guide serving: masks of 32 requests
//                                        of 256 tokens (each drawn uniformly from those
//                                        allowed, as a random model's are) after the guide
//                                        served `served` such requests; per token, with
//                                        the tops kept and the guide's step per token
//                                        (step_us: the state after a token)
// Grammars: 0 the nested outline of bench/guided/guided_overhead.py --grammar, 1 any JSON
// object (response_format json_object), 2 a recursive JSON schema (a tree of nodes),
// 3 arithmetic, 4 (BM_ServedRequests only) guided_overhead.py's story schema.
//
// usage: orca-bench-guided-mask [google benchmark flags, e.g. --benchmark_out=m.json
//        --benchmark_out_format=json]; plot: /usr/bin/python3 bench/guided/plot_masks.py m.json
//        m.png
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <bit>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/common/thread_pool.h"
#include "engine/guided/grammar_automaton.h"
#include "engine/guided/json_schema.h"
#include "engine/guided/token_guide.h"
#include "engine/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"

namespace orca {
namespace {

constexpr const char* kOutline = R"g(root ::= item{20,}
item ::= "- " [a-zA-Z ,.']{1,40} "\n" | "(" root ")\n"
)g";
constexpr const char* kTreeSchema = R"json({"$defs": {"node": {"type": "object",
  "properties": {"name": {"type": "string", "maxLength": 12},
                 "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
  "required": ["name", "children"], "additionalProperties": false}},
  "$ref": "#/$defs/node"})json";
constexpr const char* kArithmetic = R"g(root ::= expr
expr   ::= term (ws [-+] ws term)*
term   ::= factor (ws [*/] ws factor)*
factor ::= "0" | [1-9] [0-9]{0,3} | "(" ws expr ws ")" | "-" factor
ws     ::= " "?
)g";
// bench/guided/guided_overhead.py --schema's: a title, a mood and a long story.
constexpr const char* kStorySchema = R"json({"type": "object", "properties": {
  "title": {"type": "string", "maxLength": 20},
  "mood": {"enum": ["happy", "sad", "scary"]},
  "story": {"type": "string", "minLength": 300, "maxLength": 600}},
  "required": ["title", "mood", "story"], "additionalProperties": false})json";
constexpr const char* kNesting[] = {"(", "{[", "{[", "(", "{"};  // bytes that open a level
constexpr int kTokensPerWalk = 64;

std::unique_ptr<const GrammarAutomaton> Compile(int64_t grammar) {
  absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> g;
  if (grammar == 0) g = GrammarAutomaton::Compile(kOutline);
  if (grammar == 1) g = GrammarAutomaton::Compile(JsonObjectGrammar());
  if (grammar == 2 || grammar == 4) {
    absl::StatusOr<GbnfRules> rules = JsonSchemaToGrammar(
        nlohmann::ordered_json::parse(grammar == 2 ? kTreeSchema : kStorySchema));
    if (!rules.ok()) std::abort();
    g = GrammarAutomaton::Compile(*rules);
  }
  if (grammar == 3) g = GrammarAutomaton::Compile(kArithmetic);
  if (!g.ok()) {
    std::fprintf(stderr, "grammar %lld: %s\n", static_cast<long long>(grammar),
                 g.status().ToString().c_str());
    std::abort();
  }
  return *std::move(g);
}

std::shared_ptr<const TokenVocabulary> Vocabulary(int64_t size) {
  static std::map<int64_t, std::shared_ptr<const TokenVocabulary>> made;
  if (auto it = made.find(size); it != made.end()) return it->second;
  std::string dir = (std::filesystem::temp_directory_path() / "orca-mask-bench-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) std::abort();
  if (!WriteSyntheticTokenizer(dir, static_cast<int32_t>(size)).ok()) std::abort();
  auto tok = Tokenizer::FromDirectory(dir);
  std::filesystem::remove_all(dir);
  if (!tok.ok()) std::abort();
  return made[size] = TokenVocabulary::FromTokenizer(**tok);
}

bool Allowed(const std::vector<uint32_t>& mask, int32_t t) {
  return (mask[t / 32] >> (t % 32)) & 1;
}

// Four walks of kTokensPerWalk tokens through `g`, each preferring for its first half a
// token with one of `nesting`'s bytes; returns the tokens of each.
std::vector<std::vector<int32_t>> Walks(const GrammarAutomaton& g, const TokenVocabulary& vocab,
                                        const std::string& nesting) {
  std::mt19937 rng(7);
  std::vector<std::vector<int32_t>> walks;
  for (int w = 0; w < 4; ++w) {
    std::vector<int32_t> tokens;
    int32_t s = g.start();
    for (int step = 0; step < kTokensPerWalk; ++step) {
      std::vector<uint32_t> mask((static_cast<size_t>(vocab.size()) + 31) / 32, 0);
      g.AllowTokens(s, vocab, mask);
      std::vector<int32_t> allowed, deeper;
      for (int32_t t = 0; t < vocab.size(); ++t) {
        if (!Allowed(mask, t)) continue;
        allowed.push_back(t);
        if (vocab.bytes(t).find_first_of(nesting) != std::string::npos) deeper.push_back(t);
      }
      if (allowed.empty()) break;
      const auto& from = step < kTokensPerWalk / 2 && !deeper.empty() ? deeper : allowed;
      const int32_t t = from[rng() % from.size()];
      tokens.push_back(t);
      s = g.Walk(s, vocab.bytes(t));
    }
    walks.push_back(std::move(tokens));
  }
  return walks;
}

// A guide that has walked the walks: its states, and its tops made.
struct Warm {
  std::unique_ptr<const GrammarAutomaton> g;
  std::vector<std::vector<int32_t>> walks;
  std::vector<int32_t> states;
  size_t deepest = 0;
};

const Warm& WarmGuide(int64_t grammar, int64_t vocab_size) {
  static std::map<std::pair<int64_t, int64_t>, Warm> made;
  auto [it, added] = made.try_emplace({grammar, vocab_size});
  Warm& w = it->second;
  if (!added) return w;
  const auto vocab = Vocabulary(vocab_size);
  w.g = Compile(grammar);
  w.walks = Walks(*w.g, *vocab, kNesting[grammar]);
  for (const auto& walk : w.walks) {
    int32_t s = w.g->start();
    for (int32_t t : walk) {
      w.states.push_back(s);
      s = w.g->Walk(s, vocab->bytes(t));
      w.deepest = std::max(w.deepest, w.g->depth(s));
    }
  }
  return w;
}

// Clears `mask` and sets the tokens allowed at `s`: from kept tops or by one trie walk.
template <bool kFromTops>
void MakeMask(const GrammarAutomaton& g, int32_t s, const TokenVocabulary& vocab,
              std::vector<uint32_t>& mask) {
  std::fill(mask.begin(), mask.end(), 0u);
  if (kFromTops) {
    g.AllowTokens(s, vocab, mask);
  } else {
    g.AllowTokensByWalk(s, vocab, mask);
  }
}

template <bool kFromTops>
void BM_Mask(benchmark::State& state) {
  const auto vocab = Vocabulary(state.range(1));
  const Warm& w = WarmGuide(state.range(0), state.range(1));
  std::vector<uint32_t> mask((static_cast<size_t>(vocab->size()) + 31) / 32);
  size_t i = 0;
  for (auto _ : state) {
    MakeMask<kFromTops>(*w.g, w.states[i++ % w.states.size()], *vocab, mask);
    benchmark::DoNotOptimize(mask.data());
  }
  state.counters["states"] = static_cast<double>(w.states.size());
  state.counters["deepest"] = static_cast<double>(w.deepest);
  state.counters["kept_tops"] = static_cast<double>(w.g->num_top_masks());
}
void BM_MaskByWalk(benchmark::State& state) { BM_Mask<false>(state); }
void BM_MaskFromTops(benchmark::State& state) { BM_Mask<true>(state); }

template <bool kFromTops>
void BM_Request(benchmark::State& state) {
  const auto vocab = Vocabulary(state.range(1));
  const Warm& w = WarmGuide(state.range(0), state.range(1));
  std::vector<uint32_t> mask((static_cast<size_t>(vocab->size()) + 31) / 32);
  size_t i = 0, tokens = 0;
  for (auto _ : state) {
    auto g = Compile(state.range(0));
    int32_t s = g->start();
    for (int32_t t : w.walks[i++ % w.walks.size()]) {
      MakeMask<kFromTops>(*g, s, *vocab, mask);
      s = g->Walk(s, vocab->bytes(t));
      ++tokens;
    }
    benchmark::DoNotOptimize(mask.data());
  }
  state.counters["per_token_us"] = benchmark::Counter(
      static_cast<double>(tokens), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_FirstRequest(benchmark::State& state) { BM_Request<true>(state); }
void BM_FirstRequestByWalk(benchmark::State& state) { BM_Request<false>(state); }

// A uniformly drawn token of those `mask` allows (-1: none).
int32_t DrawAllowed(const std::vector<uint32_t>& mask, std::mt19937& rng) {
  int64_t allowed = 0;
  for (uint32_t w : mask) allowed += std::popcount(w);
  if (allowed == 0) return -1;
  int64_t r = static_cast<int64_t>(rng() % static_cast<uint64_t>(allowed));
  for (size_t i = 0; i < mask.size(); ++i) {
    const int64_t here = std::popcount(mask[i]);
    if (r >= here) {
      r -= here;
      continue;
    }
    uint32_t w = mask[i];
    for (; r > 0; --r) w &= w - 1;  // drop the lowest set bits
    return static_cast<int32_t>(i * 32) + std::countr_zero(w);
  }
  return -1;
}

// Seconds a request's masks took, and its steps (the guide's state after each token:
// what the scheduler computes for every guided row after each iteration).
struct RequestSeconds {
  double masks = 0, steps = 0;
};

// One request of `tokens` tokens through a TokenGuide-like loop: mask, draw, step.
RequestSeconds ServeRequest(const GrammarAutomaton& g, const TokenVocabulary& vocab, int tokens,
                            std::mt19937& rng) {
  std::vector<uint32_t> mask((static_cast<size_t>(vocab.size()) + 31) / 32);
  RequestSeconds out;
  auto since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  int32_t s = g.start();
  for (int step = 0; step < tokens; ++step) {
    std::fill(mask.begin(), mask.end(), 0u);
    auto t0 = std::chrono::steady_clock::now();
    g.AllowTokens(s, vocab, mask);
    out.masks += since(t0);
    const int32_t t = DrawAllowed(mask, rng);
    if (t < 0) break;
    t0 = std::chrono::steady_clock::now();
    s = g.Walk(s, vocab.bytes(t));
    out.steps += since(t0);
  }
  return out;
}

void BM_ServedRequests(benchmark::State& state) {
  constexpr int kRequests = 32, kTokens = 256;
  const auto vocab = Vocabulary(state.range(1));
  size_t tops = 0;
  double steps = 0;
  for (auto _ : state) {
    auto g = Compile(state.range(0));
    std::mt19937 rng(11);
    for (int64_t r = 0; r < state.range(2); ++r) ServeRequest(*g, *vocab, kTokens, rng);
    double masks = 0;
    for (int r = 0; r < kRequests; ++r) {
      const RequestSeconds s = ServeRequest(*g, *vocab, kTokens, rng);
      masks += s.masks;
      steps += s.steps;
    }
    state.SetIterationTime(masks);
    tops = g->num_top_masks();
  }
  const double tokens =
      static_cast<double>(kRequests * kTokens) * static_cast<double>(state.iterations());
  state.counters["per_token_us"] =
      benchmark::Counter(tokens, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["step_us"] = steps * 1e6 / tokens;
  state.counters["kept_tops"] = static_cast<double>(tops);
}

void BM_AdvanceRows(benchmark::State& state) {
  constexpr int kRows = 32, kSteps = 128;
  const auto vocab = Vocabulary(32000);
  auto g = Compile(state.range(0));
  // Each row a request in progress: its states and the token sampled at each.
  struct Row {
    std::vector<int32_t> states, tokens;
  };
  std::vector<Row> rows(kRows);
  std::mt19937 rng(5);
  std::vector<uint32_t> mask((static_cast<size_t>(vocab->size()) + 31) / 32);
  for (Row& row : rows) {
    int32_t s = g->start();
    for (int step = 0; step < kSteps; ++step) {
      std::fill(mask.begin(), mask.end(), 0u);
      g->AllowTokens(s, *vocab, mask);
      const int32_t t = DrawAllowed(mask, rng);
      if (t < 0) break;
      row.states.push_back(s);
      row.tokens.push_back(t);
      s = g->Walk(s, vocab->bytes(t));
    }
  }
  const int threads = static_cast<int>(state.range(1));
  std::unique_ptr<ThreadPool> pool = threads > 1 ? std::make_unique<ThreadPool>(threads) : nullptr;
  size_t step = 0;
  auto advance = [&](int64_t i) {
    const Row& row = rows[static_cast<size_t>(i)];
    if (row.tokens.empty()) return;
    const size_t at = step % row.tokens.size();
    benchmark::DoNotOptimize(g->Walk(row.states[at], vocab->bytes(row.tokens[at])));
  };
  for (auto _ : state) {
    if (pool != nullptr) {
      pool->ParallelFor(kRows, advance);
    } else {
      for (int64_t i = 0; i < kRows; ++i) advance(i);
    }
    ++step;
  }
}

void ServedArgs(benchmark::internal::Benchmark* b) {
  for (int64_t grammar : {0, 1, 2, 3, 4}) {
    for (int64_t served : {0, 32, 320}) b->Args({grammar, 32000, served});
  }
  b->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int64_t grammar : {0, 1, 2, 3}) {
    for (int64_t vocab : {32000, 128256}) b->Args({grammar, vocab});
  }
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_MaskByWalk)->Apply(Args);
BENCHMARK(BM_MaskFromTops)->Apply(Args);
BENCHMARK(BM_FirstRequest)->Apply(Args);
BENCHMARK(BM_FirstRequestByWalk)->Apply(Args);
BENCHMARK(BM_ServedRequests)->Apply(ServedArgs);
BENCHMARK(BM_AdvanceRows)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 2, 8}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace orca

BENCHMARK_MAIN();

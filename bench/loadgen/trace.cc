#include "bench/loadgen/trace.h"

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"

namespace orca::bench {
namespace {

// Distribution code of our own: std::uniform_int_distribution and friends differ
// between standard libraries, and a seed must give the same trace everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  // Uniform integer in [lo, hi] (modulo bias below 2^-40 for the ranges used here).
  int32_t Int(int32_t lo, int32_t hi) {
    const uint64_t span = static_cast<uint64_t>(static_cast<int64_t>(hi) - lo) + 1;
    return static_cast<int32_t>(lo + static_cast<int64_t>(gen_() % span));
  }
  // Exponential with mean 1.
  double Exponential() { return -std::log1p(-Uniform()); }
  // Standard normal (Box-Muller; one of the pair is dropped).
  double Normal() {
    const double u = 1.0 - Uniform();  // (0, 1]
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * Uniform());
  }
  // Gamma with shape `a` and scale 1 (Marsaglia and Tsang, 2000; a < 1 via a + 1).
  double Gamma(double a) {
    if (a < 1.0) return Gamma(a + 1.0) * std::pow(1.0 - Uniform(), 1.0 / a);
    const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    while (true) {
      const double x = Normal();
      double v = 1.0 + c * x;
      if (v <= 0) continue;
      v = v * v * v;
      const double u = 1.0 - Uniform();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }

 private:
  std::mt19937_64 gen_;
};

constexpr uint64_t kPromptStream = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kGapStream = 0xc2b2ae3d27d4eb4full;

absl::Status CheckRange(const char* what, int32_t lo, int32_t hi, int32_t floor) {
  if (lo < floor || hi < lo) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " range [", lo, ", ", hi, "] is empty or below ", floor));
  }
  return absl::OkStatus();
}

std::vector<int32_t> DrawPrompt(Rng& rng, int32_t len, const TraceOptions& o) {
  std::vector<int32_t> p(static_cast<size_t>(len));
  for (auto& t : p) t = rng.Int(o.token_id_min, o.token_id_max);
  return p;
}

}  // namespace

absl::StatusOr<std::vector<TraceRequest>> GenerateTrace(const TraceOptions& o) {
  if (o.num_requests < 0) return absl::InvalidArgumentError("the number of requests is negative");
  ORCA_RETURN_IF_ERROR(CheckRange("input length", o.input_min, o.input_max, 1));
  ORCA_RETURN_IF_ERROR(CheckRange("output length", o.output_min, o.output_max, 1));
  ORCA_RETURN_IF_ERROR(CheckRange("token id", o.token_id_min, o.token_id_max, 0));
  if (!(o.burstiness > 0) || std::isinf(o.burstiness)) {
    return absl::InvalidArgumentError(
        absl::StrCat("burstiness must be a positive number, got ", o.burstiness));
  }
  const bool burst = !(o.rate > 0) || std::isinf(o.rate);
  Rng rng(o.seed), prompts(o.seed ^ kPromptStream), gaps(o.seed ^ kGapStream);
  std::vector<TraceRequest> trace(static_cast<size_t>(o.num_requests));
  double t = 0;
  for (auto& r : trace) {
    // The exponential gap is drawn even for a burst or gamma gaps (from their own
    // stream, which takes a varying number of draws), so lengths depend on neither.
    double gap = rng.Exponential();
    if (o.burstiness != 1.0) gap = gaps.Gamma(o.burstiness) / o.burstiness;
    t += gap;
    r.arrival_s = burst ? 0.0 : t / o.rate;
    r.input_len = rng.Int(o.input_min, o.input_max);
    r.output_len = rng.Int(o.output_min, o.output_max);
  }
  for (auto& r : trace) r.prompt = DrawPrompt(prompts, r.input_len, o);
  return trace;
}

std::vector<TraceRequest> RedrawPrompts(std::vector<TraceRequest> trace, const TraceOptions& o,
                                        uint64_t salt) {
  Rng prompts((o.seed ^ kPromptStream) + salt * 0xbf58476d1ce4e5b9ull);
  for (auto& r : trace) r.prompt = DrawPrompt(prompts, r.input_len, o);
  return trace;
}

std::vector<TraceRequest> ScaleArrivals(std::vector<TraceRequest> trace, double factor) {
  for (auto& r : trace) r.arrival_s *= factor;
  return trace;
}

double MeanRate(const std::vector<TraceRequest>& trace) {
  if (trace.empty() || trace.back().arrival_s <= 0) return 0;
  return static_cast<double>(trace.size()) / trace.back().arrival_s;
}

absl::StatusOr<std::vector<TraceRequest>> ParseJsonlTrace(const std::string& text,
                                                          const std::string& source,
                                                          const TraceOptions& o) {
  ORCA_RETURN_IF_ERROR(CheckRange("token id", o.token_id_min, o.token_id_max, 0));
  Rng prompts(o.seed ^ kPromptStream);
  std::vector<TraceRequest> trace;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  double last = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto fail = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line_no, ": ", why));
    };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      return fail(absl::StrCat("not JSON: ", e.what()));
    }
    if (!j.is_object()) return fail("expected an object");
    TraceRequest r;
    try {
      r.arrival_s = j.value("arrival_s", 0.0);
      if (j.contains("prompt")) {
        r.prompt = j.at("prompt").get<std::vector<int32_t>>();
        r.input_len = static_cast<int32_t>(r.prompt.size());
      } else {
        r.input_len = j.at("input_len").get<int32_t>();
      }
      r.output_len = j.at("output_len").get<int32_t>();
    } catch (const std::exception& e) {
      return fail(absl::StrCat("bad field: ", e.what()));
    }
    if (!std::isfinite(r.arrival_s) || r.arrival_s < last) {
      return fail("arrival_s must be finite and non-decreasing");
    }
    if (r.input_len < 1 || r.output_len < 1) return fail("input and output lengths must be >= 1");
    if (j.contains("input_len") && j.contains("prompt") && j["input_len"] != r.input_len) {
      return fail("input_len differs from the prompt's length");
    }
    last = r.arrival_s;
    trace.push_back(std::move(r));
  }
  for (auto& r : trace) {
    if (r.prompt.empty()) r.prompt = DrawPrompt(prompts, r.input_len, o);
  }
  return trace;
}

absl::StatusOr<std::vector<TraceRequest>> LoadJsonlTrace(const std::string& path,
                                                         const TraceOptions& o) {
  ORCA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseJsonlTrace(text, path, o);
}

std::string TraceToJsonl(const std::vector<TraceRequest>& trace, bool with_prompts) {
  std::string out;
  for (const auto& r : trace) {
    nlohmann::json j = {
        {"arrival_s", r.arrival_s}, {"input_len", r.input_len}, {"output_len", r.output_len}};
    if (with_prompts) j["prompt"] = r.prompt;
    absl::StrAppend(&out, j.dump(), "\n");
  }
  return out;
}

}  // namespace orca::bench

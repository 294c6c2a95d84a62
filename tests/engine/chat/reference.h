// Differential testing of orca::ChatTemplate against Jinja2 (the Python reference that
// transformers uses), through jinja_reference.py.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace orca::chat_test {

struct RenderCase {
  std::string name;
  std::string source;  // the template
  // Keys keep the order they are given in (or parsed from), on both sides: Jinja2 gets
  // them in that order, as transformers' Python dicts hold a request's keys.
  nlohmann::ordered_json context;
};

struct RenderResult {
  bool ok = false;
  std::string output;  // when ok
  std::string error;   // when not ok
};

// Renders every case with Jinja2. Returns nullopt when the reference cannot run (no
// python3 or no jinja2), with the reason in `*why`.
std::optional<std::vector<RenderResult>> RenderWithJinja2(const std::vector<RenderCase>& cases,
                                                          std::string* why);

// Renders one case with orca (parse and render; any failure is an error result).
RenderResult RenderWithOrca(const RenderCase& c);

struct Comparison {
  bool available = false;  // false: the reference could not run (see `why`)
  std::string why;
  int compared = 0;  // cases compared (not skipped)
  int matched = 0;   // cases where orca and Jinja2 agree
  int errors = 0;    // of those, cases where both fail
};

// Decides that a case is not comparable (e.g. output with memory addresses).
using SkipCase = std::function<bool(const RenderResult& jinja2, const RenderResult& orca)>;

// Compares orca with Jinja2 on every case not skipped: outputs byte for byte, errors with
// errors. Reports each mismatch as a test failure.
Comparison CompareWithJinja2(const std::vector<RenderCase>& cases, const SkipCase& skip = {});

// True when running in CI (env CI=true), where a missing reference is a failure.
bool InCi();

// Path of a file under tests/engine/chat/.
std::string TestPath(const std::string& relative);
std::string ReadTestFile(const std::string& relative);

}  // namespace orca::chat_test

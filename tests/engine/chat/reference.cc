#include "tests/engine/chat/reference.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/chat/chat_template.h"
#include "gtest/gtest.h"

namespace orca::chat_test {
namespace fs = std::filesystem;

namespace {

std::string Escaped(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

std::string TestPath(const std::string& relative) {
  const char* dir = std::getenv("ORCA_SOURCE_DIR");
  const std::string root = dir != nullptr ? std::string(dir) : fs::current_path().string();
  return root + "/tests/engine/chat/" + relative;
}

std::string ReadTestFile(const std::string& relative) {
  std::ifstream in(TestPath(relative), std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::optional<std::vector<RenderResult>> RenderWithJinja2(const std::vector<RenderCase>& cases,
                                                          std::string* why) {
  static std::atomic<int> counter{0};
  const fs::path dir = fs::temp_directory_path() / ("orca_chat_ref_" + std::to_string(getpid()) +
                                                    "_" + std::to_string(counter++));
  fs::create_directories(dir);
  const fs::path in_path = dir / "cases.json";
  const fs::path out_path = dir / "results.json";
  nlohmann::ordered_json input = nlohmann::ordered_json::array();
  for (const RenderCase& c : cases) {
    input.push_back({{"template", c.source}, {"context", c.context}});
  }
  {
    std::ofstream out(in_path, std::ios::binary);
    out << input.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string command = python + " " + TestPath("jinja_reference.py") + " " +
                              in_path.string() + " " + out_path.string() + " 2>" +
                              (dir / "stderr.txt").string();
  const int status = std::system(command.c_str());
  std::optional<std::vector<RenderResult>> results;
  if (status != 0) {
    std::ifstream err(dir / "stderr.txt");
    std::stringstream text;
    text << err.rdbuf();
    *why = (WIFEXITED(status) && WEXITSTATUS(status) == 77)
               ? "python3-jinja2 is not installed: " + text.str()
               : "the Jinja2 reference failed to run (" + command + "): " + text.str();
  } else {
    std::ifstream in(out_path, std::ios::binary);
    const nlohmann::json parsed = nlohmann::json::parse(in, nullptr, false);
    if (!parsed.is_array() || parsed.size() != cases.size()) {
      *why = "the Jinja2 reference returned malformed results";
    } else {
      results.emplace();
      for (const auto& r : parsed) {
        RenderResult result;
        result.ok = r.at("ok").get<bool>();
        if (result.ok) {
          result.output = r.at("output").get<std::string>();
        } else {
          result.error = r.at("error").get<std::string>();
        }
        results->push_back(std::move(result));
      }
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return results;
}

RenderResult RenderWithOrca(const RenderCase& c) {
  RenderResult result;
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(c.source);
  if (!tmpl.ok()) {
    result.error = std::string(tmpl.status().message());
    return result;
  }
  absl::StatusOr<std::string> out = (*tmpl)->Render(c.context);
  if (!out.ok()) {
    result.error = std::string(out.status().message());
    return result;
  }
  result.ok = true;
  result.output = *out;
  return result;
}

Comparison CompareWithJinja2(const std::vector<RenderCase>& cases, const SkipCase& skip) {
  Comparison comparison;
  std::optional<std::vector<RenderResult>> expected = RenderWithJinja2(cases, &comparison.why);
  if (!expected) return comparison;
  comparison.available = true;
  for (size_t i = 0; i < cases.size(); ++i) {
    const RenderResult& want = (*expected)[i];
    const RenderResult got = RenderWithOrca(cases[i]);
    if (skip && skip(want, got)) continue;
    ++comparison.compared;
    const bool same = want.ok == got.ok && (!want.ok || want.output == got.output);
    if (same) {
      ++comparison.matched;
      if (!want.ok) ++comparison.errors;
      continue;
    }
    ADD_FAILURE() << "case " << cases[i].name
                  << " differs from Jinja2\n  template: " << Escaped(cases[i].source.substr(0, 600))
                  << "\n  jinja2: "
                  << (want.ok ? "output " + Escaped(want.output) : "error " + want.error)
                  << "\n  orca:   "
                  << (got.ok ? "output " + Escaped(got.output) : "error " + got.error);
  }
  return comparison;
}

}  // namespace orca::chat_test

// Validates the CRD, the examples (crds/examples and the test-only inputs under
// tests/controller/testdata/examples), every rendered object and the YAML examples of
// docs/routing.md with the official schemas (npm kubernetes-models,
// @kubernetes-models/keda, @kubernetes-models/gateway-api, ajv; the InferencePool's from
// its v1 API reference), through validate_manifests.mjs, and checks that the C++
// defaults equal the CRD defaults (render of an example == render of its ajv-defaulted
// form). Skipped when node or node_modules is missing, except under CI=true, where that
// is a failure.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "controller/api/yaml.h"
#include "controller/builders/render.h"

namespace orca::controller {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string SourceDir() {
  const char* dir = std::getenv("ORCA_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void Write(const fs::path& path, const json& value) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << value.dump(2);
}

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

// Returns the ```yaml blocks of a Markdown page as one multi-document YAML stream.
std::string YamlBlocks(const std::string& markdown) {
  std::string out;
  std::istringstream in(markdown);
  std::string line;
  bool in_block = false;
  while (std::getline(in, line)) {
    if (!in_block && line.rfind("```yaml", 0) == 0) {
      in_block = true;
      out += "---\n";
    } else if (in_block && line.rfind("```", 0) == 0) {
      in_block = false;
    } else if (in_block) {
      out += line + "\n";
    }
  }
  return out;
}

// Invalid InferenceDeployments the structural schema must reject.
std::vector<std::pair<std::string, std::string>> InvalidExamples() {
  const std::string head =
      "apiVersion: serving.orca.dev/v1alpha1\nkind: InferenceDeployment\nmetadata: {name: bad}\n";
  return {
      {"negative-replicas", head + "spec: {replicas: -1, model: {name: m, uri: 'pvc://c/p'}}"},
      {"bad-kv-policy",
       head + "spec: {model: {name: m, uri: 'pvc://c/p'}, engine: {kvPolicy: lru}}"},
      {"bad-uri", head + "spec: {model: {name: m, uri: 's3://bucket/m'}}"},
      {"missing-model", head + "spec: {replicas: 1}"},
      {"typo-field", head + "spec: {model: {name: m, uri: 'pvc://c/p'}, paralelism: {tensor: 2}}"},
      {"tensor-too-big",
       head + "spec: {model: {name: m, uri: 'pvc://c/p'}, parallelism: {tensor: 65}}"},
      {"hf-uri-without-org", head + "spec: {model: {name: m, uri: 'hf://just-a-name'}}"},
      {"https-uri-not-an-archive", head + "spec: {model: {name: m, uri: 'https://h/m.zip'}}"},
      {"bad-sha256", head + "spec: {model: {name: m, uri: 'https://h/m.tar', sha256: 'abc'}}"},
      {"zero-drain",
       head + "spec: {model: {name: m, uri: 'pvc://c/p'}, lifecycle: {drainSeconds: 0}}"},
      {"bad-failure-mode",
       head + "spec: {model: {name: m, uri: 'pvc://c/p'}, routing: {inferencePool: {enabled: true, "
              "endpointPicker: {name: epp, failureMode: Open}}}}"},
  };
}

TEST(SchemaTest, ManifestsValidateAgainstKubernetesSchemas) {
  fs::path src = SourceDir();
  bool have_node = std::system("node --version > /dev/null 2>&1") == 0;
  bool have_modules = fs::exists(src / "node_modules/kubernetes-models") &&
                      fs::exists(src / "node_modules/@kubernetes-models/keda") &&
                      fs::exists(src / "node_modules/@kubernetes-models/gateway-api") &&
                      fs::exists(src / "node_modules/ajv");
  if (!have_node || !have_modules) {
    std::string why = !have_node ? "node is not on PATH"
                                 : "node_modules lacks kubernetes-models, @kubernetes-models/keda, "
                                   "@kubernetes-models/gateway-api or ajv (run "
                                   "scripts/install-deps.sh)";
    if (InCi()) FAIL() << why;
    GTEST_SKIP() << why;
  }
  fs::path dir = fs::temp_directory_path() / ("orca-schema-" + std::to_string(::getpid()));
  fs::remove_all(dir);

  auto crd = ReadYamlFile((src / "crds/inferencedeployments.serving.orca.dev.yaml").string());
  ASSERT_TRUE(crd.ok()) << crd.status();
  ASSERT_EQ(crd->size(), 1u);
  Write(dir / "crd.json", (*crd)[0]);

  std::vector<std::string> names;
  std::vector<fs::path> inputs;
  for (const char* examples : {"crds/examples", "tests/controller/testdata/examples"}) {
    for (const auto& entry : fs::directory_iterator(src / examples)) {
      if (entry.path().extension() == ".yaml") inputs.push_back(entry.path());
    }
  }
  for (const fs::path& input : inputs) {
    std::string name = input.stem().string();
    names.push_back(name);
    auto docs = ReadYamlFile(input.string());
    ASSERT_TRUE(docs.ok()) << docs.status();
    ASSERT_EQ(docs->size(), 1u) << name;
    Write(dir / "examples" / (name + ".json"), (*docs)[0]);
    auto rendered = RenderManifest(ReadAll(input), input.string());
    ASSERT_TRUE(rendered.ok()) << rendered.status();
    Write(dir / "rendered" / (name + ".json"), json(*rendered));
  }
  ASSERT_GE(names.size(), 5u);
  // The YAML examples of the routing guide, one array per page.
  for (const char* page : {"docs/routing.md"}) {
    auto docs = ParseYamlDocuments(YamlBlocks(ReadAll(src / page)), page);
    ASSERT_TRUE(docs.ok()) << docs.status();
    ASSERT_GE(docs->size(), 4u) << page << ": expected a Gateway, an HTTPRoute, the CR and the EPP";
    Write(dir / "docs" / (fs::path(page).stem().string() + ".json"), json(*docs));
  }
  for (const auto& [name, text] : InvalidExamples()) {
    auto docs = ParseYamlDocuments(text, name);
    ASSERT_TRUE(docs.ok()) << docs.status();
    Write(dir / "invalid" / (name + ".json"), (*docs)[0]);
  }

  fs::path log = dir / "node.log";
  std::string cmd = "cd '" + src.string() + "' && node tests/controller/validate_manifests.mjs '" +
                    dir.string() + "' > '" + log.string() + "' 2>&1";
  int rc = std::system(cmd.c_str());
  std::string output = ReadAll(log);
  EXPECT_EQ(rc, 0) << output;
  std::cout << output;

  // C++ defaults == CRD defaults: rendering the ajv-defaulted example changes nothing.
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    std::string defaulted = ReadAll(dir / "defaulted" / (name + ".json"));
    ASSERT_FALSE(defaulted.empty()) << name;
    auto a = RenderManifest(ReadAll(inputs[i]), name);
    auto b = RenderManifest(defaulted, name + " (defaulted)");
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << " " << b.status();
    EXPECT_EQ(json(*a).dump(1), json(*b).dump(1)) << name << ": C++ defaults differ from the CRD's";
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace orca::controller

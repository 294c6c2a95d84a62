// Golden tests of `orca-controller render` for every example manifest (crds/examples)
// and test-only input (tests/controller/testdata/examples). Regenerate
// with ORCA_UPDATE_GOLDEN=1 after an intended change, and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "controller/api/yaml.h"
#include "controller/builders/render.h"

namespace orca::controller {
namespace {

std::string SourceDir() {
  const char* dir = std::getenv("ORCA_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Returns the input of golden `name`: a user-facing example under crds/examples, or a
// test-only input under tests/controller/testdata/examples.
std::string ExamplePath(const std::string& name) {
  std::string example = SourceDir() + "/crds/examples/" + name + ".yaml";
  if (std::filesystem::exists(example)) return example;
  return SourceDir() + "/tests/controller/testdata/examples/" + name + ".yaml";
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, RenderMatchesGolden) {
  std::string example = ExamplePath(GetParam());
  ASSERT_TRUE(std::filesystem::exists(example)) << example;
  std::string golden = SourceDir() + "/tests/controller/testdata/golden/" + GetParam() + ".yaml";
  auto objects = RenderManifest(ReadAll(example), example);
  ASSERT_TRUE(objects.ok()) << objects.status();
  std::string rendered = ToYamlDocuments(*objects);
  if (const char* update = std::getenv("ORCA_UPDATE_GOLDEN"); update != nullptr && *update == '1') {
    std::ofstream(golden) << rendered;
    GTEST_SKIP() << "updated " << golden;
  }
  ASSERT_TRUE(std::filesystem::exists(golden))
      << golden << " missing; run with ORCA_UPDATE_GOLDEN=1";
  EXPECT_EQ(rendered, ReadAll(golden)) << "render of " << example << " changed; if intended, "
                                       << "regenerate with ORCA_UPDATE_GOLDEN=1";
  // The rendered YAML parses back to the same objects.
  auto back = ParseYamlDocuments(rendered, golden);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(nlohmann::json(*back), nlohmann::json(*objects));
}

INSTANTIATE_TEST_SUITE_P(Examples, GoldenTest,
                         ::testing::Values("single-gpu", "tp8-single-node", "tp8-pp2-multi-node",
                                           "autoscaled-ingress", "cpu-hpa", "hf-gateway",
                                           // hf:// pull, tokenSecret, lifecycle, InferencePool
                                           "hf-inference-pool",
                                           // API key, control-plane token, TLS, Ingress
                                           "secured"));

TEST(RenderTest, RejectsInvalidAndEmptyManifests) {
  EXPECT_TRUE(absl::IsNotFound(RenderManifest("apiVersion: v1\nkind: ConfigMap\n", "x").status()));
  auto bad = RenderManifest(
      "apiVersion: serving.orca.dev/v1alpha1\nkind: InferenceDeployment\nmetadata: {name: a}\n"
      "spec: {model: {name: m, uri: 'pvc://c/p'}, parallelism: {tensor: 3, gpusPerPod: 2}}\n",
      "bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.yaml"), std::string::npos);
  EXPECT_TRUE(absl::IsInvalidArgument(RenderManifest("a: [", "broken.yaml").status()));
}

// A document whose kind is not a string (here null: the value is a comment) made
// RenderManifest throw out of nlohmann::json::value() (found by tests/fuzz): such a
// document is not an InferenceDeployment and is skipped like any other kind.
TEST(RenderTest, SkipsDocumentsWhoseKindIsNotAString) {
  for (const char* manifest : {"apiVersion: v1\nkind: # comment\n", "kind: 5\n", "kind: [a]\n",
                               "- kind: InferenceDeployment\n"}) {
    auto objects = RenderManifest(manifest, "x.yaml");
    EXPECT_TRUE(absl::IsNotFound(objects.status())) << manifest << ": " << objects.status();
  }
}

}  // namespace
}  // namespace orca::controller

// `orca model inspect` refuses every checkpoint directory that `orca serve` refuses, with
// the same message (issue 16, bug 5): it runs the checks of the serving path (config.json
// bounds, the checkpoint's tensors against it, the tokenizer) on the orca binary
// (ORCA_BIN, set by ctest).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/common/file_util.h"
#include "engine/model/checkpoint.h"
#include "engine/model/model_config.h"
#include "engine/model/random_checkpoint.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using orca::testing::TempDir;
using ::testing::HasSubstr;

class ModelInspectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("ORCA_BIN");
    if (bin == nullptr) {
      if (orca::testing::InCi()) FAIL() << "ORCA_BIN is not set in CI";
      GTEST_SKIP() << "ORCA_BIN is not set";
    }
    orca_ = bin;
    auto c = PresetConfig("tiny");
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(WriteRandomCheckpoint(*c, dir_.path(), 5).ok());
  }
  // Runs `orca model inspect` on the directory; returns its exit code and output.
  int Inspect(std::string* output) {
    return orca::testing::RunCommand(orca_ + " model inspect " + dir_.path() + " 2>&1", output);
  }
  void SetConfig(const std::string& key, const nlohmann::json& value) {
    auto text = ReadFile(dir_.file("config.json"));
    ASSERT_TRUE(text.ok());
    nlohmann::json j = nlohmann::json::parse(*text);
    j[key] = value;
    ASSERT_TRUE(WriteFile(dir_.file("config.json"), j.dump()).ok());
  }
  std::string orca_;
  TempDir dir_;
};

TEST_F(ModelInspectTest, DescribesAnIntactCheckpoint) {
  std::string out;
  EXPECT_EQ(Inspect(&out), 0) << out;
  EXPECT_THAT(out, HasSubstr("layers             2"));
  EXPECT_THAT(out, HasSubstr("tensors            21"));
}

TEST_F(ModelInspectTest, FailsWithTheServingPathsMessage) {
  const struct {
    const char* key;
    nlohmann::json value;
  } corruptions[] = {
      {"num_hidden_layers", 1000000000},  // once std::bad_alloc in serve, exit 0 here
      {"num_hidden_layers", 3},           // more layers than the weights hold
      {"num_hidden_layers", 1},           // fewer
      {"hidden_size", 0},
      {"vocab_size", -7},
      {"intermediate_size", 100},  // shapes the weights do not have
      {"num_key_value_heads", 4},
  };
  for (const auto& c : corruptions) {
    SetUp();
    SetConfig(c.key, c.value);
    // What the serving path reports: the config, then the checkpoint (ModelRunner::Create).
    absl::Status served = LoadModelConfig(dir_.path()).status();
    if (served.ok()) served = Checkpoint::Open(dir_.path()).status();
    ASSERT_FALSE(served.ok()) << c.key;
    EXPECT_THAT(std::string(served.message()), HasSubstr(c.key));
    std::string out;
    EXPECT_EQ(Inspect(&out), 1) << c.key << ": " << out;
    EXPECT_THAT(out, HasSubstr("orca model inspect: " + std::string(served.message()))) << c.key;
  }
}

TEST_F(ModelInspectTest, FailsOnATokenizerThatServeCannotRead) {
  ASSERT_TRUE(WriteFile(dir_.file("tokenizer.json"), "garbage").ok());
  std::string out;
  EXPECT_EQ(Inspect(&out), 1) << out;
  EXPECT_THAT(out, HasSubstr("orca model inspect: "));
  EXPECT_THAT(out, HasSubstr("tokenizer.json"));
}

}  // namespace
}  // namespace orca

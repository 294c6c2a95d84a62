// A corrupt config.json fails with an error naming the file and the key, before anything
// is allocated for the model it describes (issue 16, bug 5): values out of sane bounds
// (ParseModelConfig), and values the checkpoint's tensors do not back (Checkpoint::Open,
// which the serving path and `orca model inspect` both run).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"

#include "engine/backend/backend.h"
#include "engine/common/file_util.h"
#include "engine/model/checkpoint.h"
#include "engine/model/checkpoint_layout.h"
#include "engine/model/model_config.h"
#include "engine/model/random_checkpoint.h"
#include "engine/runner/model_runner.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using json = nlohmann::json;
using orca::testing::TempDir;
using ::testing::HasSubstr;

const char kLlama[] = R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,
  "intermediate_size":172,"num_hidden_layers":5,"num_attention_heads":8,
  "num_key_value_heads":4,"vocab_size":512,"max_position_embeddings":512})";
const char kGpt2[] = R"({"architectures":["GPT2LMHeadModel"],"n_embd":64,"n_layer":2,
  "n_head":4,"vocab_size":512,"n_positions":256})";

// Parses `base` with `key` set to `value` (raw JSON text); returns the error message.
std::string ParseWith(const char* base, const std::string& key, const std::string& value) {
  json j = json::parse(base);
  j[key] = json::parse(value);
  auto c = ParseModelConfig(j.dump(), "/m/config.json");
  return c.ok() ? "OK" : std::string(c.status().message());
}

TEST(ModelConfigBoundsTest, OutOfBoundsValuesNameTheFileAndTheKey) {
  ASSERT_TRUE(ParseModelConfig(kLlama, "/m/config.json").ok());
  ASSERT_TRUE(ParseModelConfig(kGpt2, "/m/config.json").ok());
  const struct {
    const char* base;
    const char* key;
    const char* value;
  } cases[] = {
      {kLlama, "num_hidden_layers", "1000000000"},
      {kLlama, "num_hidden_layers", "0"},
      {kLlama, "num_hidden_layers", "-3"},
      {kLlama, "num_hidden_layers", "18446744073709551615"},
      {kLlama, "hidden_size", "0"},
      {kLlama, "hidden_size", "-64"},
      {kLlama, "hidden_size", "1073741824"},
      {kLlama, "intermediate_size", "0"},
      {kLlama, "intermediate_size", "4294967296"},
      {kLlama, "num_attention_heads", "0"},
      {kLlama, "num_attention_heads", "100000"},
      {kLlama, "num_key_value_heads", "-1"},
      {kLlama, "vocab_size", "0"},
      {kLlama, "vocab_size", "2147483647"},
      {kLlama, "max_position_embeddings", "0"},
      {kLlama, "max_position_embeddings", "1099511627776"},
      {kLlama, "head_dim", "0"},
      {kLlama, "head_dim", "4096"},
      {kGpt2, "n_layer", "1000000000"},
      {kGpt2, "n_embd", "0"},
      {kGpt2, "n_head", "-4"},
      {kGpt2, "n_inner", "0"},
      {kGpt2, "n_positions", "1099511627776"},
      {kGpt2, "vocab_size", "-1"},
  };
  for (const auto& c : cases) {
    const std::string message = ParseWith(c.base, c.key, c.value);
    EXPECT_THAT(message, HasSubstr("/m/config.json: field '" + std::string(c.key) + "' is " +
                                   c.value + "; it must be in [1, "))
        << c.key << " = " << c.value;
  }
  // The head dimension must divide the hidden size when config.json does not give it.
  EXPECT_EQ(ParseWith(kLlama, "hidden_size", "100"),
            "/m/config.json: field 'hidden_size' (100) is not a multiple of "
            "'num_attention_heads' (8)");
  EXPECT_EQ(ParseWith(kGpt2, "n_head", "3"),
            "/m/config.json: field 'n_embd' (64) is not a multiple of 'n_head' (3)");
  EXPECT_THAT(ParseWith(kLlama, "num_key_value_heads", "3"),
              HasSubstr("must be a multiple of num_key_value_heads (3)"));
}

// Found by fuzzing (tests/fuzz/regressions/model_config/norm-eps-infinite-as-float.json):
// rms_norm_eps 1e206 is a finite double but an infinite float; it was accepted, and the
// configuration no longer read back from what ModelConfigToJson wrote ("rms_norm_eps": null).
TEST(ModelConfigBoundsTest, RealValuesOutOfRangeNameTheFileAndTheKey) {
  const struct {
    const char* base;
    const char* key;
    const char* value;
    const char* shown;  // as the message quotes it
    const char* range;
  } cases[] = {
      {kLlama, "rms_norm_eps", "1e206", "1e+206", "[1e-30, 1]"},
      {kLlama, "rms_norm_eps", "0", "0", "[1e-30, 1]"},
      {kLlama, "rms_norm_eps", "1e-50", "1e-50", "[1e-30, 1]"},
      {kLlama, "rope_theta", "-10000", "-10000", "[1, 1e+12]"},
      {kLlama, "rope_theta", "1e300", "1e+300", "[1, 1e+12]"},
      {kGpt2, "layer_norm_epsilon", "2.5", "2.5", "[1e-30, 1]"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ParseWith(c.base, c.key, c.value),
              absl::StrCat("/m/config.json: field '", c.key, "' is ", c.shown, "; it must be in ",
                           c.range));
  }
  EXPECT_EQ(ParseWith(kLlama, "rms_norm_eps", "\"small\""),
            "/m/config.json: field 'rms_norm_eps' must be a number");
  // What checkpoints use reads as given.
  for (const char* eps : {"1e-5", "1e-6", "0.00001"})
    EXPECT_EQ(ParseWith(kLlama, "rms_norm_eps", eps), "OK");
  EXPECT_EQ(ParseWith(kLlama, "rope_theta", "500000.0"), "OK");
  EXPECT_EQ(ParseWith(kLlama, "rope_theta", "1000000000"), "OK");
}

// A random checkpoint (the `tiny` Llama, 2 layers; or `gpt2-tiny`) whose config.json the
// tests then corrupt.
class CheckpointLayoutTest : public ::testing::Test {
 protected:
  void Write(const std::string& preset) {
    auto c = PresetConfig(preset);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(WriteRandomCheckpoint(*c, dir_.path(), 5).ok());
  }
  void SetUp() override { Write("tiny"); }
  // Rewrites config.json with `key` set to `value`.
  void Set(const std::string& key, const json& value) {
    auto text = ReadFile(config_path());
    ASSERT_TRUE(text.ok());
    json j = json::parse(*text);
    j[key] = value;
    ASSERT_TRUE(WriteFile(config_path(), j.dump()).ok());
  }
  std::string config_path() const { return dir_.file("config.json"); }
  absl::Status Open() const { return Checkpoint::Open(dir_.path()).status(); }
  // What the serving path (ModelRunner::Create, as `orca serve` runs it) says.
  absl::Status Serve() const {
    auto backend = CreateCpuBackend(1);
    ModelRunnerOptions opts;
    opts.num_kv_blocks = 4;
    return ModelRunner::Create(dir_.path(), backend.get(), opts).status();
  }
  TempDir dir_;
};

TEST_F(CheckpointLayoutTest, OpensWhenTheConfigurationMatches) {
  EXPECT_TRUE(Open().ok()) << Open();
  EXPECT_TRUE(Serve().ok()) << Serve();
  auto c = LoadModelConfig(dir_.path());
  ASSERT_TRUE(c.ok());
  // 3 ends (embedding, untied LM head, final norm) and 9 tensors in each of 2 layers.
  EXPECT_EQ(ExpectedTensors(*c, "").size(), 3u + 2 * 9);
}

TEST_F(CheckpointLayoutTest, LayersThatTheWeightsDoNotHoldAreRefused) {
  for (int layers : {3, 1, 64}) {
    Set("num_hidden_layers", layers);
    const absl::Status s = Open();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(
        std::string(s.message()),
        HasSubstr(config_path() + ": field 'num_hidden_layers' is " + std::to_string(layers) +
                  " but the checkpoint (" + dir_.file("model.safetensors") +
                  ") holds weights for 2 layer(s), model.layers.0 to model.layers.1"));
    EXPECT_EQ(Serve().message(), s.message()) << "the serving path refuses it the same way";
  }
}

TEST_F(CheckpointLayoutTest, HugeLayerCountFailsCleanlyOnTheServingPath) {
  // Used to abort with std::bad_alloc (exit 134) allocating a billion layers.
  Set("num_hidden_layers", 1000000000);
  const absl::Status s = Serve();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(config_path() + ": field 'num_hidden_layers' is 1000000000"));
}

TEST_F(CheckpointLayoutTest, ShapesThatTheWeightsDoNotHaveNameTheKey) {
  const std::string weights = dir_.file("model.safetensors");
  const struct {
    const char* key;
    json value;
    std::string expected;
  } cases[] = {
      {"hidden_size", 128,
       "tensor 'model.embed_tokens.weight' has shape [512,64], expected [512,128] from "
       "hidden_size = 128"},
      {"vocab_size", 1000,
       "tensor 'model.embed_tokens.weight' has shape [512,64], expected [1000,64] from "
       "vocab_size = 1000"},
      {"intermediate_size", 100,
       "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [172,64], expected [100,64] "
       "from intermediate_size = 100"},
      {"num_key_value_heads", 4,
       "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [32,64], expected [64,64] "
       "from num_key_value_heads * head_dim = 64"},
      {"head_dim", 32,
       "tensor 'model.layers.0.self_attn.q_proj.weight' has shape [64,64], expected [128,64] "
       "from num_attention_heads * head_dim = 128"},
  };
  for (const auto& c : cases) {
    SetUp();  // a fresh config.json
    Set(c.key, c.value);
    const absl::Status s = Open();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.key;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(weights + ": " + c.expected + " in " + config_path()))
        << c.key;
    EXPECT_EQ(Serve().message(), s.message()) << c.key;
  }
}

TEST_F(CheckpointLayoutTest, Gpt2LayersAndShapesAreCheckedToo) {
  Write("gpt2-tiny");
  EXPECT_TRUE(Open().ok()) << Open();
  Set("n_layer", 3);
  EXPECT_THAT(std::string(Open().message()), HasSubstr("field 'n_layer' is 3 but the checkpoint"));
  Set("n_layer", 2);
  Set("n_positions", 512);
  EXPECT_THAT(std::string(Open().message()),
              HasSubstr("tensor 'transformer.wpe.weight' has shape [256,64], expected [512,64] "
                        "from n_positions = 512"));
}

TEST_F(CheckpointLayoutTest, MissingTensorNamesTheConfiguration) {
  Set("attention_bias", true);  // asks for biases the checkpoint does not have
  const absl::Status s = Open();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(dir_.file("model.safetensors") +
                        ": missing tensor 'model.layers.0.self_attn.q_proj.bias', which " +
                        config_path() + " requires"));
}

}  // namespace
}  // namespace orca

// Malformed checkpoint files fail with a message that names the file, the tensor and
// the problem; well-formed ones (single file and sharded) load.
#include "engine/model/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>

#include "engine/backend/backend.h"
#include "engine/common/file_util.h"
#include "engine/model/checkpoint.h"
#include "engine/model/random_checkpoint.h"
#include "engine/runner/model_runner.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using orca::testing::TempDir;
using ::testing::HasSubstr;

std::string Raw(const std::string& header, const std::string& data) {
  uint64_t n = header.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + header + data;
}

absl::Status OpenBytes(const TempDir& dir, const std::string& bytes) {
  std::string path = dir.file("model.safetensors");
  EXPECT_TRUE(WriteFile(path, bytes).ok());
  return SafetensorsFile::Open(path).status();
}

void ExpectError(const absl::Status& s, const std::string& what) {
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("model.safetensors")) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(what)) << s;
}

TEST(SafetensorsTest, RejectsMalformedFiles) {
  TempDir dir;
  const std::string ok_header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_TRUE(OpenBytes(dir, Raw(ok_header, std::string(8, '\0'))).ok());

  ExpectError(OpenBytes(dir, "abc"), "truncated");
  std::string huge(8, '\0');
  uint64_t big = 1ull << 40;
  std::memcpy(huge.data(), &big, 8);
  ExpectError(OpenBytes(dir, huge + "{}"), "exceeds the 100 MiB limit");
  std::string past(8, '\0');
  uint64_t len = 1000;
  std::memcpy(past.data(), &len, 8);
  ExpectError(OpenBytes(dir, past + "{}"), "runs past the end");
  ExpectError(OpenBytes(dir, Raw("{not json", "")), "not a JSON object");
  ExpectError(
      OpenBytes(dir, Raw(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0'))),
      "tensor 'w': missing dtype");
  ExpectError(OpenBytes(dir, Raw(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})",
                                 std::string(8, '\0'))),
              "unknown dtype 'Q4'");
  ExpectError(OpenBytes(dir, Raw(ok_header, std::string(4, '\0'))), "run past the data section");
  ExpectError(OpenBytes(dir, Raw(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                 std::string(8, '\0'))),
              "needs 12");
  ExpectError(OpenBytes(dir, Raw(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})",
                                 std::string(8, '\0'))),
              "reversed");
  ExpectError(OpenBytes(dir, Raw(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
                                 std::string(8, '\0'))),
              "non-negative");
  ExpectError(OpenBytes(dir, Raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                 std::string(12, '\0'))),
              "overlap");
  ExpectError(
      OpenBytes(dir,
                Raw(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                    std::string(8, '\0'))),
      "overflows");
}

TEST(SafetensorsTest, WriterRoundTripsAllFloatDtypes) {
  TempDir dir;
  SafetensorsWriter w;
  std::vector<float> v = {1.0f, -2.5f, 3.25f, 0.0f, 65504.0f, -1e-3f};
  w.AddF32("a", DType::kF32, {2, 3}, v);
  w.AddF32("b", DType::kF16, {6}, v);
  w.AddF32("c", DType::kBF16, {3, 2}, v);
  ASSERT_TRUE(w.Write(dir.file("x.safetensors")).ok());
  auto f = SafetensorsFile::Open(dir.file("x.safetensors"));
  ASSERT_TRUE(f.ok()) << f.status();
  for (const char* name : {"a", "b", "c"}) {
    const HostTensorView* t = (*f)->Find(name);
    ASSERT_NE(t, nullptr);
    std::vector<float> back(6);
    ConvertToF32(t->data, t->dtype, 6, back.data());
    for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(back[i], v[i], std::abs(v[i]) * 4e-3) << name;
  }
}

class CheckpointErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = PresetConfig("tiny");
    ASSERT_TRUE(c.ok());
    config_ = *c;
    config_.num_layers = 1;
    ASSERT_TRUE(WriteRandomCheckpoint(config_, dir_.path(), 3).ok());
  }
  // Rewrites model.safetensors with `edit` applied to the list of tensors.
  void Rewrite(
      const std::function<void(
          std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>&)>& edit) {
    auto f = SafetensorsFile::Open(dir_.file("model.safetensors"));
    ASSERT_TRUE(f.ok());
    std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> tensors;
    for (const auto& [name, v] : (*f)->tensors()) {
      std::vector<float> vals(v.num_elements());
      ConvertToF32(v.data, v.dtype, vals.size(), vals.data());
      tensors[name] = {v.shape, vals};
    }
    f->reset();
    edit(tensors);
    SafetensorsWriter w;
    for (auto& [name, t] : tensors) {
      w.AddF32(name, DType::kF32, t.first, t.second);
    }
    ASSERT_TRUE(w.Write(dir_.file("model.safetensors")).ok());
  }
  absl::Status Load() {
    auto backend = CreateCpuBackend(1);
    ModelRunnerOptions opts;
    opts.num_kv_blocks = 4;
    return ModelRunner::Create(dir_.path(), backend.get(), opts).status();
  }
  TempDir dir_;
  ModelConfig config_;
};

TEST_F(CheckpointErrorsTest, LoadsWhenIntact) { EXPECT_TRUE(Load().ok()) << Load(); }

TEST_F(CheckpointErrorsTest, MissingTensorIsNamed) {
  Rewrite([](auto& t) { t.erase("model.layers.0.self_attn.k_proj.weight"); });
  absl::Status s = Load();
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("missing tensor 'model.layers.0.self_attn.k_proj.weight'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("model.safetensors"));
}

TEST_F(CheckpointErrorsTest, ShapeMismatchIsNamed) {
  Rewrite([](auto& t) {
    auto& w = t["model.layers.0.mlp.up_proj.weight"];
    w.first = {w.first[1], w.first[0]};
  });
  absl::Status s = Load();
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr("'model.layers.0.mlp.up_proj.weight' has shape [64,172], expected [172,64]"));
}

TEST_F(CheckpointErrorsTest, WrongDtypeIsNamed) {
  // Replace the final norm with an I64 tensor of the right shape.
  auto f = SafetensorsFile::Open(dir_.file("model.safetensors"));
  ASSERT_TRUE(f.ok());
  SafetensorsWriter w;
  for (const auto& [name, v] : (*f)->tensors()) {
    if (name == "model.norm.weight") {
      // 64 I64 values occupy the bytes of 128 F32 values; the header is patched below.
      std::vector<int64_t> ones(v.num_elements(), 1);
      w.Add("model.norm.weight.placeholder", DType::kF32, {v.num_elements() * 2}, ones.data());
      continue;
    }
    w.Add(name, v.dtype, v.shape, v.data);
  }
  f->reset();
  ASSERT_TRUE(w.Write(dir_.file("model.safetensors")).ok());
  // Patch the placeholder's header entry to an I64 tensor named model.norm.weight.
  auto bytes = ReadFile(dir_.file("model.safetensors"));
  ASSERT_TRUE(bytes.ok());
  std::string b = *bytes;
  std::string from = "\"model.norm.weight.placeholder\":{\"data_offsets\"";
  size_t at = b.find(from);
  ASSERT_NE(at, std::string::npos);
  size_t dtype_at = b.find("\"dtype\":\"F32\",\"shape\":[128]", at);
  ASSERT_NE(dtype_at, std::string::npos);
  b.replace(dtype_at, std::strlen("\"dtype\":\"F32\",\"shape\":[128]"),
            "\"dtype\":\"I64\",\"shape\":[64] ");
  b.replace(at, std::strlen("\"model.norm.weight.placeholder\""),
            "\"model.norm.weight\"            ");
  ASSERT_TRUE(WriteFile(dir_.file("model.safetensors"), b).ok());
  absl::Status s = Load();
  EXPECT_THAT(std::string(s.message()), HasSubstr("tensor 'model.norm.weight' has dtype I64")) << s;
}

TEST_F(CheckpointErrorsTest, ConfigErrorsNameTheFile) {
  auto write_config = [&](const std::string& text) {
    ASSERT_TRUE(WriteFile(dir_.file("config.json"), text).ok());
  };
  write_config("{");
  EXPECT_THAT(std::string(Load().message()), HasSubstr("config.json: not a JSON object"));
  write_config(R"({"architectures":["BertModel"]})");
  EXPECT_THAT(std::string(Load().message()),
              HasSubstr("architecture 'BertModel' is not supported"));
  write_config(
      R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":172,)"
      R"("num_hidden_layers":1,"num_attention_heads":4,"num_key_value_heads":3,"vocab_size":512})");
  EXPECT_THAT(std::string(Load().message()),
              HasSubstr("must be a multiple of num_key_value_heads"));
  write_config(R"({"architectures":["LlamaForCausalLM"],"hidden_size":"64"})");
  EXPECT_THAT(std::string(Load().message()), HasSubstr("field 'hidden_size' must be an integer"));
  write_config(R"({"architectures":["LlamaForCausalLM"],"hidden_size":64})");
  EXPECT_THAT(std::string(Load().message()), HasSubstr("missing field"));
}

TEST_F(CheckpointErrorsTest, MissingWeightsFile) {
  std::remove(dir_.file("model.safetensors").c_str());
  EXPECT_THAT(std::string(Load().message()), HasSubstr("no model.safetensors"));
}

TEST_F(CheckpointErrorsTest, ShardedCheckpointLoadsAndIndexErrorsAreNamed) {
  // Split into two shards with an index.
  auto f = SafetensorsFile::Open(dir_.file("model.safetensors"));
  ASSERT_TRUE(f.ok());
  SafetensorsWriter a, b;
  std::string map;
  int i = 0;
  for (const auto& [name, v] : (*f)->tensors()) {
    bool first = (i++ % 2) == 0;
    (first ? a : b).Add(name, v.dtype, v.shape, v.data);
    map +=
        (map.empty() ? "" : ",") +
        ("\"" + name + "\":\"" +
         (first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors") + "\"");
  }
  f->reset();
  ASSERT_TRUE(a.Write(dir_.file("model-00001-of-00002.safetensors")).ok());
  ASSERT_TRUE(b.Write(dir_.file("model-00002-of-00002.safetensors")).ok());
  std::remove(dir_.file("model.safetensors").c_str());
  ASSERT_TRUE(
      WriteFile(dir_.file("model.safetensors.index.json"), "{\"weight_map\":{" + map + "}}").ok());
  EXPECT_TRUE(Load().ok()) << Load();

  ASSERT_TRUE(WriteFile(dir_.file("model.safetensors.index.json"),
                        R"({"weight_map":{"model.norm.weight":"../etc/passwd"}})")
                  .ok());
  EXPECT_THAT(std::string(Load().message()), HasSubstr("is not a plain file name"));
  ASSERT_TRUE(WriteFile(dir_.file("model.safetensors.index.json"),
                        R"({"weight_map":{"model.norm.weight":"model-00009.safetensors"}})")
                  .ok());
  EXPECT_THAT(std::string(Load().message()), HasSubstr("model-00009.safetensors: no such file"));
  ASSERT_TRUE(WriteFile(dir_.file("model.safetensors.index.json"), R"({"weights":{}})").ok());
  EXPECT_THAT(std::string(Load().message()),
              HasSubstr("model.safetensors.index.json: expected an object"));
}

TEST(DTypeTest, HalfConversionsRoundTrip) {
  for (float v : {0.0f, 1.0f, -2.0f, 0.333f, 65504.0f, 6.1e-5f, 5.96e-8f, -1e-6f}) {
    EXPECT_NEAR(F16ToF32(F32ToF16(v)), v, std::max(std::abs(v) * 1e-3f, 6e-8f)) << v;
    EXPECT_NEAR(Bf16ToF32(F32ToBf16(v)), v, std::abs(v) * 8e-3f) << v;
  }
  EXPECT_TRUE(std::isinf(F16ToF32(F32ToF16(1e6f))));
  EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(NAN))));
  EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(NAN))));
}

}  // namespace
}  // namespace orca

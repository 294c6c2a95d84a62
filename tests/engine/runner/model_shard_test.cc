// PipelineStageLayers (model_shard.h): the layers each pipeline stage holds (the text of
// --pipeline-layers is parsed in engine/config: config_test). The balanced split is
// checked against an exhaustive search over every contiguous split (a different
// algorithm: all compositions of the layers into the stages), and a few splits worked
// out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/runner/model_shard.h"

namespace orca {
namespace {

ModelConfig Llama(int32_t layers, int32_t hidden, int32_t intermediate, int32_t vocab) {
  ModelConfig c;
  c.family = ModelFamily::kLlama;
  c.num_layers = layers;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_heads = c.num_kv_heads = hidden / 64;
  c.head_dim = 64;
  c.vocab_size = vocab;
  return c;
}

// A stage's work in half parameters: its layers' parameters twice (every token), the LM
// head's once (the sampled rows: one per two tokens).
int64_t Heaviest(const ModelConfig& c, const std::vector<int32_t>& split) {
  int64_t worst = 0;
  for (size_t s = 0; s < split.size(); ++s) {
    int64_t w = 2 * split[s] * CountLayerParameters(c);
    if (s + 1 == split.size()) w += int64_t{c.vocab_size} * c.hidden_size;
    worst = std::max(worst, w);
  }
  return worst;
}

// Every way to give `stages` stages at least one of `layers` layers each.
int64_t BestByExhaustiveSearch(const ModelConfig& c, int32_t stages) {
  int64_t best = std::numeric_limits<int64_t>::max();
  std::vector<int32_t> split;
  std::function<void(int32_t)> walk = [&](int32_t left) {
    if (static_cast<int32_t>(split.size()) == stages - 1) {
      if (left < 1) return;
      split.push_back(left);
      best = std::min(best, Heaviest(c, split));
      split.pop_back();
      return;
    }
    for (int32_t n = 1; n <= left - (stages - 1 - static_cast<int32_t>(split.size())); ++n) {
      split.push_back(n);
      walk(left - n);
      split.pop_back();
    }
  };
  walk(c.num_layers);
  return best;
}

TEST(PipelineStageLayersTest, HandWorkedSplits) {
  // llama-110m: 7.08 M parameters a layer, an LM head of 32,000 x 768 = 24.6 M, which
  // weighs half that: 1.74 layers. Two stages: 7 | 5 + head = 7 | 6.74 layers, where 6 | 6
  // gives 6 | 7.74 and 8 | 4 gives 8 | 5.74.
  const ModelConfig m110 = Llama(12, 768, 2048, 32000);
  EXPECT_EQ(CountLayerParameters(m110), 7079424);
  EXPECT_EQ(*PipelineStageLayers(m110, 2, {}), (std::vector<int32_t>{7, 5}));
  // Four stages: 3 | 3 | 3 | 3 + head is 4.74 at the last; 4 | 3 | 3 | 2 + head and
  // 4 | 4 | 3 | 1 + head both 4 at the heaviest: the one nearer even.
  EXPECT_EQ(*PipelineStageLayers(m110, 4, {}), (std::vector<int32_t>{4, 3, 3, 2}));
  // One stage holds everything; a head too small to move a layer keeps the even split
  // (stories260K-like: 5 layers, head 0.33 layers: 3 | 2 + head).
  EXPECT_EQ(*PipelineStageLayers(m110, 1, {}), (std::vector<int32_t>{12}));
  ModelConfig small = Llama(5, 64, 172, 512);
  EXPECT_EQ(*PipelineStageLayers(small, 2, {}), (std::vector<int32_t>{3, 2}));
  // A head heavier than all but one layer: the last stage keeps one layer.
  ModelConfig huge_vocab = Llama(4, 128, 256, 1 << 20);
  EXPECT_EQ(*PipelineStageLayers(huge_vocab, 2, {}), (std::vector<int32_t>{3, 1}));
  // As many stages as layers: one each.
  EXPECT_EQ(*PipelineStageLayers(huge_vocab, 4, {}), (std::vector<int32_t>{1, 1, 1, 1}));
}

TEST(PipelineStageLayersTest, BalancedSplitIsAsLightAsTheBestContiguousSplit) {
  for (int32_t layers : {2, 5, 12, 13, 24}) {
    for (int32_t vocab : {256, 32000, 128256}) {
      const ModelConfig c = Llama(layers, 512, 1408, vocab);
      for (int32_t stages = 1; stages <= std::min(layers, 5); ++stages) {
        auto split = PipelineStageLayers(c, stages, {});
        ASSERT_TRUE(split.ok()) << split.status();
        ASSERT_EQ(static_cast<int32_t>(split->size()), stages);
        int32_t sum = 0;
        for (int32_t n : *split) {
          EXPECT_GE(n, 1);
          sum += n;
        }
        EXPECT_EQ(sum, layers);
        EXPECT_EQ(Heaviest(c, *split), BestByExhaustiveSearch(c, stages))
            << layers << " layers, vocabulary " << vocab << ", " << stages << " stages";
      }
    }
  }
}

TEST(PipelineStageLayersTest, RequestedSplitIsCheckedAndKept) {
  const ModelConfig c = Llama(12, 768, 2048, 32000);
  EXPECT_EQ(*PipelineStageLayers(c, 2, {6, 6}), (std::vector<int32_t>{6, 6}));
  EXPECT_EQ(*PipelineStageLayers(c, 3, {1, 10, 1}), (std::vector<int32_t>{1, 10, 1}));
  for (const std::vector<int32_t>& bad :
       {std::vector<int32_t>{6, 5}, {6, 7}, {12, 0}, {4, 4, 4}, {13, -1}}) {
    auto split = PipelineStageLayers(c, 2, bad);
    EXPECT_EQ(split.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(split.status().message().find("pipeline layers"), absl::string_view::npos)
        << split.status();
  }
  // More stages than layers, whatever was asked.
  EXPECT_EQ(PipelineStageLayers(c, 13, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PipelineStageLayersTest, ShardLayersFollowTheSplit) {
  ModelShard shard{3, 1, 0, 0};
  shard.stage_layers = {1, 10, 1};
  std::vector<std::pair<int32_t, int32_t>> got;
  for (shard.stage = 0; shard.stage < 3; ++shard.stage) got.push_back(shard.Layers(12));
  EXPECT_EQ(got, (std::vector<std::pair<int32_t, int32_t>>{{0, 1}, {1, 11}, {11, 12}}));
}

}  // namespace
}  // namespace orca

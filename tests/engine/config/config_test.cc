// The one configuration (engine/config): the settings table, the strict engine.yaml
// reader, precedence (defaults < file < flags), the writers (engine.yaml, flags) read back
// by the readers, the docs table, and the CPU limit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "engine/common/cpu_limit.h"
#include "engine/common/utf8.h"
#include "engine/config/config_loader.h"
#include "engine/config/pipeline_layers.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using ::testing::HasSubstr;

constexpr Role kRoles[] = {Role::kServe, Role::kScheduler, Role::kWorker, Role::kGenerate};

TEST(SettingsTest, KeysAreUniqueAndFlagsUniquePerRole) {
  std::set<std::string> keys;
  for (const Setting& s : AllSettings()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    EXPECT_EQ(s.key.find('.'), s.key.rfind('.')) << s.key << ": section.name";
    EXPECT_FALSE(s.help.empty()) << s.key;
    EXPECT_NE(s.roles, 0u) << s.key;
  }
  for (Role r : kRoles) {
    std::set<std::string> flags;
    for (const Setting& s : AllSettings()) {
      if (HasRole(s.roles, r)) {
        EXPECT_TRUE(flags.insert(s.flag).second) << s.flag;
      }
    }
  }
}

TEST(SettingsTest, EveryDefaultReadsBackAndBoundsAreEnforced) {
  for (const Setting& s : AllSettings()) {
    EngineConfig c;
    EXPECT_TRUE(s.set(c, s.DefaultText(Role::kScheduler)).ok()) << s.key;
    EXPECT_EQ(s.get(c), s.DefaultText(Role::kScheduler)) << s.key;
    if (s.type == SettingType::kInt || s.type == SettingType::kDouble) {
      EXPECT_FALSE(s.set(c, std::to_string(static_cast<int64_t>(s.max) + 1)).ok()) << s.key;
      EXPECT_FALSE(s.set(c, std::to_string(static_cast<int64_t>(s.min) - 1)).ok()) << s.key;
      EXPECT_FALSE(s.set(c, "many").ok()) << s.key;
    }
    if (s.type == SettingType::kBool) {
      EXPECT_FALSE(s.set(c, "yes").ok()) << s.key;
    }
    if (s.type == SettingType::kEnum) {
      EXPECT_FALSE(s.set(c, "nonsense").ok()) << s.key;
    }
  }
}

TEST(SettingsTest, EnumSpellings) {
  EXPECT_EQ(ParseDevice("gpu"), Device::kCuda);  // the CRD's spelling
  EXPECT_EQ(ParseDevice("cuda"), Device::kCuda);
  EXPECT_EQ(DeviceName(Device::kCuda), "cuda");
  EXPECT_EQ(ParseWeightDType("bfloat16"), WeightDType::kBFloat16);
  EXPECT_EQ(ParseSchedulingPolicy("request-compact"), SchedulingPolicy::kRequestCompact);
  EXPECT_EQ(ParseKvPolicy("reserve"), KvPolicy::kReserve);
  EXPECT_FALSE(ParseDevice("tpu").has_value());
}

absl::Status Apply(const std::string& text, EngineConfig& c) {
  return ApplyEngineYaml(text, "engine.yaml", c);
}

TEST(EngineYamlTest, AppliesKnownKeys) {
  EngineConfig c;
  ASSERT_TRUE(Apply("scheduler:\n  max_batch_size: 8\n  chunked_prefill: false\n"
                    "device:\n  type: gpu\n  memory_fraction: 0.5\nmodel:\n  dtype: bfloat16\n",
                    c)
                  .ok());
  EXPECT_EQ(c.scheduler.max_batch_size, 8);
  EXPECT_FALSE(c.scheduler.chunked_prefill);
  EXPECT_EQ(c.device.type, Device::kCuda);
  EXPECT_DOUBLE_EQ(c.device.memory_fraction, 0.5);
  EXPECT_EQ(c.model.dtype, WeightDType::kBFloat16);
}

TEST(EngineYamlTest, IsStrictAndNamesFileAndKey) {
  struct Case {
    const char* yaml;
    const char* message;
  };
  for (const Case& k : std::vector<Case>{
           {"engine:\n  max_batch_size: 8\n", "unknown section 'engine'"},
           {"scheduler:\n  max_batch_sise: 8\n", "unknown key 'scheduler.max_batch_sise'"},
           {"scheduler:\n  max_batch_size: \"8\"\n", "scheduler.max_batch_size must be an integer"},
           {"scheduler:\n  max_batch_size: 0\n", "must be an integer in [1, 4096], got '0'"},
           {"scheduler:\n  chunked_prefill: yes\n", "must be true or false"},
           {"scheduler:\n  policy: fastest\n", "one of: iteration, request, request-compact"},
           {"device:\n  memory_fraction: 2\n", "device.memory_fraction must be a number in"},
           {"scheduler:\n  max_batch_size: [1, 2]\n", "scheduler.max_batch_size must be"},
           {"scheduler: 3\n", "scheduler must be a mapping"},
           {"- a\n- b\n", "must be a mapping of sections"},
           {"scheduler: {max_batch_size: 8\n", "not valid YAML"},
       }) {
    EngineConfig c;
    absl::Status s = Apply(k.yaml, c);
    EXPECT_FALSE(s.ok()) << k.yaml;
    EXPECT_THAT(std::string(s.message()), HasSubstr("engine.yaml: ")) << k.yaml;
    EXPECT_THAT(std::string(s.message()), HasSubstr(k.message)) << k.yaml;
  }
}

// engine.yaml that is not UTF-8 or holds a NUL (found by tests/fuzz/engine_yaml_fuzzer:
// yaml-cpp let the bytes through, or mangled the NUL into bytes that are not UTF-8, into
// model.name, and `orca config check` then died in ToEngineYaml with an uncaught
// nlohmann::json exception) is refused naming the file and the line.
TEST(EngineYamlTest, RefusesTextThatIsNotPrintableUtf8) {
  using std::string_literals::operator""s;
  EngineConfig c = DefaultConfig(Role::kScheduler);
  for (const std::string& text : {
           "model:\n  dir: \"/models/llama\"\n  name: \"llama-3-70b-instruct\xff\"\n"s,
           "model:\n  dir: \"/models/llama\"\n  name: \"llama\0_3\"\n"s,
       }) {
    absl::Status s = ApplyEngineYaml(text, "engine.yaml", c);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("engine.yaml: line 3: not UTF-8 or a control character"));
    EXPECT_EQ(c.model.served_name, DefaultConfig(Role::kScheduler).model.served_name);
  }
  // UTF-8 text is taken and written back as it was.
  ASSERT_TRUE(
      ApplyEngineYaml("model:\n  name: \"caf\xC3\xA9 \xE2\x9C\x93\"\n", "engine.yaml", c).ok());
  auto yaml = ToEngineYaml(c, {"model.name"});
  ASSERT_TRUE(yaml.ok());
  EXPECT_EQ(*yaml, "model:\n  name: \"caf\xC3\xA9 \xE2\x9C\x93\"\n");
  // A flag can still carry such bytes: the writer spells them U+FFFD instead of throwing.
  c.model.served_name = "a\xff";
  yaml = ToEngineYaml(c, {"model.name"});
  ASSERT_TRUE(yaml.ok());
  EXPECT_EQ(*yaml, "model:\n  name: \"a\xEF\xBF\xBD\"\n");
}

// Characters JSON leaves raw but YAML may not hold (found by
// tests/fuzz/engine_yaml_fuzzer: a model.dir with U+0080, written raw, did not read back)
// are written as escapes and read back as they were: DEL, C1 controls, NEL, U+FFFE/F.
TEST(EngineYamlTest, WritesWhatYamlMayNotHoldAsEscapes) {
  EngineConfig c = DefaultConfig(Role::kScheduler);
  c.model.dir =
      "a\x7F b\xC2\x80 c\xC2\x85 d\xC2\x9F e\xEF\xBF\xBE f\xEF\xBF\xBF g\xC2\xA0 \xE2\x9C\x93";
  auto yaml = ToEngineYaml(c, {"model.dir"});
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(*yaml,
            "model:\n  dir: \"a\\u007f b\\u0080 c\\u0085 d\\u009f e\\ufffe f\\uffff g\xC2\xA0 "
            "\xE2\x9C\x93\"\n");
  EngineConfig back = DefaultConfig(Role::kScheduler);
  ASSERT_TRUE(ApplyEngineYaml(*yaml, "engine.yaml", back).ok());
  EXPECT_EQ(back.model.dir, c.model.dir);
}

// Verdicts from Python's UTF-8 decoder (bytes.decode('utf-8'), UnicodeDecodeError.start).
TEST(Utf8Test, FindsTheFirstIllFormedSequence) {
  const size_t kValid = std::string_view::npos;
  const std::vector<std::pair<std::string, size_t>> cases = {
      {"plain ascii", kValid},
      {"caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80", kValid},
      {"\xC0\xAF", 0},           // overlong '/'
      {"\xC1\xBF", 0},           // overlong
      {"\xE0\x80\xAF", 0},       // overlong
      {"\xE0\x9F\xBF", 0},       // overlong
      {"\xED\xA0\x80", 0},       // surrogate D800
      {"\xED\x9F\xBF", kValid},  // U+D7FF
      {"\xF0\x8F\xBF\xBF", 0},   // overlong
      {"\xF4\x90\x80\x80", 0},   // above U+10FFFF
      {"\xF4\x8F\xBF\xBF", kValid},
      {"\xF5\x80\x80\x80", 0},
      {"\xFF", 0},
      {"ab\x80", 2},
      {"\xE2\x82", 0},  // truncated
      {"\xEF\xBF\xBF", kValid},
      {"x\xF0\x9F\x98", 1},
  };
  for (const auto& [bytes, expected] : cases) {
    EXPECT_EQ(FindInvalidUtf8(bytes), expected) << ::testing::PrintToString(bytes);
  }
}

// YAML 1.2 production [1] c-printable: tab, LF, CR, x20-x7E, NEL, xA0-xD7FF, xE000-xFFFD,
// x10000-x10FFFF.
TEST(Utf8Test, FindsWhatYamlCannotHold) {
  using std::string_literals::operator""s;
  const size_t kPrintable = std::string_view::npos;
  EXPECT_EQ(FindNonPrintableYaml("a:\tb\r\nc: \xC2\x85 \xC2\xA0 \xEF\xBF\xBD \xF0\x9F\x98\x80"),
            kPrintable);
  EXPECT_EQ(FindNonPrintableYaml("ab\0"s), 2u);
  EXPECT_EQ(FindNonPrintableYaml("a\x1b[0m"), 1u);       // ESC
  EXPECT_EQ(FindNonPrintableYaml("a\x7f"), 1u);          // DEL
  EXPECT_EQ(FindNonPrintableYaml("a\xC2\x9B"), 1u);      // C1 CSI
  EXPECT_EQ(FindNonPrintableYaml("a\xEF\xBF\xBE"), 1u);  // U+FFFE
  EXPECT_EQ(FindNonPrintableYaml("ok \xFF"), 3u);
}

TEST(EngineYamlTest, FlagsOverrideTheFileWhichOverridesDefaults) {
  testing::TempDir tmp;
  std::ofstream(tmp.file("engine.yaml"))
      << "model:\n  dir: /m\nscheduler:\n  max_batch_size: 8\n  max_batched_tokens: 99\n"
         "  prefix_caching: true\n";
  auto c = ParseCommandLine(Role::kServe, {"--config", tmp.file("engine.yaml"),
                                           "--max-batch-size=3", "--no-prefix-caching"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->scheduler.max_batch_size, 3);           // flag
  EXPECT_EQ(c->scheduler.max_batched_tokens, 99);      // file
  EXPECT_FALSE(c->scheduler.prefix_caching);           // --no- flag
  EXPECT_EQ(c->scheduler.max_waiting_requests, 1024);  // default
  EXPECT_EQ(c->parallel.control_port, 0);              // serve's own default
}

TEST(CommandLineTest, ErrorsNameTheFlag) {
  auto c = ParseCommandLine(Role::kServe, {"--model", "/m", "--max-batch-size", "0"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("--max-batch-size must be"));
  c = ParseCommandLine(Role::kServe, {"--model", "/m", "--prefix-caching", "--no-prefix-caching"});
  EXPECT_FALSE(c.ok());
  // A worker takes no scheduler settings; a scheduler loads no weights.
  EXPECT_FALSE(ParseCommandLine(Role::kWorker, {"--max-batch-size", "3"}).ok());
  EXPECT_FALSE(ParseCommandLine(Role::kScheduler, {"--model", "/m", "--dtype", "float16"}).ok());
  // Required values.
  EXPECT_THAT(std::string(ParseCommandLine(Role::kServe, {}).status().message()),
              HasSubstr("--model DIR"));
  EXPECT_THAT(std::string(ParseCommandLine(Role::kWorker, {"--model", "/m"}).status().message()),
              HasSubstr("--scheduler"));
}

TEST(CommandLineTest, KvCacheDTypeSpellings) {
  auto c = ParseCommandLine(Role::kServe, {"--model", "/m", "--kv-cache-dtype", "bf16"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kv_cache.dtype, WeightDType::kBFloat16);
  c = ParseCommandLine(Role::kServe, {"--model", "/m", "--kv-cache-dtype", "fp8"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("--kv-cache-dtype"));
  c = ParseCommandLine(Role::kScheduler,
                       {"--model", "/m", "--device", "cuda", "--kv-cache-dtype", "fp16"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*ResolveKvCacheDType(c->kv_cache.dtype, c->device.type), DType::kF16);
}

TEST(PipelineLayersTest, CountsOrAuto) {
  EXPECT_EQ(*ParseStageLayers("8,4"), (std::vector<int32_t>{8, 4}));
  EXPECT_EQ(*ParseStageLayers(" 3, 2 ,1 "), (std::vector<int32_t>{3, 2, 1}));
  EXPECT_TRUE(ParseStageLayers("")->empty());
  EXPECT_TRUE(ParseStageLayers("auto")->empty());
  for (const char* bad : {"8,", ",4", "8;4", "eight", "8,-4", "8,0", "1e3", "99999999999"}) {
    auto got = ParseStageLayers(bad);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(got.status().message().find(bad), absl::string_view::npos) << got.status();
  }
}

// The process that splits the layers (serve, scheduler) refuses a split that does not
// name every stage before it loads anything; `orca config check` says the same.
TEST(CommandLineTest, PipelineLayersNameOneCountPerStage) {
  auto c = ParseCommandLine(
      Role::kServe, {"--model", "/m", "--pipeline-parallel", "2", "--pipeline-layers", "7,5"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->parallel.pipeline_layers, "7,5");
  EXPECT_TRUE(ParseCommandLine(Role::kServe, {"--model", "/m", "--pipeline-layers", "auto"}).ok());
  for (const char* split : {"7,4,1", "12"}) {
    c = ParseCommandLine(Role::kScheduler,
                         {"--model", "/m", "--pipeline-parallel", "2", "--pipeline-layers", split});
    ASSERT_FALSE(c.ok()) << split;
    EXPECT_THAT(std::string(c.status().message()),
                HasSubstr(absl::StrCat("parallelism.pipeline_layers \"", split, "\"")));
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("parallelism.pipeline is 2"));
  }
  c = ParseCommandLine(Role::kServe, {"--model", "/m", "--pipeline-layers", "7,,5"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("expected layer counts >= 1"));
  // Workers take the split from the scheduler's GroupInit, never from their own settings.
  EXPECT_FALSE(ParseCommandLine(Role::kWorker,
                                {"--model", "/m", "--scheduler", "s:1", "--pipeline-layers", "7,5"})
                   .ok());
}

EngineConfig NonDefault() {
  EngineConfig c;
  c.model.dir = "/models/x y";  // a space and a quote survive the writer
  c.model.served_name = "say \"hi\"";
  c.model.dtype = WeightDType::kFloat16;
  c.device.type = Device::kCuda;
  c.device.memory_fraction = 0.123456789;
  c.device.threads = 3;
  c.kv_cache.block_size = 32;
  c.kv_cache.size_mib = 77;
  c.kv_cache.dtype = WeightDType::kFloat32;
  c.server.trace_file = "/tmp/trace \"x\".json";
  c.scheduler.policy = SchedulingPolicy::kRequestCompact;
  c.scheduler.prefix_caching = false;
  c.parallel.gpus_per_pod = 2;
  c.parallel.tensor = 4;
  c.server.grpc_port = -1;
  c.worker.scheduler = "sched:8002";
  c.worker.stage = 1;
  c.worker.metrics_port = -1;
  return c;
}

TEST(WritersTest, EngineYamlReadsBackToTheSameConfiguration) {
  const EngineConfig want = NonDefault();
  auto yaml = ToEngineYaml(want);
  ASSERT_TRUE(yaml.ok());
  EngineConfig got;
  ASSERT_TRUE(Apply(*yaml, got).ok()) << *yaml;
  for (const Setting& s : AllSettings()) EXPECT_EQ(s.get(got), s.get(want)) << s.key;
  EXPECT_FALSE(ToEngineYaml(want, {"scheduler.nope"}).ok());
  auto some = ToEngineYaml(want, {"kv_cache.block_size"}, "# head\n");
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(*some, "# head\nkv_cache:\n  block_size: 32\n");
}

TEST(WritersTest, FlagsReadBackToTheSameConfigurationForTheirRole) {
  const EngineConfig want = NonDefault();
  for (Role r : {Role::kServe, Role::kWorker}) {
    auto got = ParseCommandLine(r, ToFlags(want, r));
    ASSERT_TRUE(got.ok()) << got.status();
    for (const Setting& s : AllSettings()) {
      if (HasRole(s.roles, r)) {
        EXPECT_EQ(s.get(*got), s.get(want)) << s.key;
      }
    }
  }
}

// docs/configuration.md embeds the table; it must be the one the code prints.
TEST(DocsTest, ConfigurationPageHasTheCurrentTable) {
  std::ifstream in(testing::SourceDir() + "/docs/configuration.md");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_THAT(ss.str(), HasSubstr(SettingsMarkdownTable()))
      << "regenerate the table in docs/configuration.md with `orca config docs`";
}

TEST(CpuLimitTest, CgroupQuotas) {
  EXPECT_EQ(CpusFromCgroupV2("max 100000\n"), std::nullopt);
  EXPECT_EQ(CpusFromCgroupV2("400000 100000\n"), 4);
  EXPECT_EQ(CpusFromCgroupV2("150000 100000"), 2);  // 1.5 CPUs: 2 threads
  EXPECT_EQ(CpusFromCgroupV2("50000 100000"), 1);
  EXPECT_EQ(CpusFromCgroupV2(""), std::nullopt);
  EXPECT_EQ(CpusFromCgroupV1("-1\n", "100000\n"), std::nullopt);
  EXPECT_EQ(CpusFromCgroupV1("200000\n", "100000\n"), 2);
  EXPECT_GE(AvailableCpus(), 1);
}

}  // namespace
}  // namespace orca

// The chat templates of common model families (testdata/*.jinja, see testdata/README.md)
// rendered over a set of conversations by orca and by Jinja2 configured as transformers
// does. Outputs must match byte for byte; a template error must be an error in both.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/chat/reference.h"

namespace orca::chat_test {
namespace {

using nlohmann::json;

json Msg(const std::string& role, const json& content) {
  return json{{"role", role}, {"content", content}};
}

json Tools() {
  return json::parse(R"json([
    {"type": "function", "function": {
      "name": "get_weather",
      "description": "Get the current weather in a city",
      "parameters": {"type": "object",
        "properties": {
          "city": {"type": "string", "description": "The city, e.g. Paris"},
          "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Unit"},
          "days": {"type": "integer", "description": "Forecast days"},
          "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags"},
          "extra": {"type": ["string", "null"], "description": "Optional"}
        },
        "required": ["city"]}}},
    {"type": "function", "function": {
      "name": "search",
      "description": "Search the web (für alle)",
      "parameters": {"type": "object",
        "properties": {"query": {"type": "string", "description": "Query"}},
        "required": ["query"]}}}
  ])json");
}

json ToolCall(const json& arguments) {
  return json{{"id", "call12345"},
              {"type", "function"},
              {"function", {{"name", "get_weather"}, {"arguments", arguments}}}};
}

struct Conversation {
  std::string name;
  json messages;
  bool add_generation_prompt = true;
  bool with_tools = false;
};

std::vector<Conversation> Conversations() {
  std::vector<Conversation> c;
  c.push_back({"user_only", json::array({Msg("user", "Hello")})});
  c.push_back({"system_user",
               json::array({Msg("system", "You are a helpful assistant."), Msg("user", "Hi!")})});
  c.push_back({"multi_turn",
               json::array({Msg("system", "You are a helpful assistant"), Msg("user", "Hello"),
                            Msg("assistant", "Hi there"), Msg("user", "Who are you")})});
  c.push_back({"no_system_ends_with_assistant",
               json::array({Msg("user", "Hello"), Msg("assistant", "Hi there"),
                            Msg("user", "Who are you"), Msg("assistant", "An assistant.")}),
               false});
  c.push_back({"non_ascii", json::array({Msg("system", "Tu es un assistant utile. 你好"),
                                         Msg("user", "Ünïcödé ✓ 👋🏽 مرحبا"),
                                         Msg("assistant", "日本語です"),
                                         Msg("user", "ß → SS? Σίσυφος\u00a0\u2028end")})});
  c.push_back(
      {"empty_content", json::array({Msg("user", ""), Msg("assistant", ""), Msg("user", "")})});
  c.push_back(
      {"padded_whitespace", json::array({Msg("system", "\n  sys  \n"), Msg("user", "  Hi  \n"),
                                         Msg("assistant", "   I am an assistant   "),
                                         Msg("user", "\tAnother question\n")})});
  c.push_back(
      {"special_characters",
       json::array({Msg("user", "{{ not_a_tag }} {% if %} <s> </s> [INST] \\n \\ \"q\" 'a'"),
                    Msg("assistant", "<|im_end|> <|eot_id|> {\"json\": [1, 2]}"),
                    Msg("user", "line1\nline2\r\nline3")})});
  c.push_back(
      {"roles_not_alternating", json::array({Msg("user", "first"), Msg("user", "second")})});
  c.push_back({"assistant_first", json::array({Msg("assistant", "I start"), Msg("user", "ok")})});
  c.push_back({"system_only", json::array({Msg("system", "Only a system prompt")})});
  c.push_back({"two_systems", json::array({Msg("system", "first system"), Msg("user", "u"),
                                           Msg("system", "second system"), Msg("user", "v")})});
  json long_chat = json::array({Msg("system", "Be brief.")});
  for (int i = 0; i < 12; ++i) {
    long_chat.push_back(Msg("user", "question " + std::to_string(i)));
    long_chat.push_back(Msg("assistant", "answer " + std::to_string(i)));
  }
  long_chat.push_back(Msg("user", "last question"));
  c.push_back({"long_chat", long_chat});
  c.push_back({"content_parts",
               json::array({Msg("user", json::array({json{{"type", "text"}, {"text", "Describe"}},
                                                     json{{"type", "image"}}}))})});
  json tool_calls = json::array(
      {Msg("system", "You can call tools."), Msg("user", "Weather in Paris?"),
       json{{"role", "assistant"},
            {"content", nullptr},
            {"tool_calls", json::array({ToolCall({{"city", "Paris"}, {"unit", "celsius"}})})}},
       json{{"role", "tool"},
            {"name", "get_weather"},
            {"tool_call_id", "call12345"},
            {"content", "{\"temperature\": 21, \"sky\": \"clear\"}"}},
       Msg("assistant", "It is 21°C and clear."), Msg("user", "Thanks")});
  c.push_back({"tool_calls_dict_arguments", tool_calls, true, true});
  json string_args = tool_calls;
  string_args[2]["tool_calls"][0]["function"]["arguments"] = "{\"city\": \"Paris\"}";
  string_args[2]["content"] = "";
  c.push_back({"tool_calls_string_arguments", string_args, true, true});
  c.push_back({"tools_defined_plain_chat", json::array({Msg("user", "What tools do you have?")}),
               true, true});
  return c;
}

json Context(const Conversation& conversation) {
  json context = {{"messages", conversation.messages},
                  {"add_generation_prompt", conversation.add_generation_prompt},
                  {"bos_token", "<s>"},
                  {"eos_token", "</s>"},
                  {"unk_token", "<unk>"},
                  {"pad_token", "<pad>"},
                  {"tools", conversation.with_tools ? Tools() : json(nullptr)},
                  // Variables firefunction-v2 expects from its caller.
                  {"functions", "[{\"name\": \"get_weather\"}]"},
                  {"datetime", "2024-07-26"}};
  return context;
}

std::vector<std::string> TemplateFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(TestPath("testdata"))) {
    if (entry.path().extension() == ".jinja") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ChatTemplateFamiliesTest, MatchJinja2OnEveryConversation) {
  const std::vector<std::string> files = TemplateFiles();
  ASSERT_GE(files.size(), 15u) << "chat templates missing under tests/engine/chat/testdata";
  const std::vector<Conversation> conversations = Conversations();
  std::vector<RenderCase> cases;
  for (const std::string& file : files) {
    const std::string source = ReadTestFile("testdata/" + file);
    for (const Conversation& conversation : conversations) {
      cases.push_back({file + " / " + conversation.name, source, Context(conversation)});
    }
  }
  const Comparison result = CompareWithJinja2(cases);
  if (!result.available) {
    if (InCi()) FAIL() << result.why;
    GTEST_SKIP() << result.why;
  }
  std::cout << "[ families ] " << files.size() << " templates x " << conversations.size()
            << " conversations: " << result.matched << "/" << cases.size() << " match Jinja2 ("
            << result.errors << " are errors in both)" << std::endl;
}

// A sanity check that the comparison is not vacuous: most renders succeed.
TEST(ChatTemplateFamiliesTest, MostConversationsRender) {
  int ok = 0;
  int total = 0;
  for (const std::string& file : TemplateFiles()) {
    const std::string source = ReadTestFile("testdata/" + file);
    for (const Conversation& conversation : Conversations()) {
      ++total;
      if (RenderWithOrca({file, source, Context(conversation)}).ok) ++ok;
    }
  }
  EXPECT_GT(ok, total / 2);
}

}  // namespace
}  // namespace orca::chat_test

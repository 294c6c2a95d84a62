// The low-level pieces of the text format: names, escaping, number spelling.
#include "engine/metrics/internal/text_format.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace orca::metrics::internal {
namespace {

TEST(TextFormatTest, ValidatesMetricNames) {
  for (const char* ok : {"a", "_x", ":x", "orca_prompt_tokens_total", "a:b_c9", "ABC"}) {
    EXPECT_TRUE(IsValidMetricName(ok)) << ok;
  }
  for (const char* bad : {"", "9a", "a-b", "a b", "a.b", "é", "a{"}) {
    EXPECT_FALSE(IsValidMetricName(bad)) << bad;
  }
}

TEST(TextFormatTest, ValidatesLabelNames) {
  for (const char* ok : {"a", "_a", "model_name", "le", "A9"}) {
    EXPECT_TRUE(IsValidLabelName(ok)) << ok;
  }
  for (const char* bad : {"", "__name__", "__x", "9a", "a:b", "a-b", "a b"}) {
    EXPECT_FALSE(IsValidLabelName(bad)) << bad;
  }
}

TEST(TextFormatTest, ValidatesUtf8) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xbc \xe6\xa8\xa1 \xf0\x9f\x9a\x80"));  // ü 模 🚀
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation byte
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
}

TEST(TextFormatTest, FormatsDoublesShortestAndRoundTrip) {
  EXPECT_EQ(FormatDouble(0), "0");
  EXPECT_EQ(FormatDouble(1), "1");
  EXPECT_EQ(FormatDouble(-2.5), "-2.5");
  EXPECT_EQ(FormatDouble(0.1), "0.1");
  EXPECT_EQ(FormatDouble(1e20), "1e+20");
  EXPECT_EQ(FormatDouble(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatDouble(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatDouble(std::nan("")), "NaN");
  for (double v : {1.0 / 3, 0.1 + 0.2, 5e-324, 1.7976931348623157e308, 123456789.123456789, -1e-300,
                   9007199254740993.0}) {
    const std::string text = FormatDouble(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;  // stod rejects subnormals
  }
}

TEST(TextFormatTest, EscapesHelpAndLabelValues) {
  std::string help;
  AppendEscapedHelp("a\\b\"c\nd", &help);
  EXPECT_EQ(help, "a\\\\b\"c\\nd");  // quotes stay as they are in HELP
  std::string value;
  AppendEscapedLabelValue("a\\b\"c\nd", &value);
  EXPECT_EQ(value, "a\\\\b\\\"c\\nd");
}

TEST(TextFormatTest, AppendsSampleLines) {
  std::string out;
  AppendSample("m", {}, nullptr, "1", &out);
  const std::string le = "+Inf";
  AppendSample("m_bucket", {{"b", "2"}, {"a", "1"}}, &le, "3", &out);
  AppendSample("m_bucket", {}, &le, "3", &out);
  EXPECT_EQ(out,
            "m 1\n"
            "m_bucket{a=\"1\",b=\"2\",le=\"+Inf\"} 3\n"
            "m_bucket{le=\"+Inf\"} 3\n");
}

}  // namespace
}  // namespace orca::metrics::internal

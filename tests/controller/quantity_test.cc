// The quantity canonicalizer against the expectations of apimachinery's own tests
// (k8s.io/apimachinery/pkg/api/resource/quantity_test.go: TestQuantityParseEmit,
// TestQuantityString's alternates, TestQuantityParse and its invalid inputs), plus
// the comparison the reconciler relies on.
#include "controller/api/quantity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/status/observe.h"

namespace orca::controller {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* in;
  const char* canonical;
};

std::string Canon(const std::string& in) {
  absl::StatusOr<std::string> c = CanonicalQuantity(in);
  return c.ok() ? *c : "error: " + std::string(c.status().message());
}

TEST(QuantityTest, ParseEmitMatchesApimachinery) {
  // TestQuantityParseEmit.
  const Case cases[] = {{"1Ki", "1Ki"},           {"1Mi", "1Mi"},
                        {"1Gi", "1Gi"},           {"1024Mi", "1Gi"},
                        {"1000M", "1G"},          {".001Ki", "1024m"},
                        {".000001Ki", "1024u"},   {".000000001Ki", "1024n"},
                        {".000000000001Ki", "2n"}};
  for (const Case& c : cases) {
    EXPECT_EQ(Canon(c.in), c.canonical) << c.in;
    EXPECT_EQ(Canon(std::string("-") + c.in), std::string("-") + c.canonical) << c.in;
  }
}

TEST(QuantityTest, AlternatesCanonicalizeAsApimachinery) {
  // TestQuantityString: each alternate parses to the canonical form.
  const Case cases[] = {{"1024Mi", "1Gi"},   {"307200Ki", "300Mi"},    {"1025024Mi", "1001Gi"},
                        {"1024Gi", "1Ti"},   {"5000m", "5"},           {"0.5", "500m"},
                        {"1000M", "1G"},     {"0.001T", "1G"},         {"1000u", "1m"},
                        {"1.08", "1080m"},   {"1080000000n", "1080m"}, {"1000E", "1e21"},
                        {"5000E", "5e21"},   {"1000000E", "1e24"},     {".001e12", "1e9"},
                        {"0.001e0", "1e-3"}, {"1000e-12", "1e-9"},     {"00", "0"}};
  for (const Case& c : cases) EXPECT_EQ(Canon(c.in), c.canonical) << c.in;
  // Canonical strings are fixed points.
  for (const char* s :
       {"1Gi",  "300Mi", "6Ki",   "5",    "500m",     "1G",    "1m",   "80m",  "1080m",
        "300M", "1T",    "1E",    "1e21", "1234567M", "3k",    "1025", "0",    "1e9",
        "1e-3", "80e-3", "300e6", "1n",   "80n",      "1080n", "1u",   "1080u"}) {
    EXPECT_EQ(Canon(s), s);
  }
}

TEST(QuantityTest, ParsedValuesRoundAndSaturateAsApimachinery) {
  // TestQuantityParse: the expected Quantity of each input, written canonically.
  const Case cases[] = {
      {"0Ki", "0"},
      {"8Ki", "8Ki"},
      {"3Ei", "3Ei"},
      {"50k", "50k"},
      {"40T", "40T"},
      {"1E-3", "1e-3"},
      {"1e14", "100e12"},
      {"100.035k", "100035"},
      {"0.0005k", "500m"},
      {"0.00500", "5m"},
      {"0.5e-1", "50e-3"},
      {"10.035M", "10035k"},
      {"1.2e3", "1200"},
      {"1.3E+6", "1300e3"},
      {"1.53E12", "1530e9"},
      {"6.987654321G", "6987654321"},
      {"1.01E", "1010P"},
      {"3.001n", "4n"},
      {"1.1E-9", "2e-9"},
      {"0.0000000001", "1n"},
      {"0.00000012345", "124n"},
      {"9Ei", "9223372036854775807"},
      {"12E", "12E"},
      {"100.035Ki", "102435840m"},
      {"0.5Mi", "512Ki"},
      {"0.05Gi", "53687091200m"},
      {"0.000000000001Ki", "2n"},
      {".0001k", "100m"},
      {"1.", "1"},
      {"1.G", "1G"},
      {"+1Gi", "1Gi"},
      {"-9.01", "-9010m"},
  };
  for (const Case& c : cases) EXPECT_EQ(Canon(c.in), c.canonical) << c.in;
}

TEST(QuantityTest, RejectsWhatApimachineryRejects) {
  for (const char* bad : {"", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i",
                          "-3.01e-", " 1", "1 ", "1K"}) {
    absl::StatusOr<std::string> c = CanonicalQuantity(std::string(bad));
    EXPECT_FALSE(c.ok()) << "\"" << bad << "\" gave " << *c;
  }
  absl::StatusOr<std::string> c = CanonicalQuantity(std::string("12GB"));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("\"12GB\""));
  EXPECT_THAT(c.status().message(), HasSubstr("unknown suffix"));
}

TEST(QuantityTest, JsonNumbersAreQuantities) {
  using nlohmann::json;
  EXPECT_EQ(*CanonicalQuantity(json(1)), "1");
  EXPECT_EQ(*CanonicalQuantity(json(2048)), "2048");
  EXPECT_TRUE(SameQuantity(json(0.5), json("500m")));
  EXPECT_TRUE(SameQuantity(json(1), json("1")));
  EXPECT_TRUE(SameQuantity(json("1"), json("1000m")));
  EXPECT_TRUE(SameQuantity(json("1Gi"), json("1024Mi")));
  EXPECT_TRUE(SameQuantity(json("0.5"), json("500m")));
  EXPECT_FALSE(SameQuantity(json("1G"), json("1Gi")));
  EXPECT_FALSE(SameQuantity(json(1), json(2)));
  EXPECT_FALSE(SameQuantity(json("x"), json("y")));
  EXPECT_FALSE(CanonicalQuantity(json::object()).ok());
}

TEST(QuantityTest, ContainsAllComparesResourceQuantitiesCanonically) {
  using nlohmann::json;
  json desired = {
      {"spec",
       {{"containers", json::array({{{"name", "worker"},
                                     {"resources",
                                      {{"limits", {{"nvidia.com/gpu", 1}, {"memory", "1024Mi"}}},
                                       {"requests", {{"cpu", 0.5}}}}}}})}}}};
  json live = {
      {"spec",
       {{"containers", json::array({{{"name", "worker"},
                                     {"image", "x"},
                                     {"resources",
                                      {{"limits", {{"nvidia.com/gpu", "1"}, {"memory", "1Gi"}}},
                                       {"requests", {{"cpu", "500m"}}}}}}})}}}};
  EXPECT_TRUE(ContainsAll(live, desired));
  live["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "2";
  EXPECT_FALSE(ContainsAll(live, desired));
  // Outside resources, "1" and 1 still differ (ports, replicas are not quantities).
  EXPECT_FALSE(ContainsAll(json{{"replicas", "1"}}, json{{"replicas", 1}}));
}

}  // namespace
}  // namespace orca::controller

// TraceWriter: the file is one JSON array in the Chrome Trace Event Format (parsed here
// by nlohmann-json), names with quotes and control characters stay valid JSON, the
// event cap ends the trace with a marker, a file cut short (no closing bracket) still
// holds whole events, and an unwritable path is an error naming it.
#include "engine/common/trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/testutil/testutil.h"

namespace orca {
namespace {

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

TEST(TraceWriterTest, WritesCompleteEventsOnNamedTracks) {
  orca::testing::TempDir tmp;
  const std::string path = tmp.file("trace.json");
  {
    auto w = TraceWriter::Open(path);
    ASSERT_TRUE(w.ok()) << w.status();
    (*w)->NameTrack(TraceWriter::kSchedulerTrack, "scheduler");
    (*w)->NameTrack(TraceWriter::RankTrack(3), "rank \"3\"\n\\ (stage 1)");
    (*w)->NameTrack(TraceWriter::RankTrack(3), "ignored: named already");
    (*w)->Span(TraceWriter::kSchedulerTrack, TraceSpan{"schedule", 1000, 5}, 7);
    (*w)->Spans(TraceWriter::RankTrack(3), {{"layers", 1010, 40}, {"all-reduce", 1020, 3}}, 7);
    (*w)->Span(TraceWriter::RankTrack(3), TraceSpan{"no iteration", 2000, 1});
    (*w)->Span(TraceWriter::kSchedulerTrack, TraceSpan{"shaped", 3000, 2}, 8,
               {{"decodes", 3}, {"prompt_tokens", 512}});
    (*w)->Span(TraceWriter::kSchedulerTrack, TraceSpan{"args only", 4000, 2}, -1,
               {{"sequences", 0}});
    EXPECT_EQ((*w)->events_written(), 6);
  }
  const nlohmann::json events = ReadJson(path);
  ASSERT_TRUE(events.is_array());
  int names = 0, spans = 0;
  for (const auto& e : events) {
    if (e["name"] == "process_name") {
      ++names;
      if (e["pid"] == 103) {
        EXPECT_EQ(e["args"]["name"], "rank \"3\" \\ (stage 1)");
      }
    }
    if (e["ph"] == "X") {
      ++spans;
      EXPECT_EQ(e["tid"], 0);
      if (e["name"] == "layers") {
        EXPECT_EQ(e["pid"], 103);
        EXPECT_EQ(e["ts"], 1010);
        EXPECT_EQ(e["dur"], 40);
        EXPECT_EQ(e["args"]["iteration"], 7);
      }
      if (e["name"] == "no iteration") {
        EXPECT_FALSE(e.contains("args"));
      }
      if (e["name"] == "shaped") {
        EXPECT_EQ(e["args"],
                  nlohmann::json::parse(R"({"iteration": 8, "decodes": 3, "prompt_tokens": 512})"));
      }
      if (e["name"] == "args only") {
        EXPECT_EQ(e["args"], nlohmann::json::parse(R"({"sequences": 0})"));
      }
    }
  }
  EXPECT_EQ(names, 2);
  EXPECT_EQ(spans, 6);
}

TEST(TraceWriterTest, StopsAtTheEventCapWithAMarker) {
  orca::testing::TempDir tmp;
  const std::string path = tmp.file("trace.json");
  {
    auto w = TraceWriter::Open(path, /*max_events=*/3);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 10; ++i) (*w)->Span(1, TraceSpan{"step", i, 1}, i);
    EXPECT_EQ((*w)->events_written(), 3);
  }
  const nlohmann::json events = ReadJson(path);
  int spans = 0, markers = 0;
  for (const auto& e : events) {
    spans += e["ph"] == "X";
    markers += e["ph"] == "i";
  }
  EXPECT_EQ(spans, 3);
  EXPECT_EQ(markers, 1);
}

TEST(TraceWriterTest, AFileCutShortHoldsWholeEvents) {
  orca::testing::TempDir tmp;
  const std::string path = tmp.file("trace.json");
  auto w = TraceWriter::Open(path);
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 5000; ++i) (*w)->Span(1, TraceSpan{std::string(200, 'x'), i, 1}, i);
  // Not destroyed: the array is open, as after a crash; 256 KiB batches were written.
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  ASSERT_GE(text.size(), 2u);
  ASSERT_EQ(text.substr(text.size() - 2), ",\n");
  // What a viewer does with a cut-short array: drop the last comma and close it.
  const nlohmann::json events = nlohmann::json::parse(text.substr(0, text.size() - 2) + "]");
  EXPECT_GE(events.size(), 1000u);
}

TEST(TraceWriterTest, AnUnwritablePathIsAnErrorNamingIt) {
  auto w = TraceWriter::Open("/nonexistent-dir/trace.json");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("/nonexistent-dir/trace.json"), std::string::npos);
}

}  // namespace
}  // namespace orca

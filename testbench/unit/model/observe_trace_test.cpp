// The Chrome trace-event writer: parseable JSON with the given events, valid when empty,
// streamed, and byte-identical for the same events.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "observe/trace_writer.hpp"

namespace spyre_dma::model {
namespace {

using nlohmann::json;

std::string temp(const std::string& name) { return testing::TempDir() + name; }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_sample(TraceWriter& w) {
  const int link = w.process("link");
  const TraceTrack up = w.thread(link, "up");
  const TraceTrack down = w.thread(link, "down");
  w.complete("MWr", "tlp", 1234.5, 16.25, up, {{"bytes", 512}, {"addr", "0x1000"}});
  w.complete("CplD", "tlp", 2000.0, 8.0, down);
  w.instant("doorbell", "host", 100.0, up, {{"pipeline", "dmai"}});
  w.counter("credits", 1500.0, link, {{"posted_header", 127}, {"posted_data", 1000}});
  w.complete("negative", "", 3000.0, -5.0, up);
}

TEST(ObserveTrace, EmptyTraceIsValidJson) {
  const std::string path = temp("empty_trace.json");
  { TraceWriter w(path); }
  const json j = json::parse(read(path));
  ASSERT_TRUE(j.contains("traceEvents"));
  EXPECT_TRUE(j["traceEvents"].is_array());
  EXPECT_TRUE(j["traceEvents"].empty());
  EXPECT_EQ(j["displayTimeUnit"], "ns");
  EXPECT_FALSE(j.contains("otherData"));
}

TEST(ObserveTrace, EventsComeBackAsGiven) {
  const std::string path = temp("sample_trace.json");
  TraceWriter w(path, {{"preset", "spyre-gen5x16"}});
  write_sample(w);
  EXPECT_EQ(w.event_count(), 11u);  // 2 metadata per process and per thread, plus 5 events
  w.close();
  EXPECT_FALSE(w.is_open());
  w.complete("after", "x", 0.0, 1.0, {1, 1});  // ignored
  w.close();                                   // idempotent

  const json j = json::parse(read(path));
  EXPECT_EQ(j["otherData"]["preset"], "spyre-gen5x16");
  const json& ev = j["traceEvents"];
  ASSERT_EQ(ev.size(), 11u);  // 2 for the process, 2 per thread, 5 events

  EXPECT_EQ(ev[0],
            json::parse(R"({"name":"process_name","ph":"M","pid":1,"args":{"name":"link"}})"));
  EXPECT_EQ(
      ev[1],
      json::parse(R"({"name":"process_sort_index","ph":"M","pid":1,"args":{"sort_index":1}})"));
  EXPECT_EQ(ev[2],
            json::parse(R"({"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"up"}})"));
  EXPECT_EQ(ev[4]["args"]["name"], "down");
  EXPECT_EQ(ev[4]["tid"], 2);

  const json& mwr = ev[6];
  EXPECT_EQ(mwr["name"], "MWr");
  EXPECT_EQ(mwr["cat"], "tlp");
  EXPECT_EQ(mwr["ph"], "X");
  EXPECT_DOUBLE_EQ(mwr["ts"].get<double>(), 1.2345);  // microseconds
  EXPECT_DOUBLE_EQ(mwr["dur"].get<double>(), 0.01625);
  EXPECT_EQ(mwr["pid"], 1);
  EXPECT_EQ(mwr["tid"], 1);
  EXPECT_EQ(mwr["args"], json({{"bytes", 512}, {"addr", "0x1000"}}));

  EXPECT_FALSE(ev[7].contains("args"));
  EXPECT_EQ(ev[7]["tid"], 2);
  EXPECT_EQ(ev[8]["ph"], "i");
  EXPECT_EQ(ev[8]["s"], "t");
  EXPECT_DOUBLE_EQ(ev[8]["ts"].get<double>(), 0.1);
  EXPECT_EQ(ev[9]["ph"], "C");
  EXPECT_FALSE(ev[9].contains("tid"));
  EXPECT_EQ(ev[9]["args"]["posted_header"], 127);
  EXPECT_EQ(ev[10]["dur"], 0);
  EXPECT_FALSE(ev[10].contains("cat"));
}

TEST(ObserveTrace, SameEventsSameBytes) {
  const std::string a = temp("det_a.json");
  const std::string b = temp("det_b.json");
  {
    TraceWriter w(a);
    write_sample(w);
  }
  {
    TraceWriter w(b);
    write_sample(w);
  }
  EXPECT_EQ(read(a), read(b));
  // Times keep ps resolution and no float noise.
  EXPECT_NE(read(a).find("\"ts\":1.2345,"), std::string::npos) << read(a);
}

TEST(ObserveTrace, StreamsToTheFileBeforeClose) {
  const std::string path = temp("streamed_trace.json");
  std::filesystem::remove(path);  // a file left by an earlier run must not stand in for this one
  TraceWriter w(path);
  const TraceTrack t = w.thread(w.process("p"), "t");
  for (int i = 0; i < 20000; ++i) w.complete("e", "c", i * 10.0, 5.0, t, {{"i", i}});
  // Written as it went, not at close: under its partial name until then.
  EXPECT_GT(std::filesystem::file_size(path + ".partial"), 100000u);
  w.close();
  EXPECT_EQ(json::parse(read(path))["traceEvents"].size(), 20004u);
}

TEST(ObserveTrace, EscapesNames) {
  const std::string path = temp("escape_trace.json");
  {
    TraceWriter w(path);
    w.complete("quote\" back\\slash\nnewline", "c", 0.0, 1.0, {1, 1}, {{"k", "\xff"}});
  }
  const json j = json::parse(read(path));
  EXPECT_EQ(j["traceEvents"][0]["name"], "quote\" back\\slash\nnewline");
}

// The trace takes its name only when it is whole: until close() it is PATH.partial.
TEST(ObserveTrace, TheFileTakesItsNameWhenClosed) {
  const std::string path = temp("whole.json");
  std::filesystem::remove(path);
  {
    TraceWriter w(path);
    w.instant("x", "test", 1.0, w.thread(w.process("p"), "t"));
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(std::filesystem::exists(path + ".partial"));
    w.close();
    EXPECT_TRUE(std::filesystem::exists(path));
    EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  }
  std::ifstream in(path);
  const nlohmann::json events = nlohmann::json::parse(in)["traceEvents"];
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["name"], "x");  // after the track's names: the instant
}

TEST(ObserveTrace, UnwritablePathThrows) {
  EXPECT_THROW(TraceWriter(temp("no-such-dir/trace.json")), TraceError);
}

}  // namespace
}  // namespace spyre_dma::model

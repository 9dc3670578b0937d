// `idem sim` end to end: the real binary (IDEM_BINARY). Checks the output contracts that
// outside programs read (JSON, CSV, SVG, the amplify table) and that bad flags exit 2 naming
// the flag. Only the contract test runs the full 50-run study; the rest use few runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "idem_process.h"

namespace idem::testing {
namespace {

namespace json = boost::json;

const std::set<std::string> kStrategies = {"none", "exponential", "full", "equal", "decorrelated"};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

// Parses JSON text without letting Boost.JSON throw; a parse error fails the test.
json::value Parse(const std::string& text) {
  boost::system::error_code error;
  json::value value = json::parse(text, error);
  EXPECT_FALSE(error) << error.message() << "\n" << text;
  return value;
}

TEST(SimBackoffCli, JsonContractIsAnArrayOfFifteenRowsWithTheFourFields) {
  CallRun r = Idem({"sim", "backoff", "--clients", "10,50,100", "--runs", "50", "--seed", "1",
                    "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::value value = Parse(r.out);
  ASSERT_TRUE(value.is_array()) << r.out;
  const json::array& rows = value.as_array();
  ASSERT_EQ(rows.size(), 15u);
  std::set<std::pair<std::string, std::int64_t>> seen;
  for (const json::value& row : rows) {
    ASSERT_TRUE(row.is_object()) << json::serialize(row);
    const json::object& obj = row.as_object();
    EXPECT_EQ(obj.size(), 4u) << json::serialize(row);
    ASSERT_TRUE(obj.contains("strategy") && obj.at("strategy").is_string());
    ASSERT_TRUE(obj.contains("clients") && obj.at("clients").is_int64());
    ASSERT_TRUE(obj.contains("writes") && obj.at("writes").is_number());
    ASSERT_TRUE(obj.contains("time_ms") && obj.at("time_ms").is_number());
    const std::string strategy(obj.at("strategy").as_string());
    EXPECT_TRUE(kStrategies.count(strategy)) << strategy;
    // Every client writes at least once, and contention only adds writes.
    const std::int64_t clients = obj.at("clients").as_int64();
    EXPECT_GE(obj.at("writes").to_number<double>(), static_cast<double>(clients));
    EXPECT_GT(obj.at("time_ms").to_number<double>(), 0.0);
    seen.emplace(strategy, clients);
  }
  for (const std::string& strategy : kStrategies) {
    for (std::int64_t clients : {10, 50, 100}) {
      EXPECT_TRUE(seen.count({strategy, clients})) << strategy << " " << clients;
    }
  }
}

TEST(SimBackoffCli, SameSeedGivesTheSameJson) {
  const std::vector<std::string> args = {"sim", "backoff", "--clients", "5,10",     "--runs",
                                         "3",   "--seed",  "7",         "--format", "json"};
  CallRun first = Idem(args);
  CallRun second = Idem(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, second.out);
}

TEST(SimBackoffCli, CsvHasAHeaderAndOneLinePerStrategyAndClientCount) {
  CallRun r = Idem({"sim", "backoff", "--clients", "10,50,100", "--runs", "2", "--format", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 16u) << r.out;
  EXPECT_EQ(lines[0], "strategy,clients,writes,time_ms");
  std::set<std::string> strategies;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(Count(lines[i], ","), 3u) << lines[i];
    strategies.insert(lines[i].substr(0, lines[i].find(',')));
  }
  EXPECT_EQ(strategies, kStrategies);
}

class SvgFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/sim_cli_test_XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = path;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string Read() const {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string path_;
};

TEST_F(SvgFile, SvgOptionWritesAChartWithALinePerStrategyBesidesTheTable) {
  CallRun r = Idem({"sim", "backoff", "--clients", "10,20", "--runs", "2", "--svg", path_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());  // the table still goes to stdout
  const std::string svg = Read();
  const bool opens_svg = svg.rfind("<svg", 0) == 0 ||
                         (svg.rfind("<?xml", 0) == 0 && svg.find("<svg") != std::string::npos);
  EXPECT_TRUE(opens_svg) << svg.substr(0, 200);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // Two panels (work and time), each with one line per strategy.
  EXPECT_GE(Count(svg, "<polyline") + Count(svg, "<path"), 2 * kStrategies.size());
  for (const std::string& strategy : kStrategies) {
    EXPECT_NE(svg.find(strategy), std::string::npos) << "legend lacks " << strategy;
  }
}

TEST(SimBackoffCli, UnwritableSvgPathExits1) {
  CallRun r = Idem(
      {"sim", "backoff", "--clients", "2", "--runs", "1", "--svg", "/nonexistent-dir/chart.svg"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent-dir/chart.svg"), std::string::npos) << r.err;
}

TEST(SimAmplifyCli, FourLayersOfThreeAttemptsSend81CallsUncontained) {
  CallRun r = Idem({"sim", "amplify", "--layers", "4", "--attempts", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string none_line;
  for (const std::string& line : Lines(r.out)) {
    if (line.find("none") != std::string::npos) none_line = line;
  }
  ASSERT_FALSE(none_line.empty()) << r.out;
  EXPECT_NE(none_line.find("81"), std::string::npos) << none_line;
}

TEST(SimAmplifyCli, JsonGivesOneRowPerContainment) {
  CallRun r = Idem({"sim", "amplify", "--layers", "4", "--attempts", "3", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::value value = Parse(r.out);
  ASSERT_TRUE(value.is_array()) << r.out;
  const json::array& rows = value.as_array();
  ASSERT_EQ(rows.size(), 3u);
  const char* names[] = {"none", "budget", "one-layer"};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(rows[i].is_object());
    const json::object& obj = rows[i].as_object();
    ASSERT_TRUE(obj.contains("containment") && obj.at("containment").is_string());
    EXPECT_EQ(obj.at("containment").as_string(), names[i]);
    ASSERT_TRUE(obj.contains("bottom_calls") && obj.at("bottom_calls").is_number());
  }
  EXPECT_EQ(rows[0].at("bottom_calls").to_number<double>(), 81.0);
  EXPECT_EQ(rows[2].at("bottom_calls").to_number<double>(), 3.0);
  EXPECT_LT(rows[1].at("bottom_calls").to_number<double>(), 3.0);
}

struct BadFlag {
  std::string name;  // the test's name suffix
  std::vector<std::string> args;
  std::string flag;  // the flag stderr must name
};

// Lets GoogleTest show the case by its name rather than as raw bytes.
void PrintTo(const BadFlag& bad, std::ostream* out) { *out << bad.name; }

class SimBadFlag : public ::testing::TestWithParam<BadFlag> {};

TEST_P(SimBadFlag, ExitsTwoNamingTheFlag) {
  CallRun r = Idem(GetParam().args);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(GetParam().flag), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

std::vector<std::string> Backoff(std::vector<std::string> tail) {
  std::vector<std::string> args = {"sim", "backoff", "--runs", "1", "--clients", "2"};
  args.insert(args.end(), tail.begin(), tail.end());
  return args;
}

INSTANTIATE_TEST_SUITE_P(
    Rejected, SimBadFlag,
    ::testing::Values(
        BadFlag{"ZeroClients", Backoff({"--clients", "0"}), "--clients"},
        BadFlag{"LetterClients", Backoff({"--clients", "a,b"}), "--clients"},
        BadFlag{"EmptyClientItem", Backoff({"--clients", "10,,50"}), "--clients"},
        BadFlag{"NegativeRuns", Backoff({"--runs", "-1"}), "--runs"},
        BadFlag{"ZeroRuns", Backoff({"--runs", "0"}), "--runs"},
        BadFlag{"UnknownFormat", Backoff({"--format", "xml"}), "--format"},
        BadFlag{"UnknownStrategy", Backoff({"--strategies", "none,linear"}), "--strategies"},
        BadFlag{"NegativeSeed", Backoff({"--seed", "-3"}), "--seed"},
        BadFlag{"ZeroLayers", {"sim", "amplify", "--layers", "0"}, "--layers"},
        BadFlag{"ElevenAttempts", {"sim", "amplify", "--attempts", "11"}, "--attempts"},
        BadFlag{"AmplifyCsv", {"sim", "amplify", "--format", "csv"}, "--format"}),
    [](const ::testing::TestParamInfo<BadFlag>& tested) { return tested.param.name; });

}  // namespace
}  // namespace idem::testing

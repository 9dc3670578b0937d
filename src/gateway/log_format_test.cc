#include "gateway/log_format.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <chrono>

#include "idem/fingerprint.h"

namespace idem::gateway {
namespace {

class LogFormatTest : public ::testing::Test {
 protected:
  void TearDown() override { SetLogFormat(LogFormat::kText); }
};

TEST_F(LogFormatTest, TextNamesTheKeyAndJsonOnlyItsHash) {
  EXPECT_EQ(LoggedKey("order-17"), "'order-17'");
  SetLogFormat(LogFormat::kJson);
  EXPECT_EQ(LoggedKey("order-17"), "sha256:" + Sha256Hex("order-17").substr(0, 16));
}

TEST_F(LogFormatTest, TextRequestLineIsUnchanged) {
  EXPECT_EQ(RequestLogLine({.request_id = "r1",
                            .method = "POST",
                            .target = "/charges",
                            .route = "/",
                            .decision = "executed",
                            .status = 201,
                            .milliseconds = 3.25,
                            .key = "order-17"}),
            "r1 POST /charges -> 201 executed in 3.2 ms");
}

TEST_F(LogFormatTest, JsonRequestLineIsOneObjectWithEveryFieldAndNoKey) {
  SetLogFormat(LogFormat::kJson);
  const std::string payload = RequestLogLine({.request_id = "r\"1",
                                              .method = "POST",
                                              .target = "/charges?a=\"b\"",
                                              .route = "/",
                                              .decision = "replayed",
                                              .status = 201,
                                              .milliseconds = 1.5,
                                              .key = "order-17"});
  std::string line;
  AppendJsonLogLine(std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000000123)),
                    "debug", payload, line);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(line.find("order-17"), std::string::npos) << line;
  const boost::json::object o = boost::json::parse(line).as_object();
  EXPECT_EQ(o.at("time").as_string(), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(o.at("level").as_string(), "debug");
  EXPECT_EQ(o.at("message").as_string(), "POST /charges?a=\"b\" -> 201 replayed");
  EXPECT_EQ(o.at("request_id").as_string(), "r\"1");
  EXPECT_EQ(o.at("route").as_string(), "/");
  EXPECT_EQ(o.at("decision").as_string(), "replayed");
  EXPECT_EQ(o.at("status").as_int64(), 201);
  EXPECT_DOUBLE_EQ(o.at("duration_ms").as_double(), 1.5);
  EXPECT_EQ(o.at("key_sha256").as_string(), Sha256Hex("order-17").substr(0, 16));
}

TEST_F(LogFormatTest, JsonLineOfPlainTextEscapesIt) {
  std::string line;
  AppendJsonLogLine(std::chrono::system_clock::time_point(), "warning", "a \"quoted\"\nline\x01",
                    line);
  const boost::json::object o = boost::json::parse(line).as_object();
  EXPECT_EQ(o.at("time").as_string(), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(o.at("message").as_string(), "a \"quoted\"\nline\x01");
  EXPECT_EQ(line.find('\n'), line.size() - 1);
}

TEST_F(LogFormatTest, JsonRequestLineWithoutRouteOrKeySaysNull) {
  SetLogFormat(LogFormat::kJson);
  std::string line;
  AppendJsonLogLine({}, "debug",
                    RequestLogLine({.request_id = "r",
                                    .method = "GET",
                                    .target = "/",
                                    .decision = "pass_through",
                                    .status = 200}),
                    line);
  const boost::json::object o = boost::json::parse(line).as_object();
  EXPECT_TRUE(o.at("route").is_null());
  EXPECT_FALSE(o.contains("key_sha256"));
}

}  // namespace
}  // namespace idem::gateway

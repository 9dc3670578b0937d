#include "gateway/problem_json.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <set>
#include <string>

namespace idem::gateway {
namespace {

int StatusOf(absl::Status s, Origin o) { return ProblemFor(s, o).status; }

TEST(ProblemFor, OneTableMapsCodesByOrigin) {
  EXPECT_EQ(StatusOf(absl::InvalidArgumentError("x"), Origin::kRequest), 400);
  EXPECT_EQ(StatusOf(absl::ResourceExhaustedError("x"), Origin::kRequest), 413);
  EXPECT_EQ(StatusOf(absl::DeadlineExceededError("x"), Origin::kRequest), 408);
  EXPECT_EQ(StatusOf(absl::FailedPreconditionError("x"), Origin::kStore), 422);
  EXPECT_EQ(StatusOf(absl::AbortedError("x"), Origin::kStore), 409);
  EXPECT_EQ(StatusOf(absl::UnavailableError("x"), Origin::kStore), 503);
  EXPECT_EQ(StatusOf(absl::UnavailableError("x"), Origin::kUpstream), 502);
  EXPECT_EQ(StatusOf(absl::DeadlineExceededError("x"), Origin::kUpstream), 504);
  EXPECT_EQ(StatusOf(absl::DataLossError("x"), Origin::kUpstream), 502);
  EXPECT_EQ(StatusOf(absl::InternalError("secret"), Origin::kUpstream), 500);
}

// A store that is read-only, corrupt or fails unexpectedly fails closed like one that is down.
TEST(ProblemFor, EveryOtherStoreFailureIs503WithRetryAfter) {
  for (const absl::Status& s : {absl::PermissionDeniedError("x"), absl::DataLossError("x"),
                                absl::InternalError("x"), absl::UnknownError("x")}) {
    const Problem p = ProblemFor(s, Origin::kStore);
    EXPECT_EQ(p.status, 503) << s;
    EXPECT_EQ(p.type, "https://idem.dev/problems/store-unavailable") << s;
    EXPECT_EQ(p.retry_after_seconds, 1) << s;
  }
}

TEST(ProblemFor, StoreDownCarriesRetryAfter) {
  EXPECT_EQ(ProblemFor(absl::UnavailableError("x"), Origin::kStore).retry_after_seconds, 1);
  EXPECT_FALSE(
      ProblemFor(absl::UnavailableError("x"), Origin::kUpstream).retry_after_seconds.has_value());
}

TEST(ProblemFor, InternalDetailIsNotLeaked) {
  EXPECT_EQ(ProblemFor(absl::InternalError("pg password"), Origin::kStore).detail.find("pg"),
            std::string::npos);
  EXPECT_EQ(ProblemFor(absl::InternalError("pg password"), Origin::kUpstream).detail.find("pg"),
            std::string::npos);
}

TEST(ProblemBody, IsJsonWithTheFourMembers) {
  Problem p = ProblemFor(absl::InvalidArgumentError("say \"why\""), Origin::kRequest);
  boost::json::value v = boost::json::parse(ProblemBody(p));
  EXPECT_EQ(v.at("status").as_int64(), 400);
  EXPECT_EQ(v.at("detail").as_string(), "say \"why\"");
  EXPECT_EQ(v.at("type").as_string(), "https://idem.dev/problems/invalid-request");
  EXPECT_EQ(v.at("title").as_string(), "Invalid request");
}

// The type URIs are identifiers that clients compare as strings (docs/gateway.md, "Problem
// documents"): a contract, never renamed. Every type the one table can answer is listed here;
// outcome-not-recorded and upstream-answer-not-kept come from guard_outcome.cc.
TEST(ProblemJson, TypeUrisAreTheDocumentedContract) {
  std::set<std::string> types;
  for (Origin origin : {Origin::kRequest, Origin::kStore, Origin::kUpstream}) {
    for (int code = 1; code <= 16; ++code) {
      types.insert(ProblemFor(absl::Status(static_cast<absl::StatusCode>(code), "x"), origin).type);
    }
  }
  const std::string base = "https://idem.dev/problems/";
  EXPECT_EQ(kProblemTypeBase, base);
  const std::set<std::string> documented = {base + "invalid-request",
                                            base + "request-timeout",
                                            base + "key-in-flight",
                                            base + "body-too-large",
                                            base + "key-reused",
                                            base + "upstream-unreachable",
                                            base + "upstream-bad-response",
                                            base + "store-unavailable",
                                            base + "upstream-timeout",
                                            base + "transfer-coding-unsupported",
                                            base + "internal"};
  EXPECT_EQ(types, documented);
}

}  // namespace
}  // namespace idem::gateway

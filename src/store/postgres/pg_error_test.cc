#include "store/postgres/pg_error.h"

#include <gtest/gtest.h>

namespace idem::postgres {
namespace {

absl::StatusCode CodeOf(std::string_view sqlstate) {
  return StatusFromSqlState(sqlstate, "message", "test").code();
}

TEST(PgError, UniqueViolationIsAlreadyExists) {
  EXPECT_EQ(CodeOf("23505"), absl::StatusCode::kAlreadyExists);
}

TEST(PgError, RetryableConflictsAndTimeoutsAreUnavailable) {
  for (std::string_view state :
       {"40001", "40P01", "55P03", "57014", "08006", "08001", "57P01", "57P03", "53300"}) {
    EXPECT_EQ(CodeOf(state), absl::StatusCode::kUnavailable) << state;
  }
}

TEST(PgError, RejectedSqlIsInvalidArgument) {
  for (std::string_view state : {"42601", "42P01", "42703", "22P02", "23502", "23503"}) {
    EXPECT_EQ(CodeOf(state), absl::StatusCode::kInvalidArgument) << state;
  }
}

TEST(PgError, AuthenticationAndPrivilegeFailuresAreNamed) {
  EXPECT_EQ(CodeOf("28P01"), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(CodeOf("28000"), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CodeOf("42501"), absl::StatusCode::kPermissionDenied);
}

TEST(PgError, UnknownDatabaseIsNotFound) {
  EXPECT_EQ(CodeOf("3D000"), absl::StatusCode::kNotFound);
}

TEST(PgError, UnlistedStateIsInternal) { EXPECT_EQ(CodeOf("XX000"), absl::StatusCode::kInternal); }

TEST(PgError, MessageNamesOperationAndSqlState) {
  absl::Status status = StatusFromSqlState("40P01", "deadlock detected\n", "claim of key 'k'");
  EXPECT_NE(status.message().find("claim of key 'k'"), absl::string_view::npos);
  EXPECT_NE(status.message().find("deadlock detected (SQLSTATE 40P01)"), absl::string_view::npos);
}

TEST(PgError, ConnectionLossStatesAreRecognised) {
  EXPECT_TRUE(IsConnectionLoss("08006"));
  EXPECT_TRUE(IsConnectionLoss("57P01"));
  EXPECT_FALSE(IsConnectionLoss("40001"));
}

TEST(PgError, ConnectFailuresAreClassifiedFromTheServersMessage) {
  EXPECT_EQ(
      StatusFromConnectFailure("FATAL:  password authentication failed for user \"u\"", "u@h:1/d")
          .code(),
      absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(StatusFromConnectFailure("FATAL:  role \"nobody\" does not exist", "t").code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusFromConnectFailure("FATAL:  database \"nope\" does not exist", "t").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(StatusFromConnectFailure("connection refused", "t").code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(
      StatusFromConnectFailure("invalid integer value \"x\" for connection option \"port\"", "t")
          .code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::postgres

#include "store/postgres/pg_uri.h"

#include <gtest/gtest.h>

namespace idem::postgres {
namespace {

TEST(PgUri, TargetNamesUserHostPortAndDatabase) {
  absl::StatusOr<ParsedConninfo> parsed =
      ParseConninfo("postgresql://app:secret@db.local:6543/idem");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->target, "app@db.local:6543/idem");
}

TEST(PgUri, KeyValueConninfoIsAccepted) {
  absl::StatusOr<ParsedConninfo> parsed = ParseConninfo("host=127.0.0.1 port=5433 dbname=x user=y");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->target, "y@127.0.0.1:5433/x");
}

TEST(PgUri, MalformedUriIsInvalidArgumentWithoutPassword) {
  absl::StatusOr<ParsedConninfo> parsed = ParseConninfo("postgresql://u:hunter2@h/db?nonsense=1");
  ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("nonsense"), absl::string_view::npos);
  EXPECT_EQ(parsed.status().message().find("hunter2"), absl::string_view::npos);
}

TEST(PgUri, EmptyUriIsInvalidArgument) {
  EXPECT_EQ(ParseConninfo("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PgUri, RedactPasswordHidesUriAndKeywordPasswords) {
  EXPECT_EQ(RedactPassword("postgresql://u:pw@h:1/d"), "postgresql://u:***@h:1/d");
  EXPECT_EQ(RedactPassword("host=h password=pw user=u"), "host=h password=*** user=u");
  EXPECT_EQ(RedactPassword("postgresql://u@h/d?password=pw&x=1"),
            "postgresql://u@h/d?password=***&x=1");
}

}  // namespace
}  // namespace idem::postgres

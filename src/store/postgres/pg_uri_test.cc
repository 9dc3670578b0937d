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

TEST(PgUri, RedactPasswordHidesAllOfAQuotedPassword) {
  EXPECT_EQ(RedactPassword("host=h password='se cret' bogus=1"), "host=h password=*** bogus=1");
  EXPECT_EQ(RedactPassword("host=h PASSWORD = 'a\\'b' user=u"), "host=h PASSWORD = *** user=u");
  EXPECT_EQ(RedactPassword("postgresql://u@h/d?sslpassword=k"),
            "postgresql://u@h/d?sslpassword=***");
}

// libpq quotes the offending word of a malformed conninfo in its message: a word of the password
// must not come back that way.
TEST(PgUri, MalformedKeywordStringWithAPasswordIsInvalidArgumentWithoutAnyOfIt) {
  for (const char* conninfo : {"host=h password=se cret", "host=h password='se cret' bogus=1",
                               "host=h password='se cret", "host=h password=se cret=1"}) {
    absl::StatusOr<ParsedConninfo> parsed = ParseConninfo(conninfo);
    ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << conninfo;
    const std::string message(parsed.status().message());
    EXPECT_EQ(message.find("cret"), std::string::npos) << conninfo << " -> " << message;
  }
}

}  // namespace
}  // namespace idem::postgres

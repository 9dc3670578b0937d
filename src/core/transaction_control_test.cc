#include "core/transaction_control.h"

#include <gtest/gtest.h>

namespace idem {
namespace {

TEST(IsTransactionControl, StatementsThatEndOrBeginATransactionAreRecognised) {
  for (const char* sql :
       {"COMMIT", "commit", "END", "end transaction", "BEGIN", "begin immediate",
        "START TRANSACTION", "ROLLBACK", "rollback work", "ABORT", "PREPARE TRANSACTION 'x'"}) {
    EXPECT_TRUE(IsTransactionControl(sql)) << sql;
  }
}

TEST(IsTransactionControl, CommentsWhitespaceAndEmptyStatementsBeforeTheKeywordAreSkipped) {
  for (const char* sql :
       {"/* note */ COMMIT", "  \n\t-- why\nCOMMIT", "/* a /* nested */ comment */ END",
        ";; COMMIT", "/**/BEGIN", "-- one\n-- two\n  rollback", "ROLLBACK /* x */ ;"}) {
    EXPECT_TRUE(IsTransactionControl(sql)) << sql;
  }
}

TEST(IsTransactionControl, TheStoresOwnSavepointsAreProtected) {
  for (const char* sql :
       {"RELEASE idem_effect", "release savepoint IDEM_CALL", "ROLLBACK TO idem_effect",
        "rollback transaction to savepoint \"idem_call\"", "SAVEPOINT idem_effect",
        "ROLLBACK /* c */ TO /* c */ SAVEPOINT idem_call"}) {
    EXPECT_TRUE(IsTransactionControl(sql)) << sql;
  }
}

TEST(IsTransactionControl, OrdinaryStatementsAndTheEffectsOwnSavepointsPass) {
  for (const char* sql :
       {"SELECT 1", "INSERT INTO commits VALUES (1)", "/* COMMIT */ SELECT 1",
        "-- COMMIT\nUPDATE t SET end_ms = 1", "SAVEPOINT mine", "ROLLBACK TO mine",
        "RELEASE SAVEPOINT mine", "PREPARE q AS SELECT 1", "WITH x AS (SELECT 1) SELECT * FROM x",
        "", "   ", "endless_table_scan()", "COMMITS"}) {
    EXPECT_FALSE(IsTransactionControl(sql)) << sql;
  }
}

TEST(IsRollbackToSavepoint, RecognisesARollbackToAnySavepointOnly) {
  for (const char* sql :
       {"ROLLBACK TO mine", "rollback to savepoint mine", "/* undo */ ROLLBACK TO SAVEPOINT mine",
        "ROLLBACK TRANSACTION TO \"x\"", "rollback work to savepoint idem_effect"}) {
    EXPECT_TRUE(IsRollbackToSavepoint(sql)) << sql;
  }
  for (const char* sql :
       {"ROLLBACK", "rollback work", "ROLLBACK TO", "SAVEPOINT mine", "RELEASE mine",
        "SELECT 'ROLLBACK TO mine'", "-- ROLLBACK TO mine\nSELECT 1", ""}) {
    EXPECT_FALSE(IsRollbackToSavepoint(sql)) << sql;
  }
}

TEST(ParseSavepointStatement, ReadsTheVerbAndTheNameOfEveryForm) {
  using Verb = SavepointStatement::Verb;
  const struct {
    std::string_view sql;
    Verb verb;
    std::string_view name;
  } cases[] = {
      {"SAVEPOINT a", Verb::kSavepoint, "A"},
      {" /* x */ release savepoint Mine", Verb::kRelease, "MINE"},
      {"RELEASE b", Verb::kRelease, "B"},
      {"rollback to a", Verb::kRollbackTo, "A"},
      {"ROLLBACK WORK TO SAVEPOINT \"q\"", Verb::kRollbackTo, "Q"},
      {"-- c\nSavepoint idem_call", Verb::kSavepoint, "IDEM_CALL"},
  };
  for (const auto& c : cases) {
    const SavepointStatement got = ParseSavepointStatement(c.sql);
    EXPECT_EQ(got.verb, c.verb) << c.sql;
    EXPECT_EQ(got.name, c.name) << c.sql;
  }
  for (std::string_view sql :
       {"SELECT 1", "INSERT INTO savepoints VALUES (1)", "", "COMMIT", "ROLLBACK", "SAVEPOINT"}) {
    EXPECT_EQ(ParseSavepointStatement(sql).verb, Verb::kNone) << sql;
  }
}

}  // namespace
}  // namespace idem

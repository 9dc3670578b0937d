// The ledger crash test on the shared store: idem-ledger killed with SIGKILL twenty times while
// applying a file to a fresh schema of the "postgres" CTest fixture's server, restarted on the
// same file each time; the same scenario and checks as on SQLite (ledger_crash.h). A killed
// client's open transaction is rolled back by the server when its connection drops.
#include <gtest/gtest.h>

#include <string>

#include "ledger_crash.h"
#include "ledger_files.h"
#include "pg_test_support.h"

namespace idem::ledger_test {
namespace {

TEST(LedgerCrashPostgres, KilledTwentyTimesThenRestartedAppliesEveryTransferExactlyOnce) {
  auto server = pgtest::ServerUri();
  ASSERT_TRUE(server.ok()) << server.status();
  auto schema = pgtest::CreateFreshSchema();
  ASSERT_TRUE(schema.ok()) << schema.status();
  ScratchDir dir;
  CheckKilledRunsApplyEveryTransferExactlyOnce(pgtest::UriWithSchema(*server, *schema),
                                               dir.Path("transfers.jsonl"));
}

}  // namespace
}  // namespace idem::ledger_test

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
  auto fresh = pgtest::CreateFreshSchemaUri();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  ScratchDir dir;
  CheckKilledRunsApplyEveryTransferExactlyOnce(fresh->uri, dir.Path("transfers.jsonl"));
}

}  // namespace
}  // namespace idem::ledger_test

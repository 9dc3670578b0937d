// idem-ledger killed with SIGKILL again and again while applying a file, and restarted on the
// same file each time, on the embedded store: at the end every transfer is applied exactly once
// and the books balance. The scenario itself is in ledger_crash.h; ledger_crash_postgres_test.cc
// runs it on PostgreSQL.
#include "ledger_crash.h"

#include <gtest/gtest.h>

#include <string>

#include "ledger_files.h"

namespace idem::ledger_test {
namespace {

TEST(LedgerCrash, KilledTwentyTimesThenRestartedAppliesEveryTransferExactlyOnce) {
  ScratchDir dir;
  CheckKilledRunsApplyEveryTransferExactlyOnce("sqlite:" + dir.Path("ledger.db"),
                                               dir.Path("transfers.jsonl"));
}

}  // namespace
}  // namespace idem::ledger_test

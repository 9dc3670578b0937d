// The ledger crash test, one body for every store: idem-ledger killed with SIGKILL again and again
// while applying a file, and restarted on the same file each time; at the end every transfer is
// applied exactly once, the books balance and every key's record is completed.
//
// The kill moments are chosen by progress, not by time: each run is watched through its
// --progress output and killed once it has reported a seeded random number of newly applied
// transfers, so the kill lands while it is somewhere in the following transfers (claiming,
// writing, committing). A small stdout pipe keeps the child close behind what it reported.
#ifndef IDEM_TESTS_LEDGER_LEDGER_CRASH_H_
#define IDEM_TESTS_LEDGER_LEDGER_CRASH_H_

#include <string>

namespace idem::ledger_test {

// Runs the whole crash scenario on the empty store at `store_uri` (sqlite:PATH or
// postgresql://…), the generated transfers written to the file `transfer_file`. Reports failures
// through GoogleTest assertions (a fatal one ends this function, so call it last or under
// ASSERT_NO_FATAL_FAILURE) and records the property "committed_beyond_reported" on the current
// test: how many transfers the killed runs committed past the ones read before each kill.
void CheckKilledRunsApplyEveryTransferExactlyOnce(const std::string& store_uri,
                                                  const std::string& transfer_file);

}  // namespace idem::ledger_test

#endif  // IDEM_TESTS_LEDGER_LEDGER_CRASH_H_

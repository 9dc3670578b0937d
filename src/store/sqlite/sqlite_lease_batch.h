// Store::ApplyLeaseBatch on SQLite: every write of a batch in one BEGIN IMMEDIATE … COMMIT on one
// connection, each write one conditional statement (plus a read when it changes nothing, to say
// why), fences drawn from the counter once per batch.
//
// Thread-safety: as the Connection passed in.
#ifndef IDEM_STORE_SQLITE_SQLITE_LEASE_BATCH_H_
#define IDEM_STORE_SQLITE_SQLITE_LEASE_BATCH_H_

#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_clock.h"
#include "idem/clock.h"
#include "idem/store.h"
#include "store/sqlite/sqlite_connection.h"

namespace idem::sqlite {

// Applies `writes` as Store::ApplyLeaseBatch says, with `clock` (and `host_clock`, which leases
// run on when not null: key_table.h, "Time rules") read once under the write lock and
// `retention` for finished records. Per-write failures (InvalidArgument, Aborted) are in
// the results; a failure of the transaction (busy past lock_timeout, I/O error, disk full, a
// failed COMMIT) rolls everything back and returns Unavailable (DataLoss for a missing fence
// counter).
absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(Connection& conn, const Clock& clock,
                                                              const HostClock* host_clock,
                                                              Millis retention,
                                                              std::span<const LeaseWrite> writes);

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_SQLITE_LEASE_BATCH_H_

// An SQLite VFS that wraps the default one and hands the write-ahead log's writes to the file
// system in runs: SQLite writes each WAL frame as two writes (its 24-byte header, then its page),
// so a commit of N pages costs 2N pwrite calls; through this VFS it costs one per contiguous run.
//
// Only the WAL of a connection that asked for it (CoalesceWalWrites, for synchronous=FULL) is
// coalesced; every other file is the default VFS's, unchanged.
//
// Nothing changes about what reaches the file or when it is durable: a connection's pending run
// is written before that connection syncs, reads, truncates, sizes or closes its WAL, before any
// barrier or lock change on its shared-memory WAL index (so a commit is in the file before the
// index makes it visible to a reader, at every synchronous level), and whenever it is not
// contiguous with the next write. A failed run is reported by the call that wrote it (usually the
// commit's sync), which fails the transaction as a failed write would.
//
// Thread-safety: registration is thread-safe; each file it opens is used as SQLite uses files
// (one connection, one thread at a time).
#ifndef IDEM_STORE_SQLITE_WAL_COALESCING_VFS_H_
#define IDEM_STORE_SQLITE_WAL_COALESCING_VFS_H_

#include <sqlite3.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace idem::sqlite {

// Registers the VFS (once, not as the default) and returns its name for sqlite3_open_v2.
// Errors: Internal when SQLite has no default VFS or refuses the registration.
absl::StatusOr<const char*> WalCoalescingVfsName();

// Coalesces the WAL writes of `db`, a connection opened through the VFS; a no-op on any other.
// REQUIRES: `db` runs with synchronous=FULL (or EXTRA): its commits then sync the WAL before the
// WAL index makes them visible, which is where a failed run is reported. At synchronous=NORMAL a
// run failing at that point could not fail the commit.
void CoalesceWalWrites(sqlite3* db);

// Process-wide counts of WAL writes: `asked` by SQLite, `issued` to the wrapped VFS.
struct WalWriteCounts {
  uint64_t asked = 0;
  uint64_t issued = 0;
};
WalWriteCounts WalWriteCountsSoFar();

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_WAL_COALESCING_VFS_H_

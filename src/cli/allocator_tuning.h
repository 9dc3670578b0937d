// Process-wide allocator settings for the long-running commands (`idem serve`, `idem relay`).
#pragma once

namespace idem::cli {

// Keeps memory that is freed for reuse instead of handing it back to the kernel at once, and
// serves allocations up to 4 MiB from the heap rather than from fresh mappings.
//
// Why: with glibc's defaults every request's short-lived allocations (coroutine frames, SQLite's
// pages of a batch, bodies) shrink a thread's heap when freed and grow it again on the next
// request. Each shrink is an madvise whose TLB shootdown interrupts every core; measured on a
// two-core VM, `idem serve` spent 11% of its CPU there and 370 us per unique-key request, 150 us
// with these settings. The cost is that freed memory up to 64 MiB per heap stays resident.
void KeepFreedMemoryForReuse();

// Turns off SQLite's memory statistics (sqlite3_status) for the process; nothing in idem reads
// them. Call before the process opens any SQLite database: afterwards it changes nothing.
//
// Why: with them on (SQLite's default), each of SQLite's allocations and frees takes a
// process-wide mutex to count it, and SQLite as Debian builds it (SQLITE_OMIT_LOOKASIDE) goes to
// malloc for every value it grows. Measured on `idem serve` (SQLite, unique keys): the store
// writer thread locked a mutex 35.6 times per request with them on, 1.5 with them off.
void TurnOffSqliteMemoryStatistics();

}  // namespace idem::cli

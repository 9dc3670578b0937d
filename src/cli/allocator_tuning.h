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

}  // namespace idem::cli

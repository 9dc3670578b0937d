#include "cli/allocator_tuning.h"

#include <sqlite3.h>

#include <cstdlib>  // defines __GLIBC__ on glibc, which the test below needs

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace idem::cli {

void KeepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  // mallopt reports failure with 0; a refused setting leaves glibc's default, which is correct
  // and only slower, so there is nothing to report. With tcmalloc linked (IDEM_MALLOC) mallopt is
  // tcmalloc's, which ignores both: it keeps freed memory for reuse on its own.
  constexpr int kTrimThreshold = 64 << 20;
  constexpr int kMmapThreshold = 4 << 20;
  (void)mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
  (void)mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
#endif
}

void TurnOffSqliteMemoryStatistics() {
  // SQLITE_MISUSE once SQLite is initialized: the statistics then stay on, which is only slower.
  (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

}  // namespace idem::cli

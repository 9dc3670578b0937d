#include "store/sqlite/wal_coalescing_vfs.h"

#include <sqlite3.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

namespace idem::sqlite {
namespace {

constexpr char kVfsName[] = "idem-wal-coalescing";
// A commit of up to ~29 pages of 4 KiB goes out in one run, a larger one in runs of this size.
// The unix VFS writes at most 0x1ffff bytes per call (it masks the length: SQLite's own writes
// never reach a page of 64 KiB plus a frame header), so a run stays below that.
constexpr int kRunCapacity = 120 * 1024;
static_assert(kRunCapacity < 0x1ffff);
// The file control CoalesceWalWrites sends to the database file (far above SQLite's own).
constexpr int kCoalesceOp = 0x69646d01;

std::atomic<uint64_t> g_asked{0};
std::atomic<uint64_t> g_issued{0};

// A database file or WAL opened through the VFS. The wrapped VFS's file lives right after it in
// the block SQLite allocates (szOsFile covers both).
struct File {
  sqlite3_file base;              // first: SQLite holds a File as an sqlite3_file
  sqlite3_file* real = nullptr;   // the wrapped VFS's file
  File* wal = nullptr;            // a database file: its connection's WAL while that is open
  File* db = nullptr;             // a WAL: its connection's database file
  const char* db_name = nullptr;  // a database file: its key in DbFiles()
  bool coalesce = false;          // a database file: CoalesceWalWrites was called on it
  char* run = nullptr;            // a WAL: the pending writes (kRunCapacity bytes), or null
  int run_size = 0;
  sqlite3_int64 run_start = 0;
  // A WAL: a run that failed where the failure could not be returned (a lock change, a
  // barrier); the WAL's next write, read or sync returns it, so the transaction fails.
  int deferred_rc = SQLITE_OK;
};

constexpr size_t kRealOffset = (sizeof(File) + 7) & ~size_t{7};

File* AsFile(sqlite3_file* file) { return reinterpret_cast<File*>(file); }
sqlite3_vfs* Wrapped(sqlite3_vfs* vfs) { return static_cast<sqlite3_vfs*>(vfs->pAppData); }

// Database files by the name pointer SQLite opened them with, which is also what
// sqlite3_filename_database returns for their WAL's name: how a WAL finds its connection's
// database file.
std::mutex& DbFilesMutex() {
  static std::mutex mu;
  return mu;
}
std::map<const char*, File*>& DbFiles() {
  static auto* files = new std::map<const char*, File*>();
  return *files;
}

// Writes `wal`'s pending run (if any). A run that fails is dropped, as a failed write is: SQLite
// fails the transaction and writes those frames again.
int Flush(File* wal) {
  if (wal == nullptr || wal->run_size == 0) return SQLITE_OK;
  const int size = wal->run_size;
  wal->run_size = 0;
  g_issued.fetch_add(1, std::memory_order_relaxed);
  return wal->real->pMethods->xWrite(wal->real, wal->run, size, wal->run_start);
}

// For the WAL's own calls: first any failure kept for it, then its run.
int FlushWal(File* wal) {
  if (wal->deferred_rc != SQLITE_OK) {
    const int rc = wal->deferred_rc;
    wal->deferred_rc = SQLITE_OK;
    wal->run_size = 0;
    return rc;
  }
  return Flush(wal);
}

// For the database file's calls, which go on whatever the flush gives: a failure is kept for the
// WAL's next call.
void FlushWalOf(File* db) {
  if (db->wal == nullptr) return;
  if (const int rc = Flush(db->wal); rc != SQLITE_OK) db->wal->deferred_rc = rc;
}

// Flushes before a call on `file`: a WAL's run is flushed and its failure returned; a database
// file's WAL is flushed and a failure kept for the WAL.
int FlushFor(File* file) {
  if (file->db_name == nullptr) return FlushWal(file);
  FlushWalOf(file);
  return SQLITE_OK;
}

int Close(sqlite3_file* base) {
  File* file = AsFile(base);
  const int rc = FlushFor(file);
  if (file->wal != nullptr) file->wal->db = nullptr;
  if (file->db != nullptr) file->db->wal = nullptr;
  if (file->db_name != nullptr) {
    std::lock_guard lock(DbFilesMutex());
    DbFiles().erase(file->db_name);
  }
  const int closed = file->real->pMethods->xClose(file->real);
  sqlite3_free(file->run);
  file->run = nullptr;
  return rc != SQLITE_OK ? rc : closed;
}

int Read(sqlite3_file* base, void* out, int amount, sqlite3_int64 offset) {
  File* file = AsFile(base);
  if (int rc = FlushFor(file); rc != SQLITE_OK) return rc;
  return file->real->pMethods->xRead(file->real, out, amount, offset);
}

int Write(sqlite3_file* base, const void* data, int amount, sqlite3_int64 offset) {
  File* file = AsFile(base);
  if (file->run == nullptr || file->db == nullptr || !file->db->coalesce) {
    if (int rc = file->run != nullptr ? FlushWal(file) : SQLITE_OK; rc != SQLITE_OK) return rc;
    return file->real->pMethods->xWrite(file->real, data, amount, offset);
  }
  g_asked.fetch_add(1, std::memory_order_relaxed);
  if (file->deferred_rc != SQLITE_OK) return FlushWal(file);
  const bool follows = file->run_size > 0 && offset == file->run_start + file->run_size;
  if (follows && amount <= kRunCapacity - file->run_size) {
    std::memcpy(file->run + file->run_size, data, static_cast<size_t>(amount));
    file->run_size += amount;
    return SQLITE_OK;
  }
  if (int rc = Flush(file); rc != SQLITE_OK) return rc;
  if (amount > kRunCapacity) {
    g_issued.fetch_add(1, std::memory_order_relaxed);
    return file->real->pMethods->xWrite(file->real, data, amount, offset);
  }
  std::memcpy(file->run, data, static_cast<size_t>(amount));
  file->run_size = amount;
  file->run_start = offset;
  return SQLITE_OK;
}

int Truncate(sqlite3_file* base, sqlite3_int64 size) {
  File* file = AsFile(base);
  if (int rc = FlushFor(file); rc != SQLITE_OK) return rc;
  return file->real->pMethods->xTruncate(file->real, size);
}

int Sync(sqlite3_file* base, int flags) {
  File* file = AsFile(base);
  if (int rc = FlushFor(file); rc != SQLITE_OK) return rc;
  return file->real->pMethods->xSync(file->real, flags);
}

int FileSize(sqlite3_file* base, sqlite3_int64* size) {
  File* file = AsFile(base);
  if (int rc = FlushFor(file); rc != SQLITE_OK) return rc;
  return file->real->pMethods->xFileSize(file->real, size);
}

int Lock(sqlite3_file* base, int level) {
  File* file = AsFile(base);
  if (int rc = FlushFor(file); rc != SQLITE_OK) return rc;
  return file->real->pMethods->xLock(file->real, level);
}

int Unlock(sqlite3_file* base, int level) {
  File* file = AsFile(base);
  const int rc = FlushFor(file);
  const int unlocked = file->real->pMethods->xUnlock(file->real, level);
  return rc != SQLITE_OK ? rc : unlocked;
}

int CheckReservedLock(sqlite3_file* base, int* out) {
  File* file = AsFile(base);
  return file->real->pMethods->xCheckReservedLock(file->real, out);
}

int FileControl(sqlite3_file* base, int op, void* arg) {
  File* file = AsFile(base);
  if (op == kCoalesceOp && file->db_name != nullptr) {
    file->coalesce = true;
    return SQLITE_OK;
  }
  if (int rc = FlushFor(file); rc != SQLITE_OK) return rc;
  return file->real->pMethods->xFileControl(file->real, op, arg);
}

int SectorSize(sqlite3_file* base) {
  File* file = AsFile(base);
  return file->real->pMethods->xSectorSize(file->real);
}

int DeviceCharacteristics(sqlite3_file* base) {
  File* file = AsFile(base);
  return file->real->pMethods->xDeviceCharacteristics(file->real);
}

// The shared-memory calls come on the database file. A commit becomes visible to readers when
// the WAL index header is written, after a barrier, and the write lock is released after it: the
// WAL's frames are in the file before either.
int ShmMap(sqlite3_file* base, int region, int size, int extend, void volatile** out) {
  File* file = AsFile(base);
  if (int rc = FlushFor(file); rc != SQLITE_OK) return rc;
  return file->real->pMethods->xShmMap(file->real, region, size, extend, out);
}

int ShmLock(sqlite3_file* base, int offset, int n, int flags) {
  File* file = AsFile(base);
  if (int rc = FlushFor(file); rc != SQLITE_OK) return rc;
  return file->real->pMethods->xShmLock(file->real, offset, n, flags);
}

void ShmBarrier(sqlite3_file* base) {
  File* file = AsFile(base);
  FlushFor(file);
  file->real->pMethods->xShmBarrier(file->real);
}

int ShmUnmap(sqlite3_file* base, int delete_flag) {
  File* file = AsFile(base);
  if (int rc = FlushFor(file); rc != SQLITE_OK) return rc;
  return file->real->pMethods->xShmUnmap(file->real, delete_flag);
}

int Fetch(sqlite3_file* base, sqlite3_int64 offset, int amount, void** out) {
  File* file = AsFile(base);
  *out = nullptr;
  if (int rc = FlushFor(file); rc != SQLITE_OK) return rc;
  return file->real->pMethods->xFetch(file->real, offset, amount, out);
}

int Unfetch(sqlite3_file* base, sqlite3_int64 offset, void* page) {
  File* file = AsFile(base);
  return file->real->pMethods->xUnfetch(file->real, offset, page);
}

const sqlite3_io_methods kMethods = {.iVersion = 3,
                                     .xClose = Close,
                                     .xRead = Read,
                                     .xWrite = Write,
                                     .xTruncate = Truncate,
                                     .xSync = Sync,
                                     .xFileSize = FileSize,
                                     .xLock = Lock,
                                     .xUnlock = Unlock,
                                     .xCheckReservedLock = CheckReservedLock,
                                     .xFileControl = FileControl,
                                     .xSectorSize = SectorSize,
                                     .xDeviceCharacteristics = DeviceCharacteristics,
                                     .xShmMap = ShmMap,
                                     .xShmLock = ShmLock,
                                     .xShmBarrier = ShmBarrier,
                                     .xShmUnmap = ShmUnmap,
                                     .xFetch = Fetch,
                                     .xUnfetch = Unfetch};

// Links a WAL to its connection's database file and gives it a run buffer; a WAL whose database
// file is not found (not opened through this VFS) is written through unchanged.
void AttachWal(File* wal, sqlite3_filename wal_name) {
  const char* db_name = sqlite3_filename_database(wal_name);
  std::lock_guard lock(DbFilesMutex());
  const auto it = DbFiles().find(db_name);
  if (it == DbFiles().end() || it->second->wal != nullptr) return;
  wal->run = static_cast<char*>(sqlite3_malloc(kRunCapacity));
  if (wal->run == nullptr) return;
  wal->db = it->second;
  it->second->wal = wal;
}

int Open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* out, int flags, int* out_flags) {
  sqlite3_vfs* wrapped = Wrapped(vfs);
  const bool main_db = (flags & SQLITE_OPEN_MAIN_DB) != 0 && name != nullptr;
  const bool wal = (flags & SQLITE_OPEN_WAL) != 0 && name != nullptr;
  // Everything else (temporary files, journals) is the wrapped VFS's own file, unwrapped.
  if (!main_db && !wal) return wrapped->xOpen(wrapped, name, out, flags, out_flags);
  File* file = new (out) File{};
  file->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(out) + kRealOffset);
  const int rc = wrapped->xOpen(wrapped, name, file->real, flags, out_flags);
  if (rc != SQLITE_OK || file->real->pMethods == nullptr ||
      file->real->pMethods->iVersion < kMethods.iVersion) {
    // SQLite calls xClose only when pMethods is set: close the wrapped file here.
    if (file->real->pMethods != nullptr) file->real->pMethods->xClose(file->real);
    file->base.pMethods = nullptr;
    return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
  }
  file->base.pMethods = &kMethods;
  if (main_db) {
    file->db_name = name;
    std::lock_guard lock(DbFilesMutex());
    DbFiles()[name] = file;
  } else {
    AttachWal(file, name);
  }
  return SQLITE_OK;
}

int Delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  return Wrapped(vfs)->xDelete(Wrapped(vfs), name, sync_dir);
}
int Access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  return Wrapped(vfs)->xAccess(Wrapped(vfs), name, flags, out);
}
int FullPathname(sqlite3_vfs* vfs, const char* name, int size, char* out) {
  return Wrapped(vfs)->xFullPathname(Wrapped(vfs), name, size, out);
}
void* DlOpen(sqlite3_vfs* vfs, const char* name) {
  return Wrapped(vfs)->xDlOpen(Wrapped(vfs), name);
}
void DlError(sqlite3_vfs* vfs, int size, char* out) {
  Wrapped(vfs)->xDlError(Wrapped(vfs), size, out);
}
void (*DlSym(sqlite3_vfs* vfs, void* handle, const char* symbol))() {
  return Wrapped(vfs)->xDlSym(Wrapped(vfs), handle, symbol);
}
void DlClose(sqlite3_vfs* vfs, void* handle) { Wrapped(vfs)->xDlClose(Wrapped(vfs), handle); }
int Randomness(sqlite3_vfs* vfs, int size, char* out) {
  return Wrapped(vfs)->xRandomness(Wrapped(vfs), size, out);
}
int Sleep(sqlite3_vfs* vfs, int micros) { return Wrapped(vfs)->xSleep(Wrapped(vfs), micros); }
int CurrentTime(sqlite3_vfs* vfs, double* out) {
  return Wrapped(vfs)->xCurrentTime(Wrapped(vfs), out);
}
int GetLastError(sqlite3_vfs* vfs, int size, char* out) {
  return Wrapped(vfs)->xGetLastError(Wrapped(vfs), size, out);
}
int CurrentTimeInt64(sqlite3_vfs* vfs, sqlite3_int64* out) {
  return Wrapped(vfs)->xCurrentTimeInt64(Wrapped(vfs), out);
}

// The VFS itself; nullptr when it cannot be built on this platform's default VFS.
sqlite3_vfs* Register() {
  sqlite3_vfs* wrapped = sqlite3_vfs_find(nullptr);
  if (wrapped == nullptr || wrapped->iVersion < 2) return nullptr;
  static sqlite3_vfs vfs{};
  vfs.iVersion = 2;  // xCurrentTimeInt64; the system-call overrides (3) are the wrapped VFS's
  vfs.szOsFile = static_cast<int>(kRealOffset) + wrapped->szOsFile;
  vfs.mxPathname = wrapped->mxPathname;
  vfs.zName = kVfsName;
  vfs.pAppData = wrapped;
  vfs.xOpen = Open;
  vfs.xDelete = Delete;
  vfs.xAccess = Access;
  vfs.xFullPathname = FullPathname;
  vfs.xDlOpen = DlOpen;
  vfs.xDlError = DlError;
  vfs.xDlSym = DlSym;
  vfs.xDlClose = DlClose;
  vfs.xRandomness = Randomness;
  vfs.xSleep = Sleep;
  vfs.xCurrentTime = CurrentTime;
  vfs.xGetLastError = GetLastError;
  vfs.xCurrentTimeInt64 = CurrentTimeInt64;
  if (sqlite3_vfs_register(&vfs, /*makeDflt=*/0) != SQLITE_OK) return nullptr;
  return &vfs;
}

}  // namespace

absl::StatusOr<const char*> WalCoalescingVfsName() {
  static sqlite3_vfs* const vfs = Register();
  if (vfs == nullptr) {
    return absl::InternalError("SQLite's default VFS cannot be wrapped to coalesce WAL writes");
  }
  return vfs->zName;
}

void CoalesceWalWrites(sqlite3* db) { sqlite3_file_control(db, "main", kCoalesceOp, nullptr); }

WalWriteCounts WalWriteCountsSoFar() {
  return {.asked = g_asked.load(std::memory_order_relaxed),
          .issued = g_issued.load(std::memory_order_relaxed)};
}

}  // namespace idem::sqlite

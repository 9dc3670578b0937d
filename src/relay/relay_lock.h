// One relay at a time on a SQLite store: an exclusive lock on the file "<database>.relay-lock"
// beside the database (flock), released when the relay exits, dies or is killed.
//
// Thread-safety: a RelayLock is owned by one thread.
#ifndef IDEM_RELAY_RELAY_LOCK_H_
#define IDEM_RELAY_RELAY_LOCK_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace idem::relay {

// Returns the database path a sqlite: store URI names (sqlite:PATH, sqlite:///relative,
// sqlite:////absolute; the query removed). Errors: InvalidArgument for other URIs.
absl::StatusOr<std::string> SqlitePathOf(std::string_view uri);

class RelayLock final {
 public:
  // Takes the lock of the SQLite database at `path`. Errors: Aborted when another relay holds
  // it (the message says so and names the lock file); PermissionDenied or Internal when the lock
  // file cannot be opened.
  static absl::StatusOr<std::unique_ptr<RelayLock>> TryAcquire(const std::string& path);
  ~RelayLock();
  RelayLock(const RelayLock&) = delete;
  RelayLock& operator=(const RelayLock&) = delete;

 private:
  explicit RelayLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace idem::relay

#endif  // IDEM_RELAY_RELAY_LOCK_H_

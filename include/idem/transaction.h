// idem/transaction.h: an open database transaction handed to a caller's effect.
//
// The run-once guard (idem/guard.h) runs the caller's effect on the very transaction that holds
// the key's claim, so the effect's writes, the key and the stored response commit or roll back
// together. The effect writes through this interface, or through the native handle.
//
// Thread-safety: a Transaction belongs to the one thread running the effect.
#ifndef IDEM_TRANSACTION_H_
#define IDEM_TRANSACTION_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"

namespace idem {

// A bound parameter or a column value. std::string is text; binary data belongs in a Blob.
struct Blob {
  std::string bytes;
  friend bool operator==(const Blob&, const Blob&) = default;
};
using SqlValue = std::variant<std::monostate, int64_t, double, std::string, Blob>;
using SqlRow = std::vector<SqlValue>;

class Transaction {
 public:
  virtual ~Transaction() = default;

  // Runs one statement whose parameters are written $1, $2, … (the same text works on SQLite and
  // PostgreSQL) and returns the rows it produced (none for a statement without RETURNING).
  // Errors: InvalidArgument for SQL the database rejects; AlreadyExists for a unique violation;
  // Unavailable for a busy/locked database, a serialization failure, a deadlock or a lost
  // connection (retryable); Internal otherwise. A failed statement leaves the transaction usable
  // only for rolling back.
  virtual absl::StatusOr<std::vector<SqlRow>> Query(std::string_view sql,
                                                    std::span<const SqlValue> params = {}) = 0;

  // Like Query, for statements whose rows are not wanted; returns the number of rows changed.
  virtual absl::StatusOr<int64_t> Execute(std::string_view sql,
                                          std::span<const SqlValue> params = {}) = 0;

  // The backend's own connection (sqlite3* or PGconn*), for effects that need more than the
  // calls above. It must not be used to commit or roll back.
  virtual void* native_handle() = 0;
};

}  // namespace idem

#endif  // IDEM_TRANSACTION_H_

// A bounded pool of SQLite connections to one database file.
//
// Thread-safety: Acquire may be called from any thread; a Lease belongs to the thread holding it.
#ifndef IDEM_STORE_SQLITE_CONNECTION_POOL_H_
#define IDEM_STORE_SQLITE_CONNECTION_POOL_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "store/sqlite/sqlite_connection.h"

namespace idem::sqlite {

class ConnectionPool : public std::enable_shared_from_this<ConnectionPool> {
 public:
  // A connection on loan; returned to the pool (rolled back first if a transaction is still
  // open) when destroyed. A lease of no pool (a null `pool`: a borrowed connection) only
  // destroys its Connection.
  class Lease {
   public:
    Lease(std::shared_ptr<ConnectionPool> pool, std::unique_ptr<Connection> conn)
        : pool_(std::move(pool)), conn_(std::move(conn)) {}
    Lease(Lease&&) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();

    Connection& operator*() const { return *conn_; }
    Connection* operator->() const { return conn_.get(); }

   private:
    // Shared, so that a transaction outliving its store still returns its connection safely.
    std::shared_ptr<ConnectionPool> pool_;
    std::unique_ptr<Connection> conn_;
  };

  // REQUIRES: max_connections >= 1; the pool is owned by a std::shared_ptr. Opens connections
  // lazily, up to max_connections.
  ConnectionPool(std::string path, ConnectionSettings settings, int max_connections);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Hands out an idle connection, opening one while fewer than max_connections exist, else
  // waiting up to lock_timeout for one to come back.
  // Errors: Unavailable when none came back in time; as Connection::Open.
  absl::StatusOr<Lease> Acquire();

  // Puts back a connection that was opened elsewhere (the one that ran the migrations).
  void Adopt(std::unique_ptr<Connection> conn);

 private:
  void Return(std::unique_ptr<Connection> conn);

  const std::string path_;
  const ConnectionSettings settings_;
  const int max_connections_;

  std::mutex mu_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
  int open_ = 0;                                   // guarded by mu_: idle plus on loan
};

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_CONNECTION_POOL_H_

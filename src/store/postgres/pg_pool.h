// A bounded pool of PostgreSQL connections: at most max_connections open at once, idle ones
// health-checked before reuse, dead ones dropped and replaced by new connections on demand.
//
// Thread-safety: safe to use from many threads at once; a lent connection belongs to its holder.
#ifndef IDEM_STORE_POSTGRES_PG_POOL_H_
#define IDEM_STORE_POSTGRES_PG_POOL_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "store/postgres/pg_connection.h"

namespace idem::postgres {

class ConnectionPool;

// A connection on loan; goes back to its pool when destroyed (or is closed, if it is broken or
// still inside a transaction). It keeps its pool alive, so a transaction may outlive its store.
// One of no pool (a null `pool`: a borrowed connection) only destroys its PgConnection.
class PooledConnection final {
 public:
  PooledConnection(std::shared_ptr<ConnectionPool> pool, std::unique_ptr<PgConnection> conn)
      : pool_(std::move(pool)), conn_(std::move(conn)) {}
  PooledConnection(PooledConnection&& other) noexcept = default;
  PooledConnection& operator=(PooledConnection&&) = delete;
  PooledConnection(const PooledConnection&) = delete;
  PooledConnection& operator=(const PooledConnection&) = delete;
  ~PooledConnection();

  PgConnection* operator->() const { return conn_.get(); }
  PgConnection& operator*() const { return *conn_; }

 private:
  std::shared_ptr<ConnectionPool> pool_;
  std::unique_ptr<PgConnection> conn_;
};

// REQUIRES: owned by a std::shared_ptr (lent connections hold a reference to it).
class ConnectionPool final : public std::enable_shared_from_this<ConnectionPool> {
 public:
  // `target` names the server in messages (no password); `session_sql` runs once on every new
  // connection (session settings). REQUIRES: max_connections >= 1.
  ConnectionPool(std::string conninfo, std::string target, std::string session_sql,
                 int max_connections, Millis wait);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Lends a healthy connection, opening one if fewer than max_connections are open.
  // Errors: Unavailable when every connection stays busy for `wait`, or the server cannot be
  // reached; Unauthenticated / PermissionDenied / NotFound as PgConnection::Connect.
  absl::StatusOr<PooledConnection> Acquire();

  const std::string& target() const { return target_; }

 private:
  friend class PooledConnection;
  void Return(std::unique_ptr<PgConnection> conn);
  // Returns an idle connection that passed its health check, or null.
  std::unique_ptr<PgConnection> TakeIdle(std::unique_lock<std::mutex>& lock);

  const std::string conninfo_;
  const std::string target_;
  const std::string session_sql_;
  const int max_connections_;
  const Millis wait_;
  const int connect_timeout_s_;

  std::mutex mu_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<PgConnection>> idle_;  // guarded by mu_
  int open_ = 0;                                     // guarded by mu_: idle + lent + connecting
};

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_POOL_H_

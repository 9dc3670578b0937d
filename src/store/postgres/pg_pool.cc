#include "store/postgres/pg_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace idem::postgres {
namespace {

// An idle connection unused for longer than this is pinged before it is lent: a server restart
// or a firewall may have closed it meanwhile.
constexpr auto kCheckIdleAfter = std::chrono::seconds(10);

}  // namespace

PooledConnection::~PooledConnection() {
  if (conn_ != nullptr && pool_ != nullptr) pool_->Return(std::move(conn_));
}

ConnectionPool::ConnectionPool(std::string conninfo, std::string target, std::string session_sql,
                               int max_connections, Millis wait)
    : conninfo_(std::move(conninfo)),
      target_(std::move(target)),
      session_sql_(std::move(session_sql)),
      max_connections_(std::max(1, max_connections)),
      wait_(wait),
      connect_timeout_s_(static_cast<int>(std::max<int64_t>(2, (wait.count() + 999) / 1000))) {}

std::unique_ptr<PgConnection> ConnectionPool::TakeIdle(std::unique_lock<std::mutex>& lock) {
  while (!idle_.empty()) {
    std::unique_ptr<PgConnection> conn = std::move(idle_.back());
    idle_.pop_back();
    const bool stale = std::chrono::steady_clock::now() - conn->last_used() > kCheckIdleAfter;
    lock.unlock();
    const bool healthy = !conn->broken() && (!stale || conn->Ping());
    if (!healthy) conn.reset();
    lock.lock();
    if (healthy) return conn;
    --open_;
  }
  return nullptr;
}

absl::StatusOr<PooledConnection> ConnectionPool::Acquire() {
  const auto deadline = std::chrono::steady_clock::now() + wait_;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (std::unique_ptr<PgConnection> conn = TakeIdle(lock)) {
      return PooledConnection(shared_from_this(), std::move(conn));
    }
    if (open_ < max_connections_) break;
    if (returned_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
        open_ >= max_connections_) {
      return absl::UnavailableError(fmt::format(
          "all {} connections to PostgreSQL at {} stayed busy for {} ms (lock_timeout): retry "
          "later or raise max_connections",
          max_connections_, target_, wait_.count()));
    }
  }
  ++open_;  // reserve the slot, then connect without holding the lock
  lock.unlock();
  absl::StatusOr<std::unique_ptr<PgConnection>> conn =
      PgConnection::Connect(conninfo_, target_, session_sql_, connect_timeout_s_);
  if (!conn.ok()) {
    lock.lock();
    --open_;
    returned_.notify_one();
    return conn.status();
  }
  return PooledConnection(shared_from_this(), *std::move(conn));
}

void ConnectionPool::Return(std::unique_ptr<PgConnection> conn) {
  std::vector<std::unique_ptr<PgConnection>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool reusable = !conn->broken() && !conn->has_deferred() &&
                          PQtransactionStatus(conn->raw()) == PQTRANS_IDLE;
    if (reusable) {
      idle_.push_back(std::move(conn));
    } else {
      --open_;
      // A lost connection usually means the server restarted: the idle ones are dead too, and
      // dropping them now spares their next holders a failure each.
      if (conn->lost()) {
        open_ -= static_cast<int>(idle_.size());
        dropped = std::move(idle_);
        idle_.clear();
      }
      dropped.push_back(std::move(conn));
    }
  }
  returned_.notify_all();
  // `dropped` closes its connections here, outside the lock.
}

}  // namespace idem::postgres

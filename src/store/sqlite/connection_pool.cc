#include "store/sqlite/connection_pool.h"

#include <fmt/format.h>

#include <utility>

namespace idem::sqlite {

ConnectionPool::Lease::~Lease() {
  if (conn_ != nullptr && pool_ != nullptr) pool_->Return(std::move(conn_));
}

ConnectionPool::ConnectionPool(std::string path, ConnectionSettings settings,
                               int max_connections)
    : path_(std::move(path)), settings_(settings), max_connections_(max_connections) {}

absl::StatusOr<ConnectionPool::Lease> ConnectionPool::Acquire() {
  {
    std::unique_lock lock(mu_);
    const bool ready = returned_.wait_for(lock, settings_.lock_timeout, [&] {
      return !idle_.empty() || open_ < max_connections_;
    });
    if (!ready) {
      return absl::UnavailableError(fmt::format(
          "all {} connections to '{}' stayed busy for {} ms; retry later, or raise "
          "StoreOptions::max_connections",
          max_connections_, path_, settings_.lock_timeout.count()));
    }
    if (!idle_.empty()) {
      std::unique_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      return Lease(shared_from_this(), std::move(conn));
    }
    ++open_;  // reserve the slot, then open without holding the mutex
  }
  absl::StatusOr<std::unique_ptr<Connection>> conn = Connection::Open(path_, settings_);
  if (!conn.ok()) {
    std::lock_guard lock(mu_);
    --open_;
    returned_.notify_one();
    return conn.status();
  }
  return Lease(shared_from_this(), *std::move(conn));
}

void ConnectionPool::Adopt(std::unique_ptr<Connection> conn) {
  {
    std::lock_guard lock(mu_);
    ++open_;
  }
  Return(std::move(conn));
}

void ConnectionPool::Return(std::unique_ptr<Connection> conn) {
  // A connection still inside a transaction (a caller gave up midway) is rolled back; one that
  // cannot be is closed rather than handed to the next caller.
  if (conn->InTransaction() && (!conn->Run("ROLLBACK").ok() || conn->InTransaction())) {
    conn.reset();
  }
  std::lock_guard lock(mu_);
  if (conn == nullptr) {
    --open_;
  } else {
    idle_.push_back(std::move(conn));
  }
  returned_.notify_one();
}

}  // namespace idem::sqlite

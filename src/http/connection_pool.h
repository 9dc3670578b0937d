// ConnectionPool: asynchronous HTTP/1.1 keep-alive connections to one origin (scheme, host,
// port), with a bound on connections open at once and on idle ones kept. Acquire hands out a
// PooledConnection (resolving, connecting and, for https, a verified TLS handshake with SNI and
// host name checks when no idle connection is usable); giving it back as reusable keeps it idle
// for the next request. An idle connection the server has closed is detected at acquire and
// replaced. Idle connections are closed after PoolOptions::idle_timeout.
//
// Thread-safety: a ConnectionPool is safe to use from any number of threads at once (one mutex,
// held only for bookkeeping; nothing blocks on I/O). A PooledConnection belongs to one user at a
// time. Completion handlers run on their associated executor (a strand if bound to one),
// otherwise on the pool's executor; never inside AsyncAcquire itself. A pool made with
// PoolOptions::single_threaded is used from its executor's one thread only.
#ifndef IDEM_HTTP_CONNECTION_POOL_H_
#define IDEM_HTTP_CONNECTION_POOL_H_

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#pragma GCC diagnostic pop
#include <chrono>
#include <cstddef>
#include <memory>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "http/stream.h"
#include "http/url.h"

namespace idem::http {

using SteadyTime = std::chrono::steady_clock::time_point;

struct PoolOptions {
  size_t max_open = 64;  // connections open at once, busy, idle or connecting (>= 1)
  size_t max_idle = 16;  // idle connections kept for reuse (0: never reuse)
  std::chrono::milliseconds idle_timeout{30'000};  // an idle connection is closed after this
  // Required for https origins (see tls.h); ignored for http.
  std::shared_ptr<boost::asio::ssl::context> tls;
  // True when the pool's executor runs its handlers on one thread only (an io_context that one
  // thread runs, as in each gateway worker and BlockingClient) and the pool is used from that
  // thread. Connections and sends then run on the executor itself instead of each on a strand of
  // it: a strand inside an any_io_executor costs a heap allocation at almost every step of a
  // composed operation (46 of the gateway's ~200 allocations per forwarded request).
  bool single_threaded = false;
};

struct PoolStats {
  size_t open = 0;     // connections open now (busy, idle or connecting)
  size_t idle = 0;     // of which idle
  size_t created = 0;  // connections established since the pool was made
  size_t waiting = 0;  // acquires waiting for a free slot
};

class ConnectionPool;

// One connection lent by the pool. Move-only. Give it back with Release(reusable); destroying it
// unreleased closes it (never reused: its state is unknown).
class PooledConnection final {
 public:
  PooledConnection() = default;
  PooledConnection(std::shared_ptr<ConnectionPool> pool, std::unique_ptr<Stream> stream,
                   bool reused);
  PooledConnection(PooledConnection&&) noexcept = default;
  PooledConnection& operator=(PooledConnection&& other) noexcept;
  ~PooledConnection();

  // REQUIRES: valid(). The stream, connected (and TLS-handshaken for https).
  Stream& stream() { return *stream_; }
  bool valid() const { return stream_ != nullptr; }
  // Whether this connection served an earlier request (then a failure before any byte of the
  // answer may just mean the server closed it meanwhile).
  bool reused() const { return reused_; }
  // Gives the connection back: kept idle if `reusable` (a complete exchange, keep-alive on both
  // sides) and the idle bound allows, else closed. Leaves this object invalid.
  void Release(bool reusable);

 private:
  std::shared_ptr<ConnectionPool> pool_;
  std::unique_ptr<Stream> stream_;
  bool reused_ = false;
};

using AcquireResult = absl::StatusOr<PooledConnection>;

class ConnectionPool final : public std::enable_shared_from_this<ConnectionPool> {
 public:
  // Returns a pool for `origin` whose I/O runs on `ex`, or InvalidArgument (max_open 0, an https
  // origin without options.tls).
  static absl::StatusOr<std::shared_ptr<ConnectionPool>> Create(boost::asio::any_io_executor ex,
                                                                Origin origin, PoolOptions options);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Obtains a connection by `deadline`. Completes with (AcquireResult):
  //   a PooledConnection; or DeadlineExceeded (no slot freed, or connecting took too long);
  //   NotFound (the host name does not exist); Unavailable (name lookup failed temporarily,
  //   connection refused or reset); Unauthenticated (TLS: the certificate failed verification,
  //   wrong host name included). Nothing was sent on any failure.
  template <class Token>
  auto AsyncAcquire(SteadyTime deadline, Token&& token) {
    return boost::asio::async_initiate<Token, void(AcquireResult)>(
        [this](auto handler, SteadyTime d) {
          auto ex = boost::asio::get_associated_executor(handler, executor_);
          StartAcquire(d, [h = std::move(handler), ex](AcquireResult r) mutable {
            boost::asio::post(
                ex, [h = std::move(h), r = std::move(r)]() mutable { std::move(h)(std::move(r)); });
          });
        },
        token, deadline);
  }

  // Returns an idle connection that is still usable, at once, or an invalid PooledConnection
  // when none is (then AsyncAcquire connects or waits). Saves a caller that may continue on the
  // calling thread the trip through the executor AsyncAcquire's completion takes.
  PooledConnection TryAcquireIdle();

  // Closes idle connections and fails waiting acquires with Cancelled; busy connections are
  // closed when given back. Later acquires fail with Cancelled.
  void Shutdown();

  const Origin& origin() const { return origin_; }
  boost::asio::any_io_executor get_executor() const { return executor_; }
  // The executor one operation of this pool runs on: a new strand of the pool's executor, or the
  // executor itself when the pool is single-threaded (see PoolOptions::single_threaded).
  boost::asio::any_io_executor OperationExecutor() const;
  PoolStats stats() const;
  bool single_threaded() const { return options_.single_threaded; }

 private:
  friend class PooledConnection;
  struct State;
  struct ConnectOp;
  using Done = absl::AnyInvocable<void(AcquireResult)>;

  ConnectionPool(boost::asio::any_io_executor ex, Origin origin, PoolOptions options);
  void StartAcquire(SteadyTime deadline, Done done);
  // REQUIRES: state_->mu held. The most recently used idle connection the server has not closed
  // (stale ones are closed on the way), or nullptr.
  std::unique_ptr<Stream> TakeIdleLocked();
  void Connect(SteadyTime deadline, Done done);
  void ReleaseSlot();  // a connect failed: its slot goes to a waiter or is freed
  void GiveBack(std::unique_ptr<Stream> stream, bool reusable);
  void SweepIdle();

  const boost::asio::any_io_executor executor_;
  const Origin origin_;
  const PoolOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace idem::http

#endif  // IDEM_HTTP_CONNECTION_POOL_H_

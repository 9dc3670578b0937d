#include "http/connection_pool.h"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#pragma GCC diagnostic pop
#include <cerrno>
#include <deque>
#include <list>
#include <mutex>

#include "absl/status/status.h"
#include "http/errors.h"

namespace idem::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

// An idle kept-alive connection is usable only if the server has neither closed it (EOF) nor
// sent anything unasked (an error answer, a TLS alert): peek without blocking.
bool IsStale(Stream& stream) {
  if (!stream.tcp().socket().is_open()) return true;
  char byte;
  const ssize_t n =
      ::recv(stream.tcp().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

bool IsIpAddress(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// Sets SNI (names only, RFC 6066) and host name or IP checking of the certificate.
absl::Status PrepareTls(Stream::TlsStream& tls, const std::string& host) {
  SSL* ssl = tls.native_handle();
  if (IsIpAddress(host)) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) != 1) {
      return absl::InternalError("TLS: could not set the IP address to verify");
    }
  } else if (SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                      const_cast<char*>(host.c_str())) != 1 ||  // SSL_set_tlsext_host_name
             SSL_set1_host(ssl, host.c_str()) != 1) {
    return absl::InternalError("TLS: could not set the host name to verify");
  }
  tls.set_verify_mode(asio::ssl::verify_peer);
  return absl::OkStatus();
}

}  // namespace

struct ConnectionPool::State {
  struct Idle {
    std::unique_ptr<Stream> stream;
    SteadyTime since;
  };
  struct Waiter {
    SteadyTime deadline;
    Done done;
    std::unique_ptr<asio::steady_timer> timer;
    bool finished = false;
  };
  explicit State(asio::any_io_executor ex) : sweep(ex) {}

  mutable std::mutex mu;
  std::deque<Idle> idle;  // back() is the most recently used
  std::list<std::shared_ptr<Waiter>> waiters;
  size_t open = 0;
  size_t created = 0;
  bool shut = false;
  asio::steady_timer sweep;
  bool sweep_armed = false;

  // REQUIRES: mu held. Removes and returns the first waiter not yet finished, or nullptr.
  std::shared_ptr<Waiter> PopWaiter() {
    while (!waiters.empty()) {
      std::shared_ptr<Waiter> w = std::move(waiters.front());
      waiters.pop_front();
      if (w->finished) continue;
      w->finished = true;
      w->timer->cancel();
      return w;
    }
    return nullptr;
  }
};

PooledConnection::PooledConnection(std::shared_ptr<ConnectionPool> pool,
                                   std::unique_ptr<Stream> stream, bool reused)
    : pool_(std::move(pool)), stream_(std::move(stream)), reused_(reused) {}

PooledConnection& PooledConnection::operator=(PooledConnection&& other) noexcept {
  if (this != &other) {
    if (stream_) Release(false);
    pool_ = std::move(other.pool_);
    stream_ = std::move(other.stream_);
    reused_ = other.reused_;
  }
  return *this;
}

PooledConnection::~PooledConnection() {
  if (stream_) Release(false);
}

void PooledConnection::Release(bool reusable) {
  if (!stream_) return;
  std::shared_ptr<ConnectionPool> pool = std::move(pool_);
  pool->GiveBack(std::move(stream_), reusable);
}

absl::StatusOr<std::shared_ptr<ConnectionPool>> ConnectionPool::Create(asio::any_io_executor ex,
                                                                       Origin origin,
                                                                       PoolOptions options) {
  if (options.max_open == 0) {
    return absl::InvalidArgumentError("a connection pool needs max_open >= 1");
  }
  if (origin.tls() && options.tls == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("{} needs TLS settings (PoolOptions::tls)", origin.ToString()));
  }
  return std::shared_ptr<ConnectionPool>(
      new ConnectionPool(std::move(ex), std::move(origin), std::move(options)));
}

ConnectionPool::ConnectionPool(asio::any_io_executor ex, Origin origin, PoolOptions options)
    : executor_(std::move(ex)),
      origin_(std::move(origin)),
      options_(std::move(options)),
      state_(std::make_unique<State>(asio::make_strand(executor_))) {}

boost::asio::any_io_executor ConnectionPool::OperationExecutor() const {
  if (options_.single_threaded) return executor_;
  return asio::make_strand(executor_);
}

ConnectionPool::~ConnectionPool() {
  for (State::Idle& i : state_->idle) i.stream->Close();
}

PoolStats ConnectionPool::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return PoolStats{state_->open, state_->idle.size(), state_->created, state_->waiters.size()};
}

std::unique_ptr<Stream> ConnectionPool::TakeIdleLocked() {
  while (!state_->idle.empty()) {
    std::unique_ptr<Stream> s = std::move(state_->idle.back().stream);
    state_->idle.pop_back();
    if (!IsStale(*s)) return s;
    s->Close();
    --state_->open;
  }
  return nullptr;
}

PooledConnection ConnectionPool::TryAcquireIdle() {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->shut) return PooledConnection();
  std::unique_ptr<Stream> s = TakeIdleLocked();
  if (s == nullptr) return PooledConnection();
  return PooledConnection(shared_from_this(), std::move(s), true);
}

void ConnectionPool::StartAcquire(SteadyTime deadline, Done done) {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (state_->shut) {
    lock.unlock();
    return done(
        absl::CancelledError(fmt::format("the pool of {} is shut down", origin_.ToString())));
  }
  if (std::unique_ptr<Stream> s = TakeIdleLocked()) {
    lock.unlock();
    return done(PooledConnection(shared_from_this(), std::move(s), true));
  }
  if (state_->open < options_.max_open) {
    ++state_->open;
    lock.unlock();
    return Connect(deadline, std::move(done));
  }
  auto w = std::make_shared<State::Waiter>();
  w->deadline = deadline;
  w->done = std::move(done);
  w->timer = std::make_unique<asio::steady_timer>(executor_);
  w->timer->expires_at(deadline);
  state_->waiters.push_back(w);
  w->timer->async_wait([self = shared_from_this(), w](error_code ec) {
    if (ec) return;
    {
      std::lock_guard<std::mutex> guard(self->state_->mu);
      if (w->finished) return;
      w->finished = true;
      self->state_->waiters.remove(w);
    }
    w->done(absl::DeadlineExceededError(fmt::format(
        "no connection to {} became free before the deadline ({} open, the most allowed)",
        self->origin_.ToString(), self->options_.max_open)));
  });
}

void ConnectionPool::GiveBack(std::unique_ptr<Stream> stream, bool reusable) {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (state_->shut) reusable = false;
  if (std::shared_ptr<State::Waiter> w = state_->PopWaiter()) {
    lock.unlock();
    // Handed over without going idle, so checked here rather than by an acquire. A connection
    // kept idle is checked when it is taken (TakeIdleLocked), not now as well: the server may
    // close it at any time while it waits, so only that check counts, and one recv per
    // exchange is enough.
    if (reusable && IsStale(*stream)) reusable = false;
    if (reusable) return w->done(PooledConnection(shared_from_this(), std::move(stream), true));
    stream->Close();
    return Connect(w->deadline, std::move(w->done));  // the slot passes to the waiter
  }
  if (reusable && state_->idle.size() < options_.max_idle) {
    state_->idle.push_back({std::move(stream), std::chrono::steady_clock::now()});
    if (!state_->sweep_armed) {
      state_->sweep_armed = true;
      state_->sweep.expires_after(options_.idle_timeout);
      state_->sweep.async_wait([weak = weak_from_this()](error_code ec) {
        if (ec) return;
        if (std::shared_ptr<ConnectionPool> self = weak.lock()) self->SweepIdle();
      });
    }
    return;
  }
  stream->Close();
  --state_->open;
}

void ConnectionPool::SweepIdle() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->sweep_armed = false;
  const SteadyTime now = std::chrono::steady_clock::now();
  while (!state_->idle.empty() && state_->idle.front().since + options_.idle_timeout <= now) {
    state_->idle.front().stream->Close();
    state_->idle.pop_front();
    --state_->open;
  }
  if (state_->idle.empty()) return;
  state_->sweep_armed = true;
  state_->sweep.expires_at(state_->idle.front().since + options_.idle_timeout);
  state_->sweep.async_wait([weak = weak_from_this()](error_code ec) {
    if (ec) return;
    if (std::shared_ptr<ConnectionPool> self = weak.lock()) self->SweepIdle();
  });
}

// One connection being established: resolve, connect, and for https the TLS handshake, all on
// one strand (or the single-threaded pool's executor) and bounded by the acquire's deadline.
struct ConnectionPool::ConnectOp : std::enable_shared_from_this<ConnectOp> {
  ConnectOp(std::shared_ptr<ConnectionPool> p, SteadyTime d, Done dn)
      : pool(std::move(p)),
        deadline(d),
        done(std::move(dn)),
        executor(pool->OperationExecutor()),
        resolver(executor),
        watchdog(executor) {}

  void Start() {
    watchdog.expires_at(deadline);
    watchdog.async_wait([self = shared_from_this()](error_code ec) {
      if (ec) return;
      self->timed_out = true;
      self->resolver.cancel();
      if (self->stream) self->stream->tcp().cancel();
    });
    resolver.async_resolve(
        pool->origin_.host, std::to_string(pool->origin_.port),
        [self = shared_from_this()](error_code ec, tcp::resolver::results_type results) {
          self->OnResolved(ec, std::move(results));
        });
  }

  void OnResolved(error_code ec, tcp::resolver::results_type results) {
    if (ec) return Fail(timed_out ? Timeout() : ResolveError(ec, pool->origin_.host));
    if (pool->origin_.tls()) {
      stream = std::make_unique<Stream>(executor, *pool->options_.tls);
    } else {
      stream = std::make_unique<Stream>(executor);
    }
    stream->tcp().async_connect(
        results, [self = shared_from_this()](error_code cec, const tcp::endpoint&) {
          if (cec) {
            return self->Fail(self->timed_out ? self->Timeout()
                                              : ConnectError(cec, self->pool->origin_.ToString()));
          }
          self->Handshake();
        });
  }

  void Handshake() {
    Stream::TlsStream* tls = stream->tls();
    if (tls == nullptr) return Succeed();
    if (absl::Status s = PrepareTls(*tls, pool->origin_.host); !s.ok()) return Fail(s);
    tls->async_handshake(
        asio::ssl::stream_base::client, [self = shared_from_this()](error_code ec) {
          if (!ec) return self->Succeed();
          if (self->timed_out) return self->Fail(self->Timeout());
          const long verify = SSL_get_verify_result(self->stream->tls()->native_handle());
          self->Fail(HandshakeError(ec, verify, self->pool->origin_.ToString()));
        });
  }

  absl::Status Timeout() const {
    return TimeoutError(fmt::format("connecting to {}", pool->origin_.ToString()));
  }

  void Succeed() {
    watchdog.cancel();
    {
      std::lock_guard<std::mutex> lock(pool->state_->mu);
      ++pool->state_->created;
    }
    done(PooledConnection(pool, std::move(stream), false));
  }

  void Fail(absl::Status status) {
    watchdog.cancel();
    if (stream) stream->Close();
    pool->ReleaseSlot();
    done(std::move(status));
  }

  std::shared_ptr<ConnectionPool> pool;
  const SteadyTime deadline;
  Done done;
  asio::any_io_executor executor;
  tcp::resolver resolver;
  asio::steady_timer watchdog;
  std::unique_ptr<Stream> stream;
  bool timed_out = false;
};

void ConnectionPool::Connect(SteadyTime deadline, Done done) {
  std::make_shared<ConnectOp>(shared_from_this(), deadline, std::move(done))->Start();
}

void ConnectionPool::ReleaseSlot() {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (std::shared_ptr<State::Waiter> w = state_->PopWaiter()) {
    lock.unlock();
    return Connect(w->deadline, std::move(w->done));  // the freed slot passes to the waiter
  }
  --state_->open;
}

void ConnectionPool::Shutdown() {
  std::list<std::shared_ptr<State::Waiter>> waiters;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->shut = true;
    for (State::Idle& i : state_->idle) i.stream->Close();
    state_->open -= state_->idle.size();
    state_->idle.clear();
    state_->sweep.cancel();
    while (std::shared_ptr<State::Waiter> w = state_->PopWaiter()) waiters.push_back(w);
  }
  for (auto& w : waiters) {
    w->done(absl::CancelledError(fmt::format("the pool of {} is shut down", origin_.ToString())));
  }
}

}  // namespace idem::http

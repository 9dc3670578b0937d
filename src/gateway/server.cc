#include "gateway/server.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <optional>
#include <thread>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#pragma GCC diagnostic pop

#include "gateway/admin.h"
#include "gateway/completer.h"
#include "gateway/forward.h"
#include "gateway/gateway_context.h"
#include "gateway/lease_ticker.h"
#include "gateway/log_format.h"
#include "gateway/session.h"
#include "http/listen.h"
#include "http/tls.h"
#include "idem/uuid.h"

namespace idem::gateway {
namespace {

constexpr size_t kMaxOpenUpstream = 1024;  // upstream connections open at once per io thread
constexpr size_t kMaxIdleUpstream = 256;   // idle upstream connections kept per io thread

void LogException(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    spdlog::error("connection handler failed: {}", ex.what());
  }
}

using idem::http::AddressOf;
using idem::http::Listen;
using idem::http::ParseEndpoint;

struct Worker {
  ClientConnections connections;  // before ioc: connection frames unlist themselves from it
  asio::io_context ioc{1};
  UpstreamPool pool;
  std::thread thread;
};

class ServerImpl final : public Server {
 public:
  ServerImpl(const GatewayConfig& config, Store& store, KeyService& keys, Metrics& metrics)
      : store_(store),
        cache_(config.cache_bytes, SystemClock(), metrics),
        ctx_{.config = config,
             .keys = keys,
             .cache = cache_,
             .metrics = metrics,
             .in_flight = in_flight_} {
    ctx_.owner = fmt::format("idem-serve-{}-{}", getpid(), NewUuidV7().substr(24));
    ctx_.rules.store(std::make_shared<const GatewayConfig>(config));
    metrics.max_pending_outcomes.store(config.max_pending_outcomes);
    metrics.max_pending_bytes.store(config.max_pending_bytes);
  }
  ~ServerImpl() override { Shutdown(0ms); }

  absl::Status Init();
  std::string listen_address() const override { return listen_address_; }
  std::string admin_address() const override { return admin_address_; }
  void Shutdown(Millis drain) override;
  absl::Status Reload(const GatewayConfig& next) override;

 private:
  asio::awaitable<void> AcceptLoop();
  void SettleHeldKeys();
  absl::Status MakeUpstreamPools(const UpstreamTarget& target);
  void StartCompleter();

  Store& store_;
  InFlight in_flight_;
  ReplayCache cache_;
  GatewayContext ctx_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Worker> completer_;  // the completer's own thread
  std::optional<tcp::acceptor> acceptor_;
  std::optional<tcp::acceptor> admin_;
  std::string listen_address_;
  std::string admin_address_;
  bool stopped_ = false;
};

absl::Status ServerImpl::Init() {
  absl::StatusOr<UpstreamTarget> target = ParseUpstreamUrl(ctx_.config.upstream);
  if (!target.ok()) return target.status();
  absl::StatusOr<tcp::endpoint> listen = ParseEndpoint(ctx_.config.listen, "--listen");
  if (!listen.ok()) return listen.status();
  const int threads = ctx_.config.io_threads > 0
                          ? ctx_.config.io_threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (int i = 0; i < threads; ++i) workers_.push_back(std::make_unique<Worker>());
  asio::io_context& first = workers_.front()->ioc;
  // Always: a reload may add the first route that recovers (the loop reads nothing until then).
  completer_ = std::make_unique<Worker>();
  if (absl::Status s = MakeUpstreamPools(*target); !s.ok()) return s;
  acceptor_.emplace(first);
  if (absl::Status s = Listen(*acceptor_, *listen, "--listen"); !s.ok()) return s;
  listen_address_ = AddressOf(*acceptor_);
  if (!ctx_.config.admin.empty()) {
    absl::StatusOr<tcp::endpoint> admin = ParseEndpoint(ctx_.config.admin, "--admin");
    if (!admin.ok()) return admin.status();
    admin_.emplace(first);
    if (absl::Status s = Listen(*admin_, *admin, "--admin"); !s.ok()) return s;
    admin_address_ = AddressOf(*admin_);
    asio::co_spawn(first, AcceptAdmin(ctx_, workers_.front()->pool, *admin_), LogException);
  }
  asio::co_spawn(first, AcceptLoop(), LogException);
  asio::co_spawn(first, RunLeaseTicker(ctx_), LogException);
  for (auto& w : workers_) {
    w->thread = std::thread([ioc = &w->ioc] {
      auto guard = asio::make_work_guard(*ioc);
      ioc->run();
    });
  }
  StartCompleter();
  return absl::OkStatus();
}

// The completer runs on a thread of its own: its store reads block, and no client waits on it.
void ServerImpl::StartCompleter() {
  if (!completer_) return;
  asio::co_spawn(completer_->ioc, RunCompleter(ctx_, completer_->pool, store_), LogException);
  completer_->thread = std::thread([ioc = &completer_->ioc] { ioc->run(); });
}

// One pool per io thread on that thread's executor, so a connection is only ever used there. The
// host name is resolved once here so that a name that does not exist fails the start.
absl::Status ServerImpl::MakeUpstreamPools(const UpstreamTarget& target) {
  tcp::resolver resolver(workers_.front()->ioc);
  beast::error_code ec;
  resolver.resolve(target.origin.host, std::to_string(target.origin.port), ec);
  if (ec)
    return absl::UnavailableError(fmt::format("--upstream {}: cannot resolve '{}': {}",
                                              ctx_.config.upstream, target.origin.host,
                                              ec.message()));
  // Each worker's io_context runs on its one thread, and its pool is used only there.
  ::idem::http::PoolOptions options{
      .max_open = kMaxOpenUpstream, .max_idle = kMaxIdleUpstream, .single_threaded = true};
  if (target.origin.tls()) {
    auto tls = ::idem::http::MakeClientTlsContext({.ca_file = ctx_.config.cacert});
    if (!tls.ok())
      return absl::InvalidArgumentError(
          fmt::format("--cacert {}: {}", ctx_.config.cacert, std::string(tls.status().message())));
    options.tls = *std::move(tls);
  }
  for (auto& w : workers_) {
    auto pool = ::idem::http::ConnectionPool::Create(w->ioc.get_executor(), target.origin, options);
    if (!pool.ok()) return pool.status();
    w->pool = UpstreamPool{
        .target = target, .pool = *std::move(pool), .store_limit = store_.MaxResponseBytes()};
  }
  if (completer_) {
    auto pool = ::idem::http::ConnectionPool::Create(completer_->ioc.get_executor(), target.origin,
                                                     options);
    if (!pool.ok()) return pool.status();
    completer_->pool = UpstreamPool{
        .target = target, .pool = *std::move(pool), .store_limit = store_.MaxResponseBytes()};
  }
  return absl::OkStatus();
}

asio::awaitable<void> ServerImpl::AcceptLoop() {
  size_t next = 0;
  asio::steady_timer pause(co_await asio::this_coro::executor);
  for (;;) {
    Worker& w = *workers_[next++ % workers_.size()];
    auto [ec, socket] = co_await acceptor_->async_accept(w.ioc, kTuple);
    if (ec == asio::error::operation_aborted || !acceptor_->is_open()) co_return;
    if (ec) {
      // Out of descriptors or similar: wait a little instead of spinning.
      spdlog::warn("accept failed: {}", ec.message());
      pause.expires_after(10ms);
      co_await pause.async_wait(kTuple);
      continue;
    }
    if (ctx_.metrics.open_connections.load(std::memory_order_relaxed) >=
        ctx_.config.max_connections) {
      beast::error_code ignored;
      socket.close(ignored);  // over the connection limit: refused at once
      continue;
    }
    asio::co_spawn(w.ioc, ServeConnection(ctx_, w.pool, w.connections, std::move(socket)),
                   LogException);
  }
}

void ServerImpl::Shutdown(Millis drain) {
  if (stopped_) return;
  stopped_ = true;
  ctx_.draining = true;
  if (!workers_.empty()) {
    asio::post(workers_.front()->ioc, [this] {
      beast::error_code ignored;
      if (acceptor_) acceptor_->close(ignored);
    });
  }
  // No connection reads another request from now on: those waiting for one are closed at once.
  for (auto& w : workers_) {
    asio::post(w->ioc, [worker = w.get()] { worker->connections.StopReadingHeads(); });
  }
  if (!in_flight_.WaitIdle(drain))
    spdlog::warn("requests or outcomes still in flight after the {} ms drain bound; stopping them",
                 drain.count());
  if (admin_)
    asio::post(workers_.front()->ioc, [this] {
      beast::error_code ignored;
      admin_->close(ignored);
    });
  for (auto& w : workers_) w->ioc.stop();
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
  if (completer_) {
    // A recovery cut short here leaves its key held until the lease lapses; a later pass (of any
    // gateway) takes it on.
    completer_->ioc.stop();
    if (completer_->thread.joinable()) completer_->thread.join();
  }
  ctx_.keys.Shutdown();
  SettleHeldKeys();
}

absl::Status ServerImpl::Reload(const GatewayConfig& next) {
  const std::shared_ptr<const GatewayConfig> running = ctx_.rules.load();
  const std::vector<std::string> changed = RestartSettingsChanged(*running, next);
  if (!changed.empty())
    return absl::FailedPreconditionError(
        fmt::format("{} changed, which only a restart applies (a reload swaps the routes, "
                    "unmatched and require_key)",
                    fmt::join(changed, ", ")));
  ctx_.rules.store(std::make_shared<const GatewayConfig>(next));
  return absl::OkStatus();
}

// The keys still held at exit. A key whose request may have reached the upstream is never
// released (a retry would run it again while it may still run): its lease is left to lapse. Only
// a key whose upstream outcome was transient, its release still unwritten, is released (straight
// on the store). An outcome still unrecorded is logged by key and counted.
void ServerImpl::SettleHeldKeys() {
  std::vector<std::string> abandoned;
  for (const InFlight::HeldKey& held : in_flight_.HeldKeys()) {
    if (held.releasing) {
      absl::Status released = store_.Release(held.scope, held.fence);
      spdlog::info("released key {} (fence {}; its upstream outcome was transient): {}",
                   LoggedKey(held.scope.key), held.fence,
                   released.ok() ? std::string("ok") : released.ToString());
    } else if (held.phase == InFlight::Phase::kRunning) {
      spdlog::warn(
          "key {} (fence {}): its upstream call had not ended at exit; the key is left held "
          "until its lease lapses, so that no retry runs it again meanwhile",
          LoggedKey(held.scope.key), held.fence);
    } else {
      abandoned.push_back(LoggedKey(held.scope.key));
      spdlog::error(
          "key {} (fence {}): its outcome was not recorded before exit; the key is left held "
          "until its lease lapses, then a retry runs it again",
          LoggedKey(held.scope.key), held.fence);
    }
  }
  ctx_.metrics.outcomes_abandoned.fetch_add(abandoned.size(), std::memory_order_relaxed);
  if (!abandoned.empty())
    spdlog::error("{} outcome(s) not recorded at exit: {}", abandoned.size(),
                  fmt::join(abandoned, ", "));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> StartServer(const GatewayConfig& config, Store& store,
                                                    KeyService& keys, Metrics& metrics) {
  auto server = std::make_unique<ServerImpl>(config, store, keys, metrics);
  if (absl::Status s = server->Init(); !s.ok()) return s;
  return server;
}

}  // namespace idem::gateway

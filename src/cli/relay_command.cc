// `idem relay --store URI --sink http --url URL --secret whsec_...`: publishes the outbox
// (docs/outbox.md, "idem relay").
#include <fmt/format.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "cli/allocator_tuning.h"
#include "cli/commands.h"
#include "cli/log_setup.h"
#include "cli/service_notify.h"
#include "http/listen.h"
#include "idem/retry/duration.h"
#include "idem/store.h"
#include "relay/http_sink.h"
#ifdef IDEM_RELAY_WITH_NATS
#include "relay/nats_sink.h"
#endif
#include "relay/relay_admin.h"
#ifdef IDEM_RELAY_WITH_POSTGRES
#include "relay/pg_notify_wake.h"
#endif
#include "relay/relay_lock.h"
#include "relay/relay_loop.h"
#include "relay/relay_store.h"

namespace idem::cli {
namespace {

// Exit codes: a contract (docs/outbox.md); never renumber.
constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitStore = 3;
constexpr int kExitGone = 4;
constexpr int kExitLocked = 5;

constexpr const char* kFooter = R"(Exit status:
  0  stopped by SIGTERM or SIGINT (the batch under way finished and recorded first), or, with
     --once, nothing was left to send now
  2  usage error: bad flag, duration, sink, URL or secret; a store file that does not exist;
     an --admin address that is malformed or cannot be listened on
  3  the store failed: unreachable, locked, corrupt, not idem's, or newer than this idem
  4  the endpoint answered 410 Gone: delivery to it stopped; its messages stay pending
  5  SQLite: another relay is running on this store (--wait waits for it instead)

Examples:
  idem relay --store sqlite:./idem.db --sink http --url http://127.0.0.1:9000/hooks \
             --secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
  idem relay --store postgresql://idem@127.0.0.1/idem --sink nats \
             --url nats://127.0.0.1:4222 --subject-prefix idem.events --admin 127.0.0.1:9101
  IDEM_WEBHOOK_SECRET=whsec_... idem relay --store postgresql://idem@127.0.0.1/idem \
             --sink http --url https://hooks.example.com/idem --batch 200)";

struct RelayFlags {
  std::string store, sink, url, secret, lock_timeout, admin, subject_prefix;
  std::string timeout = "10s", lease = "30s", poll = "1s", retention = "24h";
  std::string backoff_base = "1s", backoff_cap = "5m", jitter = "full";
  int64_t batch = 100;
  int max_attempts = 10;
  int max_in_flight = 256;
  bool let_dead_pass = false, once = false, wait = false, no_listen = false;
  LogSettings log;
};

// A usage error is one plain line on stderr, whatever the log format; a failure once running
// (the store, the endpoint) a log line at error.
int Fail(int code, const std::string& message) {
  if (code == kExitUsage)
    std::fprintf(stderr, "idem relay: %s\n", message.c_str());
  else
    spdlog::error("idem relay: {}", message);
  return code;
}

absl::StatusOr<Millis> Duration(const std::string& text, const char* flag) {
  absl::StatusOr<Millis> d = retry::ParseDuration(text);
  if (!d.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", flag, std::string(d.status().message())));
  }
  return *d;
}

absl::StatusOr<relay::RelayOptions> MakeOptions(const RelayFlags& f) {
  relay::RelayOptions o;
  o.batch_size = f.batch;
  o.max_attempts = f.max_attempts;
  o.let_dead_pass = f.let_dead_pass;
  for (auto [text, field, flag] :
       {std::tuple{&f.timeout, &o.send_timeout, "--timeout"},
        std::tuple{&f.lease, &o.lease, "--lease"}, std::tuple{&f.poll, &o.poll_interval, "--poll"},
        std::tuple{&f.retention, &o.retention, "--retention"},
        std::tuple{&f.backoff_base, &o.backoff.base, "--backoff-base"},
        std::tuple{&f.backoff_cap, &o.backoff.cap, "--backoff-cap"}}) {
    absl::StatusOr<Millis> d = Duration(*text, flag);
    if (!d.ok()) return d.status();
    *field = *d;
  }
  absl::StatusOr<retry::Jitter> jitter = retry::ParseJitter(f.jitter);
  if (!jitter.ok())
    return absl::InvalidArgumentError("--jitter: use none, full, equal or decorrelated");
  o.backoff.jitter = *jitter;
  if (absl::Status valid = relay::ValidateRelayOptions(o); !valid.ok()) return valid;
  return o;
}

// The secret packaging/examples/relay.env ships: never a key anyone signs with. The relay
// refuses it, so that the example file cannot be started unedited.
constexpr std::string_view kPlaceholderSecret = "whsec_REPLACE_ME";

absl::StatusOr<std::unique_ptr<relay::Sink>> MakeHttpSink(const RelayFlags& f, Millis timeout) {
  if (f.url.empty()) return absl::InvalidArgumentError("--sink http needs --url");
  std::string secret = f.secret;
  const char* source = "--secret";
  if (secret.empty()) {
    const char* env = std::getenv("IDEM_WEBHOOK_SECRET");
    if (env != nullptr) secret = env;
    source = "IDEM_WEBHOOK_SECRET";
  }
  if (secret.empty()) {
    return absl::InvalidArgumentError(
        "--sink http needs --secret whsec_... (or IDEM_WEBHOOK_SECRET in the environment)");
  }
  if (secret == kPlaceholderSecret) {
    return absl::InvalidArgumentError(fmt::format(
        "{} is {}, the example's placeholder, not a secret: put one of your own in its place, "
        "made by `echo whsec_$(openssl rand -base64 32)`, and give the receiver the same one",
        source, kPlaceholderSecret));
  }
  auto sink = relay::HttpSink::Create({.url = f.url, .secret = secret, .timeout = timeout});
  if (!sink.ok()) return sink.status();
  return std::unique_ptr<relay::Sink>(std::move(*sink));
}

absl::StatusOr<std::unique_ptr<relay::Sink>> MakeSink(const RelayFlags& f, Millis timeout) {
  if (f.sink == "http") return MakeHttpSink(f, timeout);
  if (f.sink != "nats") {
    return absl::InvalidArgumentError(
        fmt::format("--sink '{}' is not known: use http or nats", f.sink));
  }
#ifdef IDEM_RELAY_WITH_NATS
  if (f.url.empty()) {
    return absl::InvalidArgumentError("--sink nats needs --url nats://HOST:PORT[,HOST:PORT...]");
  }
  if (f.subject_prefix.empty()) {
    return absl::InvalidArgumentError("--sink nats needs --subject-prefix (e.g. idem.events)");
  }
  auto sink = relay::NatsSink::Create({.url = f.url,
                                       .subject_prefix = f.subject_prefix,
                                       .timeout = timeout,
                                       .max_pending = f.max_in_flight});
  if (!sink.ok()) return sink.status();
  return std::unique_ptr<relay::Sink>(std::move(*sink));
#else
  return absl::InvalidArgumentError(
      "--sink nats: this idem was built without NATS (IDEM_WITH_NATS)");
#endif
}

// PostgreSQL: the LISTEN connection that wakes the relay at a commit, or null to poll only
// (SQLite, --once, --no-listen, or a LISTEN that failed: said on stderr).
std::unique_ptr<relay::WakeSource> MakeWake(const RelayFlags& f, relay::Dialect dialect) {
#ifdef IDEM_RELAY_WITH_POSTGRES
  if (dialect != relay::Dialect::kPostgres || f.once || f.no_listen) return nullptr;
  auto wake = relay::PgNotifyWake::Create(
      {.conninfo = f.store, .application_name = fmt::format("idem-relay-listen-{}", ::getpid())});
  if (wake.ok()) return std::move(*wake);
  spdlog::warn("idem relay: {}; polling every --poll instead",
               std::string(wake.status().message()));
#else
  (void)f;
  (void)dialect;
#endif
  return nullptr;
}

// Takes the SQLite relay lock: at once, or (--wait) retrying until it is free or a stop signal.
absl::StatusOr<std::unique_ptr<relay::RelayLock>> LockSqlite(const RelayFlags& f,
                                                             const std::atomic<bool>& stop) {
  absl::StatusOr<std::string> path = relay::SqlitePathOf(f.store);
  if (!path.ok()) return path.status();
  while (true) {
    auto lock = relay::RelayLock::TryAcquire(*path);
    if (lock.ok() || !absl::IsAborted(lock.status()) || !f.wait || stop.load()) return lock;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int Relay(const RelayFlags& f) {
  KeepFreedMemoryForReuse();
  // Blocked before any thread starts (a sink's client may start some), so that only the thread
  // below receives them; SIGHUP (systemctl reload) is answered there, never a stop.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  SetUpLogging(f.log);  // after the mask: the logging thread inherits it
  absl::StatusOr<relay::RelayOptions> options = MakeOptions(f);
  if (!options.ok()) return Fail(kExitUsage, std::string(options.status().message()));
  absl::StatusOr<relay::Dialect> dialect = relay::DialectOf(f.store);
  if (!dialect.ok()) return Fail(kExitUsage, std::string(dialect.status().message()));
  absl::StatusOr<std::unique_ptr<relay::Sink>> sink = MakeSink(f, options->send_timeout);
  if (!sink.ok()) return Fail(kExitUsage, std::string(sink.status().message()));
  if (!f.admin.empty()) {  // a malformed --admin is refused before the store is opened
    if (auto endpoint = http::ParseEndpoint(f.admin, "--admin"); !endpoint.ok())
      return Fail(kExitUsage, std::string(endpoint.status().message()));
  }

  std::atomic<bool> stop{false};
  relay::Relay* running = nullptr;
  std::mutex running_mu;
  std::thread signals([&] {
    int signal = 0;
    while (sigwait(&stop_signals, &signal) == 0 && signal == SIGHUP && !stop.load()) {
      spdlog::info("idem relay: {}", kRelaySighupNotice);
    }
    if (!stop.load()) NotifyStopping("finishing the batch under way");
    stop.store(true);
    std::lock_guard<std::mutex> lock(running_mu);
    if (running != nullptr) running->RequestStop();
  });
  auto finish = [&](int code) {
    if (!stop.exchange(true)) pthread_kill(signals.native_handle(), SIGTERM);
    signals.join();
    return code;
  };

  std::unique_ptr<relay::RelayLock> lock;
  if (*dialect == relay::Dialect::kSqlite) {
    auto locked = LockSqlite(f, stop);
    if (!locked.ok()) {
      return finish(Fail(absl::IsAborted(locked.status()) ? kExitLocked : kExitStore,
                         std::string(locked.status().message())));
    }
    lock = std::move(*locked);
  }
  StoreOptions store_options;
  store_options.create_if_missing = false;
  store_options.max_connections = 2;
  if (!f.lock_timeout.empty()) {
    absl::StatusOr<Millis> wait = Duration(f.lock_timeout, "--lock-timeout");
    if (!wait.ok()) return finish(Fail(kExitUsage, std::string(wait.status().message())));
    store_options.lock_timeout = *wait;
  }
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(f.store, store_options);
  if (!store.ok()) {
    const bool usage = absl::IsInvalidArgument(store.status()) || absl::IsNotFound(store.status());
    return finish(Fail(usage ? kExitUsage : kExitStore,
                       fmt::format("cannot open the store {}: {}", RedactStoreUri(f.store),
                                   std::string(store.status().message()))));
  }
  relay::RelayStore relay_store(**store, *dialect, fmt::format("relay-{}", ::getpid()));
  relay::RelayMetrics metrics;
  relay::Relay relay(relay_store, **sink, SystemClock(), *options, metrics);
  std::unique_ptr<http::AdminServer> admin;
  if (!f.admin.empty()) {
    auto started = http::AdminServer::Start(f.admin, "--admin", relay::RelayAdminHandler(metrics));
    if (!started.ok()) return finish(Fail(kExitUsage, std::string(started.status().message())));
    admin = std::move(*started);
  }
  {
    std::lock_guard<std::mutex> guard(running_mu);
    running = &relay;
    if (stop.load()) relay.RequestStop();
  }
  if (f.once) relay.SetWaiter([&](Millis) { relay.RequestStop(); });
  // Made before the first claim: a commit after it wakes the relay.
  std::unique_ptr<relay::WakeSource> wake = MakeWake(f, *dialect);
  relay.SetWakeSource(wake.get());
  spdlog::info("idem relay: publishing the outbox of {} to {}{}{}", RedactStoreUri(f.store), f.url,
               wake != nullptr ? " (woken by LISTEN idem_outbox)" : "",
               admin != nullptr ? fmt::format(", admin on {}", admin->address()) : "");
  NotifyReady("publishing the outbox");
  absl::Status ran = relay.Run();
  {
    std::lock_guard<std::mutex> guard(running_mu);
    running = nullptr;
  }
  spdlog::info("idem relay: sent {}, retried {}, dead {}", metrics.sent.load(),
               metrics.retried.load(), metrics.dead.load());
  if (absl::IsFailedPrecondition(ran)) return finish(Fail(kExitGone, std::string(ran.message())));
  if (!ran.ok()) return finish(Fail(kExitStore, std::string(ran.message())));
  return finish(kExitOk);
}

}  // namespace

void AddRelayCommand(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<RelayFlags>();
  CLI::App* cmd = app.add_subcommand("relay", "Publish the outbox, at least once, in order");
  cmd->footer(kFooter);
  cmd->add_option("--store", f->store, "The store: sqlite:PATH or postgresql://...")->required();
  cmd->add_option("--sink", f->sink, "Where messages go: http or nats")->required();
  cmd->add_option("--url", f->url,
                  "http: the endpoint each message is POSTed to; nats: nats://HOST:PORT, or a "
                  "list nats://HOST:PORT,HOST:PORT");
  cmd->add_option("--secret", f->secret,
                  "http: whsec_<base64> signing key (default: $IDEM_WEBHOOK_SECRET)");
  cmd->add_option("--subject-prefix", f->subject_prefix,
                  "nats: messages go to PREFIX.<topic> (JetStream must capture it)");
  cmd->add_option("--max-in-flight", f->max_in_flight,
                  "nats: publish acknowledgements outstanding at once (256)");
  cmd->add_option("--batch", f->batch, "Messages claimed at once (100)");
  cmd->add_option(
      "--timeout", f->timeout,
      "http: per message, connecting included; nats: per wave of acknowledgements (10s)");
  cmd->add_option("--max-attempts", f->max_attempts, "Attempts before a message is dead (10)");
  cmd->add_option("--backoff-base", f->backoff_base, "First retry's ceiling (1s)");
  cmd->add_option("--backoff-cap", f->backoff_cap, "Longest wait between attempts (5m)");
  cmd->add_option("--jitter", f->jitter, "none, full, equal or decorrelated (full)");
  cmd->add_flag("--let-dead-pass", f->let_dead_pass,
                "A dead message no longer holds back its aggregate's followers");
  cmd->add_option("--poll", f->poll, "Wait after finding nothing to send (1s)");
  cmd->add_option("--lease", f->lease, "PostgreSQL: how long a batch holds its aggregates (30s)");
  cmd->add_option("--retention", f->retention, "Sent messages are deleted after this (24h)");
  cmd->add_option("--lock-timeout", f->lock_timeout,
                  "How long a store call waits for a store locked by another process (5s)");
  cmd->add_option("--admin", f->admin, "HOST:PORT serving /metrics and /healthz (none)");
  cmd->add_flag("--no-listen", f->no_listen,
                "PostgreSQL: poll every --poll only, without LISTEN for commits");
  cmd->add_flag("--once", f->once, "Exit once nothing is left to send now");
  cmd->add_flag("--wait", f->wait, "SQLite: wait for a running relay to exit instead of failing");
  AddLogFlags(*cmd, f->log);
  cmd->callback([f, &exit_code] {
    exit_code = Relay(*f);
    spdlog::shutdown();
  });
}

}  // namespace idem::cli

// `idem serve`: the gateway that gives any HTTP API Idempotency-Key semantics (docs/gateway.md).
// This file only turns flags into settings and wires the parts together.
#include <fmt/format.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "cli/allocator_tuning.h"
#include "cli/commands.h"
#include "cli/log_setup.h"
#include "cli/service_notify.h"
#include "common/conninfo_secrets.h"
#include "gateway/config_file.h"
#include "gateway/forward.h"
#include "gateway/gateway_config.h"
#include "gateway/group_commit_key_service.h"
#include "gateway/log_format.h"
#include "gateway/metrics.h"
#include "gateway/server.h"
#include "gateway/sweeper.h"
#include "http/listen.h"
#include "http/tls.h"
#include "idem/retry/duration.h"
#include "idem/store.h"

namespace idem::cli {
namespace {

// Exit codes: a contract (docs/gateway.md); never renumber.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // the store, a listener or the upstream could not be set up
constexpr int kExitUsage = 2;   // bad flag or config file, or settings that cannot run

constexpr const char* kFooter = R"(Exit status:
  0  stopped by SIGTERM or SIGINT after draining
  1  the store cannot be opened, an address cannot be bound, the upstream does not resolve
  2  usage error: a bad flag, duration, size, address, port, upstream URL, store URI or config
     file (on the command line or in the file), --upstream-timeout not shorter than --lease, or
     a route that loses or delays answers without --allow-faults

Durations: 500ms, 30s, 1m, 24h. Sizes: 512, 64KiB, 1MiB.

Example:
  idem serve --listen 127.0.0.1:8080 --upstream http://127.0.0.1:9000 \
             --store sqlite:./idem.db --admin 127.0.0.1:8081)";

// Loads the settings again (the config file, then the flags over it), checked.
using Reread = std::function<absl::StatusOr<gateway::GatewayConfig>()>;

struct Flags {
  std::string listen, upstream, store, admin, config, lease, upstream_timeout, retention, max_body,
      tenant_header, lock_timeout, cache_bytes, cacert, record_wait, max_pending_bytes;
  LogSettings log;
  bool require_key = false;
  bool allow_faults = false;
  bool check_config = false;
  int io_threads = 0;
  int max_pending_outcomes = 0;
  int store_threads = 0;
  int store_writers = 0;
};

// Applies every flag given on the command line over `config` (the config file's settings).
absl::Status ApplyFlags(const Flags& f, const CLI::App& cmd, gateway::GatewayConfig& config) {
  auto given = [&](const char* name) { return cmd.count(name) > 0; };
  if (given("--listen")) config.listen = f.listen;
  if (given("--upstream")) config.upstream = f.upstream;
  if (given("--store")) config.store = f.store;
  if (given("--admin")) config.admin = f.admin;
  if (given("--cacert")) config.cacert = f.cacert;
  if (given("--tenant-header")) config.tenant_header = f.tenant_header;
  if (given("--require-key")) config.require_key = f.require_key;
  config.allow_faults = f.allow_faults;  // the command line's only: never from the file
  if (given("--io-threads")) config.io_threads = f.io_threads;
  if (given("--store-threads")) config.store_threads = f.store_threads;
  if (given("--store-writers")) config.store_writers = f.store_writers;
  if (given("--max-pending-outcomes")) config.max_pending_outcomes = f.max_pending_outcomes;
  if (given("--log-format")) config.log_format = f.log.format;
  if (given("--log-level")) config.log_level = f.log.level;
  struct DurationFlag {
    const char* name;
    const std::string& text;
    Millis& into;
  };
  for (const DurationFlag& d :
       {DurationFlag{"--lease", f.lease, config.lease},
        DurationFlag{"--upstream-timeout", f.upstream_timeout, config.upstream_timeout},
        DurationFlag{"--retention", f.retention, config.retention},
        DurationFlag{"--lock-timeout", f.lock_timeout, config.store_lock_timeout},
        DurationFlag{"--record-wait", f.record_wait, config.record_wait}}) {
    if (!given(d.name)) continue;
    absl::StatusOr<Millis> value = retry::ParseDuration(d.text);
    if (!value.ok())
      return absl::InvalidArgumentError(
          fmt::format("{}: {}", d.name, std::string(value.status().message())));
    d.into = *value;
  }
  struct SizeFlag {
    const char* name;
    const std::string& text;
    int64_t& into;
  };
  for (const SizeFlag& z :
       {SizeFlag{"--max-body", f.max_body, config.max_body},
        SizeFlag{"--cache-bytes", f.cache_bytes, config.cache_bytes},
        SizeFlag{"--max-pending-bytes", f.max_pending_bytes, config.max_pending_bytes}}) {
    if (!given(z.name)) continue;
    absl::StatusOr<int64_t> size = gateway::ParseByteSize(z.text);
    if (!size.ok())
      return absl::InvalidArgumentError(
          fmt::format("{}: {}", z.name, std::string(size.status().message())));
    z.into = *size;
  }
  return absl::OkStatus();
}

// An unreadable --cacert is a usage error, found before anything starts.
absl::Status CheckCacert(const std::string& file) {
  absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> tls =
      http::MakeClientTlsContext({.ca_file = file});
  if (!tls.ok())
    return absl::InvalidArgumentError(
        fmt::format("--cacert {}: {}", file, std::string(tls.status().message())));
  return absl::OkStatus();
}

// Addresses and the upstream URL that do not parse are usage errors, found before the store is
// opened; an address that parses but cannot be bound is found later (exit 1).
absl::Status CheckAddresses(const gateway::GatewayConfig& config) {
  if (absl::StatusOr<boost::asio::ip::tcp::endpoint> e =
          http::ParseEndpoint(config.listen, "--listen");
      !e.ok())
    return e.status();
  if (!config.admin.empty()) {
    if (absl::StatusOr<boost::asio::ip::tcp::endpoint> e =
            http::ParseEndpoint(config.admin, "--admin");
        !e.ok())
      return e.status();
  }
  return gateway::ParseUpstreamUrl(config.upstream).status();
}

// SIGTERM, SIGINT and SIGHUP (systemctl reload: answered, never a stop), blocked in the calling
// thread and so in every thread it starts afterwards: only the thread that waits for them with
// sigwait receives them. Called before the logging thread starts: a thread that did not block
// them could receive one and let its default action end the process without a drain.
sigset_t ServiceSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// Says, at start and at each reload, which routes lose or delay answers on purpose.
void WarnAboutFaults(const gateway::GatewayConfig& config) {
  for (const gateway::Route& route : config.routes) {
    std::string what;
    if (route.lose_answer_fraction > 0)
      what = fmt::format("loses {:g}%", route.lose_answer_fraction * 100);
    if (route.delay_answer_fraction > 0)
      what +=
          fmt::format("{}delays {:g}% by {}", what.empty() ? "" : " and ",
                      route.delay_answer_fraction * 100, retry::FormatDuration(route.delay_answer));
    if (!what.empty())
      spdlog::warn("--allow-faults: route {} {} of its recorded answers, on purpose",
                   route.path_prefix, what);
  }
}

// SIGHUP: re-reads `file` with `reread` and swaps the routes (gateway::Server::Reload); one log
// line says what happened. A file that does not load or validate, or that changes a setting only
// a restart applies, is refused and the running settings keep serving.
void ReloadOnSighup(gateway::Server& server, const std::string& file, const Reread& reread) {
  if (file.empty()) {
    spdlog::warn("SIGHUP: nothing to reload: idem serve was started without --config");
    return;
  }
  absl::StatusOr<gateway::GatewayConfig> next = reread();
  absl::Status swapped = next.ok() ? server.Reload(*next) : next.status();
  if (!swapped.ok()) {
    spdlog::error("SIGHUP: {} not reloaded, the running settings keep serving: {}", file,
                  std::string(swapped.message()));
    return;
  }
  spdlog::info("SIGHUP: reloaded {}: {} route(s); requests already read finish under the old ones",
               file, next->routes.size());
  spdlog::info("routes: {}", gateway::DescribeRouting(*next));
  SetLogLevel(ParseLogLevel(next->log_level).value_or(spdlog::level::info));
  WarnAboutFaults(*next);
}

// Runs the gateway until SIGTERM or SIGINT, reloading `file` at SIGHUP; returns the exit code.
int Serve(const gateway::GatewayConfig& config, const std::string& file, const Reread& reread) {
  KeepFreedMemoryForReuse();
  TurnOffSqliteMemoryStatistics();
  // Blocked in every thread (they inherit the mask); this thread waits for them below.
  const sigset_t stop_signals = ServiceSignals();
  // A store file that reaches the process's file size limit (ulimit -f) must fail the write it
  // was part of (SQLite: "database or disk is full", a 503), not kill the gateway.
  std::signal(SIGXFSZ, SIG_IGN);
  absl::StatusOr<std::unique_ptr<Store>> store =
      OpenStore(config.store, {.retention = config.retention,
                               .lock_timeout = config.store_lock_timeout,
                               .max_connections = gateway::StoreConnections(config)});
  if (!store.ok() &&
      (absl::IsInvalidArgument(store.status()) || absl::IsUnimplemented(store.status()))) {
    // A malformed store URI, or one this build cannot open: a usage error like a bad flag.
    std::fprintf(stderr, "idem serve: cannot open the store %s: %s\n",
                 RedactStoreUri(config.store).c_str(),
                 std::string(store.status().message()).c_str());
    return kExitUsage;
  }
  if (!store.ok()) {
    // No log line may carry a password (issue 12): the URI is shown redacted.
    spdlog::error("cannot open the store {}: {}{}", RedactStoreUri(config.store),
                  store.status().ToString(),
                  absl::IsUnavailable(store.status())
                      ? " (give a longer --lock-timeout to wait longer for a locked store)"
                      : "");
    return kExitFailed;
  }
  gateway::Metrics metrics;
  std::unique_ptr<gateway::KeyService> keys = gateway::NewGroupCommitKeyService(
      **store, metrics,
      {.readers = config.store_threads, .writers = gateway::StoreWriters(config)});
  absl::StatusOr<std::unique_ptr<gateway::Server>> server =
      gateway::StartServer(config, **store, *keys, metrics);
  if (!server.ok()) {
    spdlog::error("{}", std::string(server.status().message()));
    return kExitFailed;
  }
  gateway::Sweeper sweeper(**store, metrics, std::min<Millis>(config.retention, 60s));
  sweeper.Start();
  spdlog::info("idem serve: listening on {}, forwarding to {}, keys in {}{}",
               (*server)->listen_address(), config.upstream, RedactStoreUri(config.store),
               config.admin.empty() ? "" : ", admin on " + (*server)->admin_address());
  spdlog::info("routes: {}", gateway::DescribeRouting(config));
  WarnAboutFaults(config);
  NotifyReady(fmt::format("listening on {}", (*server)->listen_address()));
  int signal = 0;
  while (sigwait(&stop_signals, &signal) == 0 && signal == SIGHUP)
    ReloadOnSighup(**server, file, reread);
  NotifyStopping("finishing requests in flight");
  spdlog::info("{}: no new connections; finishing requests in flight (at most {})",
               signal == SIGTERM ? "SIGTERM" : "SIGINT",
               retry::FormatDuration(config.drain_timeout));
  sweeper.Stop();
  (*server)->Shutdown(config.drain_timeout);
  spdlog::info("idem serve stopped");
  return kExitOk;
}

// Loads the config file, applies the flags over it and serves; returns the exit code.
// The settings: the config file's (if any), the flags over them, checked. Errors:
// InvalidArgument saying what to fix (a usage error at start; a refused reload later).
absl::StatusOr<gateway::GatewayConfig> LoadSettings(const CLI::App& cmd, const Flags& f) {
  gateway::GatewayConfig config;
  if (!f.config.empty()) {
    absl::StatusOr<gateway::GatewayConfig> loaded = gateway::LoadConfigFile(f.config, config);
    if (!loaded.ok()) return absl::InvalidArgumentError(loaded.status().message());
    config = *std::move(loaded);
  }
  absl::Status s = ApplyFlags(f, cmd, config);
  if (s.ok()) s = gateway::ValidateConfig(config);
  if (s.ok()) s = CheckAddresses(config);
  if (s.ok() && !config.cacert.empty()) s = CheckCacert(config.cacert);
  if (!s.ok()) return s;
  return config;
}

// The warning for a config file that holds the store's password and that every user may read
// (the documented install is 0640 root:idem); empty when there is nothing to warn about.
std::string PasswordFileWarning(const std::string& file, const gateway::GatewayConfig& config) {
  struct stat st {};
  if (file.empty() || ConninfoSecretSpans(config.store).empty() || stat(file.c_str(), &st) != 0 ||
      (st.st_mode & S_IROTH) == 0)
    return "";
  return fmt::format(
      "{} holds the store's password and every user may read it (mode {:04o}): run "
      "`chown root:idem {} && chmod 0640 {}`, or keep the password out of the file "
      "(passfile=, PGPASSFILE or PGPASSWORD; see idem-serve.toml(5))",
      file, st.st_mode & 07777, file, file);
}

// --check-config: loads and checks the settings as a start or a reload would, opens nothing.
int CheckConfig(const CLI::App& cmd, const Flags& f) {
  absl::StatusOr<gateway::GatewayConfig> config = LoadSettings(cmd, f);
  if (config.ok() && !config->store.starts_with("sqlite:") &&
      !config->store.starts_with("postgresql://") && !config->store.starts_with("postgres://") &&
      !config->store.starts_with("nats://"))
    config = absl::InvalidArgumentError(
        fmt::format("store URI '{}' has no known scheme: use sqlite:PATH, postgresql://... or "
                    "nats://HOST:PORT?bucket=NAME",
                    RedactStoreUri(config->store)));
  if (!config.ok()) {
    const std::string why(config.status().message());
    const bool named = !f.config.empty() && why.rfind(f.config, 0) != 0 &&
                       why.find("config file") == std::string::npos;
    std::fprintf(stderr, "idem serve: %s%s\n", named ? (f.config + ": ").c_str() : "", why.c_str());
    return kExitUsage;
  }
  if (const std::string warning = PasswordFileWarning(f.config, *config); !warning.empty())
    std::fprintf(stderr, "idem serve: warning: %s\n", warning.c_str());
  std::printf("config ok\n");
  return kExitOk;
}

// Loads the settings, sets up logging as they say and serves; returns the exit code.
int RunServeCommand(const CLI::App& cmd, const Flags& f) {
  absl::StatusOr<gateway::GatewayConfig> config = LoadSettings(cmd, f);
  if (!config.ok()) {
    std::fprintf(stderr, "idem serve: %s\n", std::string(config.status().message()).c_str());
    return kExitUsage;
  }
  SetUpLogging({.format = config->log_format.empty() ? "text" : config->log_format,
                .level = config->log_level.empty() ? "info" : config->log_level});
  if (const std::string warning = PasswordFileWarning(f.config, *config); !warning.empty())
    spdlog::warn("{}", warning);
  return Serve(*config, f.config, [&cmd, &f] { return LoadSettings(cmd, f); });
}

}  // namespace

void AddServeCommand(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "serve", "Run the gateway that gives an HTTP API Idempotency-Key semantics");
  cmd->footer(kFooter);
  auto f = std::make_shared<Flags>();
  cmd->add_option("--listen", f->listen, "HOST:PORT to accept requests on");
  cmd->add_option("--upstream", f->upstream, "http(s)://HOST:PORT[/prefix] to forward requests to");
  cmd->add_option(
      "--cacert", f->cacert,
      "PEM file of CA certificates trusted for an https upstream, besides the system's");
  cmd->add_option("--store", f->store,
                  "Key store: sqlite:PATH, postgresql://... or nats://HOST:PORT,...?bucket=NAME");
  cmd->add_option("--admin", f->admin, "HOST:PORT for /healthz, /readyz and /metrics");
  cmd->add_option("--config", f->config, "TOML file with these settings and [[route]] tables");
  cmd->add_option("--lease", f->lease, "How long a claim holds without a heartbeat (30s)");
  cmd->add_option("--upstream-timeout", f->upstream_timeout,
                  "Longest upstream call; must be shorter than --lease (10s)");
  cmd->add_option("--retention", f->retention, "How long outcomes are replayed (24h)");
  cmd->add_option("--max-body", f->max_body, "Largest guarded request body (1MiB)");
  cmd->add_option("--cache-bytes", f->cache_bytes,
                  "Memory for replaying finished outcomes without a store call; 0: none (64MiB)");
  cmd->add_flag("--require-key", f->require_key, "POST and PATCH without a key get 400");
  cmd->add_flag("--allow-faults", f->allow_faults,
                "Let routes lose or delay answers on purpose (lose_answer_fraction, "
                "delay_answer_fraction): for testing clients' retries, never in production");
  cmd->add_option("--tenant-header", f->tenant_header, "Header naming the tenant of a key");
  cmd->add_option("--lock-timeout", f->lock_timeout,
                  "How long a store call waits for a store locked by another process (5s)");
  cmd->add_option("--record-wait", f->record_wait,
                  "How long a client waits for its outcome to be recorded when the store "
                  "fails; then 503 and the outcome is still recorded (5s)");
  cmd->add_option("--max-pending-outcomes", f->max_pending_outcomes,
                  "Outcomes kept while their recording is retried; past it, new guarded "
                  "requests get 503 (10000)");
  cmd->add_option("--max-pending-bytes", f->max_pending_bytes,
                  "Bytes of outcomes kept while their recording is retried (64MiB)");
  cmd->add_option("--io-threads", f->io_threads, "io threads (default: one per core)");
  cmd->add_option("--store-threads", f->store_threads,
                  "Threads reading the store for replays and waits (2)");
  cmd->add_option("--store-writers", f->store_writers,
                  "Threads writing the store, one batch in flight each (0: the default, 1)");
  AddLogFlags(*cmd, f->log);
  cmd->add_flag("--check-config", f->check_config,
                "Load and check the settings as a start or reload would, print `config ok` (exit "
                "0) or what is wrong (exit 2), and exit");
  cmd->callback([cmd, f, &exit_code] {
    if (f->check_config) {
      exit_code = CheckConfig(*cmd, *f);
      return;
    }
    ServiceSignals();  // before the logging thread starts
    exit_code = RunServeCommand(*cmd, *f);
    spdlog::shutdown();
  });
}

}  // namespace idem::cli

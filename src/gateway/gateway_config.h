// Internal: the settings of `idem serve` (DESIGN §3), from the command line and the config file
// (docs/gateway.md lists them with their defaults), and the routes that say which requests are
// guarded and how.
//
// Thread-safety: plain values; immutable once the server starts, then shared freely.
#ifndef IDEM_GATEWAY_GATEWAY_CONFIG_H_
#define IDEM_GATEWAY_GATEWAY_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/outcome.h"

namespace idem::gateway {

using namespace std::chrono_literals;

// What a second arrival gets while the first is still running.
enum class InFlightPolicy {
  kConflict,  // 409 with Retry-After (default)
  kWait,      // wait up to Route::wait_max for the outcome, then replay it (409 if still running)
};

// Where a guarded route finds the key.
enum class KeySource {
  kHeader,       // the header named by Route::key_header (default Idempotency-Key)
  kJsonPointer,  // a string or number at Route::key_pointer in a JSON body
};

// How the completer drives a claim of the route whose holder died (lease lapsed) to a definitive
// state without waiting for a client's retry (docs/gateway.md, "Recovering lapsed claims").
enum class RecoverMode {
  kOff,     // nothing: the key waits for a retry (default)
  kResend,  // send the stored request again, same Idempotency-Key (an upstream that deduplicates)
  kStatus,  // GET Route::status_url: 200 records that answer, 404 releases the key
};

// true for the fields that carry who sends a request (Authorization, Proxy-Authorization,
// Cookie, any case): a claim's stored request keeps them only when its route names them
// (Route::recover_credentials).
bool IsCredentialField(std::string_view name);

struct Route {
  // Methods guarded (as sent, e.g. "POST"). Default: POST and PATCH.
  std::vector<std::string> methods = {"POST", "PATCH"};
  // Path prefix the request target must start with. Default "/": every path.
  std::string path_prefix = "/";
  // true: a request without a key is refused with 400. Default false: it passes through unguarded.
  bool key_required = false;
  KeySource key_source = KeySource::kHeader;
  std::string key_header = "Idempotency-Key";  // kHeader: a header name, any case
  std::string key_pointer;                     // kJsonPointer: an RFC 6901 pointer, e.g. "/id"
  InFlightPolicy in_flight = InFlightPolicy::kConflict;
  Millis wait_max = 0ms;                    // kWait: the longest a duplicate waits
  std::vector<std::string> replay_headers;  // replayed besides Content-Type and Location
  std::vector<int> final_statuses;          // stored and replayed even if transient by default
  std::vector<int> transient_statuses;      // never stored even if final by default
  // Recovery of this route's lapsed claims; with it a claim also stores the forwarded request.
  RecoverMode recover = RecoverMode::kOff;
  // kStatus: the target asked on the upstream, "{key}" replaced by the percent-encoded key.
  std::string status_url;
  // kStatus: the status recorded instead of the status URL's 200 (e.g. 201); 0: keep 200.
  int recovered_status = 0;
  // The credential fields (Authorization, Proxy-Authorization, Cookie) a claim's stored request
  // keeps, by name, for the recovery's re-send or status ask; any other is left out. Default none.
  std::vector<std::string> recover_credentials;
  // Faults for testing clients (docs/gateway.md, "Testing a client's retries"), honoured only with
  // GatewayConfig::allow_faults: of the requests whose outcome this gateway records, the fraction
  // (0 to 1, together at most 1) whose answer is lost (the connection closed unanswered once the
  // outcome is recorded) or delayed by delay_answer. Default 0: none.
  double lose_answer_fraction = 0;
  double delay_answer_fraction = 0;
  Millis delay_answer = 0ms;  // above 0 exactly when delay_answer_fraction is

  // Whether the route loses or delays any answer on purpose.
  bool HasAnswerFaults() const { return lose_answer_fraction > 0 || delay_answer_fraction > 0; }
  // A header that carries the key's fence (the claim's, or the completer's after a takeover) on
  // every guarded forward and every recovery request, replacing any the client sent, so that an
  // upstream can refuse a holder older than one it has seen. Default (empty): none.
  std::string fence_header;

  bool operator==(const Route&) const = default;
};

// What a request gets whose path no route's path_prefix covers, when routes are configured (the
// config file's `unmatched`).
enum class Unmatched {
  kGuard,  // the top-level guard, as with no routes (POST and PATCH, require_key) (default)
  kPass,   // passes through unguarded: only the routes' paths are guarded
};

struct GatewayConfig {
  std::string listen;    // HOST:PORT the proxy listens on. Required.
  std::string upstream;  // http(s)://HOST:PORT[/prefix] requests are forwarded to. Required.
  std::string cacert;    // PEM file of CAs trusted for an https upstream besides the system's
  std::string store;     // store URI (sqlite:PATH, postgresql://...). Required.
  std::string admin;     // HOST:PORT of the admin listener; empty: none.
  Millis lease = 30s;
  Millis upstream_timeout = 10s;
  Millis retention = 24h;
  // How long a store call waits for a lock another process holds (StoreOptions::lock_timeout).
  Millis store_lock_timeout = 5s;
  int64_t max_body = 1 << 20;  // bytes; a larger body is refused with 413
  // Bytes of finished outcomes kept in memory for replays (ReplayCache); 0: no cache.
  int64_t cache_bytes = 64 << 20;
  bool require_key = false;   // the default route requires a key
  std::string tenant_header;  // empty: SHA-256 of Authorization, else the global scope
  int io_threads = 0;         // 0: one per core
  int store_threads = 2;      // threads reading the store (gets)
  // Threads writing the store, each applying one batch at a time to its own share of the keys;
  // 0 (default): StoreWriters()'s default, 1.
  int store_writers = 0;
  int max_connections = 10000;
  // Requests one client connection may carry; the answer to the last says Connection: close.
  int max_requests_per_connection = 10000;
  Millis header_timeout = 10s;  // to read a request's headers
  Millis body_timeout = 30s;    // to read a request's body
  Millis drain_timeout = 10s;   // SIGTERM: how long in-flight requests may still finish
  // How long a client waits for its outcome to be recorded when the store does not take it at
  // once (the outcome is kept and its recording retried); past it the client gets 503
  // outcome-not-recorded and retries with the same key.
  Millis record_wait = 5s;
  // Outcomes kept in memory while their recording is retried, by count and bytes; past either
  // bound a new guarded request gets 503 before anything is forwarded.
  int max_pending_outcomes = 10000;
  int64_t max_pending_bytes = 64 << 20;
  std::vector<Route> routes;  // first match wins; empty: one default route
  // Requests on paths no route covers: guarded by the default route unless the file says "pass".
  Unmatched unmatched = Unmatched::kGuard;
  // The completer (routes with `recover`): how often each gateway looks for lapsed claims, and
  // the most recovery attempts one key gets before it is recorded failed_final.
  Millis recover_interval = 5s;
  int recover_attempts = 10;
  // How the process logs, from the config file (empty: not set there); --log-format and
  // --log-level win over them. log_level reloads; log_format only a restart applies.
  std::string log_format;  // "text" or "json"
  std::string log_level;   // trace, debug, info, warning (or warn), error, critical, off
  // --allow-faults (command line only): routes may lose or delay answers on purpose. Without it
  // a route that sets lose_answer_fraction or delay_answer_fraction is refused (ValidateConfig).
  bool allow_faults = false;
};

// Returns the route guarding `method` and `target`, or nullptr when the request passes through.
// With no routes configured, the default Route (POST and PATCH, every path) applies, with
// key_required from config.require_key. With routes, a target some route's path_prefix covers is
// decided by the routes alone (the first whose prefix and methods match; none: pass through); any
// other target gets the default Route too, unless config.unmatched is kPass. Adding a route never
// unguards the paths it does not name.
const Route* FindRoute(const GatewayConfig& config, std::string_view method,
                       std::string_view target);

// Returns one line saying which requests are guarded and which pass through, route by route and
// for every other path, e.g. "POST /webhooks guarded (key from header webhook-id, required);
// POST, PATCH on every other path guarded (key from header Idempotency-Key, optional)". Logged
// at start and at each reload.
std::string DescribeRouting(const GatewayConfig& config);

// Returns the class of an upstream `status` on `route`: the retry toolkit's default rules
// (OutcomeClassifier), overridden by 409 transient, then by the route's final statuses, then by
// its transient statuses (a status in both lists is transient). Builds no classifier: it runs
// once per executed request.
OutcomeClass ClassifyOutcome(const Route& route, int status);

// Returns the writer threads for config.store: store_writers when set, else 1 on every store.
// SQLite has one write lock (a second writer only waits for it). On PostgreSQL several writers
// keep several batches in flight, but each batch is smaller and costs its own statements and
// commit: measured on 2 cores shared with the server, the upstream and the load, 4 writers doubled
// the server's CPU per request and carried fewer requests (bench/RESULTS.md, Session 13), so more
// than one pays only where the database has cores of its own and round trips are long.
int StoreWriters(const GatewayConfig& config);

// Returns the most store connections `idem serve` opens (StoreOptions::max_connections): one per
// writer and reader thread, two more for the sweeper and the completer, and at least 8.
int StoreConnections(const GatewayConfig& config);

// Returns OK when the settings can run, else InvalidArgument saying what to change: a missing
// listen, upstream or store; upstream_timeout not shorter than lease; a non-positive duration or
// size; a route without methods, a path prefix not starting with '/', a bad header name or JSON
// pointer, a wait bound of zero or longer than the lease, a status outside 100-599, a route that
// loses or delays answers without allow_faults.
absl::Status ValidateConfig(const GatewayConfig& config);

// Returns OK when the route at position `index` (0-based) can run under `lease`, else
// InvalidArgument starting "route N (PREFIX): " and saying what to change (the route checks of
// ValidateConfig).
absl::Status ValidateRoute(const Route& route, Millis lease, size_t index);

// Returns the names (as in the config file) of the settings that differ between `running` and
// `next` and that only a restart applies: every setting but the routes and require_key, which a
// reload (SIGHUP) swaps for new requests. Empty when only those differ.
std::vector<std::string> RestartSettingsChanged(const GatewayConfig& running,
                                                const GatewayConfig& next);

// Parses a size such as "512", "64KiB", "1MiB", "1GiB" (also KB/MB/GB as powers of 1000).
// Errors: InvalidArgument naming the accepted forms.
absl::StatusOr<int64_t> ParseByteSize(std::string_view text);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_GATEWAY_CONFIG_H_

#include "gateway/session.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#pragma GCC diagnostic pop

#include "gateway/answer_faults.h"
#include "gateway/forward.h"
#include "gateway/guard_outcome.h"
#include "gateway/guarded_call.h"
#include "gateway/hop_by_hop.h"
#include "gateway/log_format.h"
#include "gateway/problem_json.h"
#include "gateway/request_decision.h"
#include "gateway/request_head.h"
#include "gateway/trailer_filter.h"

namespace idem::gateway {
namespace {

namespace hc = ::idem::http;
using SteadyClock = std::chrono::steady_clock;
constexpr uint32_t kRequestHeaderLimit = 64 * 1024;
constexpr Millis kLinger = 2s;

std::vector<Header> HeadersOf(const http::fields& fields) {
  std::vector<Header> out;
  out.reserve(static_cast<size_t>(std::distance(fields.begin(), fields.end())));
  for (const auto& f : fields)
    out.push_back({std::string(f.name_string()), std::string(f.value())});
  return out;
}

// The client's X-Request-Id when it is short and printable, else a new one.
std::string RequestId(const http::fields& fields) {
  auto it = fields.find("X-Request-Id");
  if (it != fields.end() && !it->value().empty() && it->value().size() <= 64 &&
      std::all_of(it->value().begin(), it->value().end(),
                  [](char c) { return c > 0x20 && c < 0x7f; }))
    return std::string(it->value());
  static std::atomic<uint64_t> counter{0};
  static const unsigned pid = static_cast<unsigned>(getpid());  // a system call per request saved
  return fmt::format("{:x}-{}", pid, counter.fetch_add(1, std::memory_order_relaxed) + 1);
}

StoredResponse RequestProblem(absl::Status status) {
  return ProblemResponse(ProblemFor(status, Origin::kRequest));
}

// Meets `Expect: 100-continue` (RFC 9110 §10.1.1): a client that sends it waits for a 100 before
// sending the body (curl for a second, others until their own timeout), so it is answered once
// the request is known to be read, unless the body is arriving already (or there is none, or the
// client speaks HTTP/1.0, which has no 1xx). The expectation is met here, so it is not forwarded:
// an upstream's own 100 would be relayed as its answer.
asio::awaitable<void> MeetExpectContinue(hc::Stream& stream, const beast::flat_buffer& buffer,
                                         http::request_parser<http::empty_body>& head,
                                         Millis timeout) {
  http::request_header<>& h = head.get();
  const auto expect = h.find(http::field::expect);
  if (expect == h.end() || !beast::iequals(expect->value(), "100-continue")) co_return;
  h.erase(expect);
  if (h.version() < 11 || head.is_done() || buffer.size() > 0) co_return;
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  stream.tcp().expires_after(timeout);
  co_await asio::async_write(stream, asio::buffer(kContinue), kTuple);  // a failure: no body
}

// Reads the body into `parser` within `timeout`. Returns the read's error, beast::error::timeout
// when the body did not arrive in time. A timer cancels the read instead of the stream's own
// timeout, which would close the socket: the client is still owed a 408.
asio::awaitable<beast::error_code> ReadBody(hc::Stream& stream, beast::flat_buffer& buffer,
                                            http::request_parser<http::string_body>& parser,
                                            Millis timeout) {
  stream.tcp().expires_never();
  // Usually the body arrived with the header and is in `buffer` already: parsed from there, it
  // needs no timer, no shared state for it and no read operation.
  while (!parser.is_done() && buffer.size() > 0) {
    beast::error_code ec;
    const size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == http::error::need_more) break;
    if (ec) co_return ec;
    if (used == 0) break;
  }
  if (parser.is_done()) co_return beast::error_code{};
  struct State {
    bool fired = false;
    bool done = false;
  };
  auto state = std::make_shared<State>();
  asio::steady_timer timer(co_await asio::this_coro::executor, timeout);
  timer.async_wait([state, &stream](beast::error_code ec) {
    if (ec || state->done) return;
    state->fired = true;
    beast::error_code ignored;
    stream.tcp().socket().cancel(ignored);
  });
  auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple);
  state->done = true;
  timer.cancel();
  co_return state->fired ? beast::error_code(beast::error::timeout) : ec;
}

// Closes the sending side after a last answer and reads (and drops) what the client still sends
// for a while, so that its unread data does not make the kernel reset the connection before the
// client has read the answer. A coroutine of its own: its 16 KiB sink would otherwise be part of
// every answer's coroutine frame, an allocation of its own on each request.
asio::awaitable<void> Linger(hc::Stream& stream) {
  beast::error_code ignored;
  stream.tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
  std::array<char, 16384> sink;
  stream.tcp().expires_after(kLinger);
  for (size_t drained = 0; drained < (8u << 20);) {
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(sink), kTuple);
    if (ec) break;
    drained += n;
  }
}

struct Outcome {
  bool keep_alive = false;
  Decision decision = Decision::kInvalid;
  int status = 0;
  const Route* route = nullptr;  // the route that guarded the request, for the log line
  std::string key;               // its key, for the log line (only when it is written)
  // The settings `route` belongs to, kept until the line is logged: a reload meanwhile frees them.
  std::shared_ptr<const GatewayConfig> rules;
};

// Whether `outcome` is an upstream failure, logged at warning whatever the level: the upstream
// unreachable, too slow or garbled (502, 504), or a 5xx answer forwarded (guarded or not).
bool IsUpstreamFailure(const Outcome& outcome) {
  if (outcome.decision == Decision::kUpstreamError) return true;
  return outcome.status >= 500 &&
         (outcome.decision == Decision::kExecuted || outcome.decision == Decision::kTransient ||
          outcome.decision == Decision::kPassThrough);
}

// Reads the body of a guarded request, then claims, forwards and records it. `headers` are the
// head's, as the head decision saw them. Unless `may_keep_alive`, the answer closes the connection.
asio::awaitable<Outcome> HandleGuarded(GatewayContext& ctx, UpstreamPool& pool, hc::Stream& stream,
                                       beast::flat_buffer& buffer,
                                       http::request_parser<http::empty_body>& head,
                                       std::vector<Header> headers, const GatewayConfig& rules,
                                       const Route& route, const std::string& id,
                                       bool may_keep_alive) {
  const unsigned version = head.get().version();
  const bool keep_alive = head.get().keep_alive() && may_keep_alive && !ctx.draining;
  // Worded only when it is the answer: a status with a formatted message is two allocations.
  const auto too_large = [&ctx] {
    return absl::ResourceExhaustedError(fmt::format(
        "the request body is larger than the gateway's limit of {} bytes; send a smaller body",
        ctx.config.max_body));
  };
  if (head.content_length().value_or(0) > static_cast<uint64_t>(ctx.config.max_body)) {
    StoredResponse r = RequestProblem(too_large());
    co_await Answer(stream, r, version, false, ctx.config.body_timeout);
    co_return Outcome{false, Decision::kInvalid, r.status};
  }
  if (absl::Status coding = GuardableCoding(head.get()); !coding.ok()) {
    StoredResponse r = RequestProblem(std::move(coding));
    co_await Answer(stream, r, version, false, ctx.config.body_timeout);
    co_return Outcome{false, Decision::kInvalid, r.status};
  }
  co_await MeetExpectContinue(stream, buffer, head, ctx.config.body_timeout);
  http::request_parser<http::string_body> parser(std::move(head));
  TrailerFilter trailer;  // trailer fields never decide the tenant or key, nor are forwarded
  trailer.Watch(parser);
  parser.body_limit(static_cast<uint64_t>(ctx.config.max_body));
  const beast::error_code ec = co_await ReadBody(stream, buffer, parser, ctx.config.body_timeout);
  if (ec == http::error::body_limit || ec == beast::error::timeout) {
    StoredResponse r = RequestProblem(
        ec == http::error::body_limit
            ? too_large()
            : absl::DeadlineExceededError(
                  fmt::format("the request body did not arrive within {} ms; nothing was forwarded",
                              ctx.config.body_timeout.count())));
    co_await Answer(stream, r, version, false, ctx.config.body_timeout);
    co_return Outcome{false, Decision::kInvalid, r.status};
  }
  if (ec) co_return Outcome{false, Decision::kInvalid, 0};  // truncated body: nothing to answer
  trailer.Drop();
  http::request<http::string_body> request = parser.release();
  const RequestView view{.method = request.method_string(),
                         .target = request.target(),
                         .headers = &headers,
                         .body = request.body()};
  absl::StatusOr<std::optional<GuardedRequest>> guarded = DecideGuarded(rules, route, view);
  GuardedAnswer answer;
  if (!guarded.ok()) {
    answer = {RequestProblem(guarded.status()), Decision::kInvalid};
  } else if (!guarded->has_value()) {
    answer = co_await ForwardUnguarded(ctx, pool, std::move(request));
  } else {
    answer = co_await RunGuarded(ctx, pool, route, **guarded, std::move(request), id);
    // Faults for testing clients, once the outcome is recorded (answer_faults.h); tested here
    // first so that a route without them costs no coroutine.
    if (answer.decision == Decision::kExecuted && ctx.config.allow_faults &&
        route.HasAnswerFaults()) {
      const AnswerFault fault =
          co_await HoldBackAnswer(route, ctx.config.allow_faults, ctx.metrics);
      if (fault == AnswerFault::kLose) {
        co_await Linger(stream);  // closed without a byte of the answer
        co_return Outcome{false, answer.decision, 0, &route};
      }
    }
  }
  const int status = answer.response.status;
  const bool keep = co_await Answer(stream, std::move(answer.response), version, keep_alive,
                                    ctx.config.body_timeout);
  Outcome outcome{keep, answer.decision, status, &route};
  if (guarded.ok() && guarded->has_value() && spdlog::should_log(spdlog::level::debug))
    outcome.key = (*guarded)->scope.key;
  co_return outcome;
}

// Handles one request whose header `head` holds; returns what happened. Unless `may_keep_alive`
// (the connection's last request), its answer says Connection: close.
asio::awaitable<Outcome> HandleRequest(GatewayContext& ctx, UpstreamPool& pool, hc::Stream& stream,
                                       beast::flat_buffer& buffer,
                                       http::request_parser<http::empty_body>& head,
                                       const std::string& id, bool may_keep_alive) {
  absl::Status unreadable = AmbiguousFraming(head);
  if (unreadable.ok()) unreadable = ToOriginForm(head.get());
  DropClientHopByHopFields(head.get());
  std::vector<Header> headers = HeadersOf(head.get().base());
  const RequestView view{
      .method = head.get().method_string(), .target = head.get().target(), .headers = &headers};
  // The routes this request is decided by, kept to its end: a reload (SIGHUP) meanwhile applies
  // to later requests only.
  std::shared_ptr<const GatewayConfig> snapshot = ctx.rules.load();
  const GatewayConfig& rules = snapshot != nullptr ? *snapshot : ctx.config;
  const HeadDecision decision =
      unreadable.ok() ? DecideHead(rules, view)
                      : HeadDecision{.kind = HeadDecision::Kind::kReject, .error = unreadable};
  switch (decision.kind) {
    case HeadDecision::Kind::kReject: {
      StoredResponse r = RequestProblem(decision.error);
      co_await Answer(stream, r, head.get().version(), false, ctx.config.body_timeout);
      co_return Outcome{false, Decision::kInvalid, r.status};
    }
    case HeadDecision::Kind::kPassThrough: {
      co_await MeetExpectContinue(stream, buffer, head, ctx.config.body_timeout);
      http::request_parser<http::buffer_body> relay(std::move(head));
      relay.body_limit(boost::none);
      int status = 0;
      const bool keep =
          co_await RelayPassThrough(stream, buffer, relay, pool, ctx.config.upstream_timeout,
                                    may_keep_alive && !ctx.draining, &status);
      if (!keep) co_await Linger(stream);
      co_return Outcome{keep, Decision::kPassThrough, status};
    }
    case HeadDecision::Kind::kGuard:
      break;
  }
  Outcome outcome = co_await HandleGuarded(ctx, pool, stream, buffer, head, std::move(headers),
                                           rules, *decision.route, id, may_keep_alive);
  outcome.rules = std::move(snapshot);
  co_return outcome;
}

// Logs one request's line: at debug, or at warning for an upstream failure (then also naming
// the route in a text line; a JSON line has its route member).
void LogRequest(const std::string& id, std::string_view method, std::string_view target,
                const Outcome& outcome, SteadyClock::duration took) {
  std::string line = RequestLogLine(
      {.request_id = id,
       .method = method,
       .target = target,
       .route = outcome.route != nullptr ? std::string_view(outcome.route->path_prefix) : "",
       .decision = DecisionName(outcome.decision),
       .status = outcome.status,
       .milliseconds = std::chrono::duration<double, std::milli>(took).count(),
       .key = outcome.key});
  if (!IsUpstreamFailure(outcome)) {
    spdlog::debug("{}", line);
    return;
  }
  if (CurrentLogFormat() == LogFormat::kText)
    line += outcome.route != nullptr
                ? " (upstream failure, route " + outcome.route->path_prefix + ")"
                : std::string(" (upstream failure, passed through)");
  spdlog::warn("{}", line);
}

}  // namespace

asio::awaitable<bool> Answer(hc::Stream& stream, StoredResponse response, unsigned version,
                             bool keep_alive, Millis timeout) {
  const bool keep =
      co_await WriteResponse(stream, std::move(response), keep_alive, version, timeout);
  if (keep) co_return true;
  co_await Linger(stream);
  co_return false;
}

void ClientConnections::Add(Entry& entry) {
  entry.prev = end_.prev;
  entry.next = &end_;
  end_.prev->next = &entry;
  end_.prev = &entry;
}

void ClientConnections::Remove(Entry& entry) {
  entry.prev->next = entry.next;
  entry.next->prev = entry.prev;
  entry.prev = entry.next = nullptr;
}

void ClientConnections::StopReadingHeads() {
  for (Entry* e = end_.next; e != &end_; e = e->next) {
    if (e->reading_head) e->stream->tcp().cancel();
  }
}

asio::awaitable<void> ServeConnection(GatewayContext& ctx, UpstreamPool& pool,
                                      ClientConnections& connections, tcp::socket socket) {
  ctx.metrics.open_connections.fetch_add(1, std::memory_order_relaxed);
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  hc::Stream stream(std::move(socket));
  beast::flat_buffer buffer;
  // Listed while open: a drain cancels the head read below on every connection at once. The
  // draining flag is checked right before each read starts, on this thread, and the drain's
  // cancellation runs on this thread after the flag is set, so no read starts after it unseen.
  ClientConnections::Entry entry{.stream = &stream};
  connections.Add(entry);
  struct Unlist {  // also when the frame is destroyed unfinished (the io thread stopped)
    ClientConnections& connections;
    ClientConnections::Entry& entry;
    ~Unlist() { connections.Remove(entry); }
  } unlist{connections, entry};
  std::string method, target;
  for (int served = 0; !ctx.draining; ++served) {
    http::request_parser<http::empty_body> head;
    head.header_limit(kRequestHeaderLimit);
    head.body_limit(boost::none);
    stream.tcp().expires_after(ctx.config.header_timeout);
    entry.reading_head = true;
    auto [ec, n] = co_await http::async_read_header(stream, buffer, head, kTuple);
    entry.reading_head = false;
    if (ec == asio::error::operation_aborted) break;  // the gateway drains
    if (ec) {
      // A malformed header gets a 400; a client that closed or went quiet is just dropped.
      if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
          ec != http::error::end_of_stream) {
        const StoredResponse bad = RequestProblem(absl::InvalidArgumentError(
            fmt::format("the request is not valid HTTP/1.1: {}", ec.message())));
        co_await Answer(stream, bad, 11, false, ctx.config.body_timeout);
      }
      break;
    }
    const auto start = SteadyClock::now();
    ctx.in_flight.BeginRequest();
    const std::string id = RequestId(head.get().base());
    // Copied for the log line (at debug, or for an upstream failure's warning): the request is
    // moved on below. The strings are the connection's, so only a longer target allocates.
    const bool log = spdlog::should_log(spdlog::level::debug);
    method.assign(head.get().method_string());
    target.assign(head.get().target());
    // The last request a connection may carry is answered with Connection: close: a client told
    // so opens a new connection for its next request instead of sending it into a closed one.
    const bool last = served + 1 >= ctx.config.max_requests_per_connection;
    const Outcome outcome = co_await HandleRequest(ctx, pool, stream, buffer, head, id, !last);
    ctx.in_flight.EndRequest();
    ctx.metrics.Count(outcome.decision);
    ctx.metrics.request_seconds.Observe(SteadyClock::now() - start);
    if (log || IsUpstreamFailure(outcome))
      LogRequest(id, method, target, outcome, SteadyClock::now() - start);
    if (!outcome.keep_alive) break;
  }
  stream.Close();
  ctx.metrics.open_connections.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace idem::gateway

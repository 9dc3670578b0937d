#include "gateway/session.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#pragma GCC diagnostic pop

#include "gateway/forward.h"
#include "gateway/guard_outcome.h"
#include "gateway/guarded_call.h"
#include "gateway/problem_json.h"
#include "gateway/request_decision.h"

namespace idem::gateway {
namespace {

namespace hc = ::idem::http;
using SteadyClock = std::chrono::steady_clock;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr uint32_t kHeaderLimit = 64 * 1024;
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

// Returns why the request's body length is ambiguous, OK when it is not. Where a front end and the
// server behind it read a body's end differently, a client can hide a request in another's body
// (request smuggling, RFC 9112 §6.1, §11.2). The parser already refuses a Content-Length beside
// chunked and two different Content-Lengths, but takes a Transfer-Encoding whose last coding is not
// one chunked (`gzip`, `chunked, gzip`, `chunked, chunked`) for "no body", where the upstream may
// read one; and an HTTP/1.0 message's Transfer-Encoding cannot be trusted at all.
absl::Status AmbiguousFraming(const http::request_parser<http::empty_body>& head) {
  const http::request_header<>& h = head.get();
  if (h.find(http::field::transfer_encoding) == h.end()) return absl::OkStatus();
  if (h.version() < 11)
    return absl::InvalidArgumentError(
        "an HTTP/1.0 request cannot carry Transfer-Encoding; send its body with Content-Length");
  if (!head.chunked())
    return absl::InvalidArgumentError(
        "the request's Transfer-Encoding does not end in a single chunked, so its body length is "
        "ambiguous; send Content-Length or Transfer-Encoding: chunked");
  return absl::OkStatus();
}

// Returns `path` in the one spelling routes match: percent-encoded unreserved characters decoded
// and dot segments removed (RFC 3986 §6.2.2.2, §5.2.4), which name the same resource. Otherwise
// "/%63harges" or "/x/../charges" would pass by a route for "/charges" that an upstream
// normalising its paths serves.
std::string NormalPath(std::string_view path) {
  const auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string decoded;
  decoded.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size() && hex(path[i + 1]) >= 0 &&
        hex(path[i + 2]) >= 0) {
      const char c = static_cast<char>(hex(path[i + 1]) * 16 + hex(path[i + 2]));
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
          c == '~') {
        decoded.push_back(c);
        i += 2;
        continue;
      }
    }
    decoded.push_back(path[i]);
  }
  std::string out;
  std::string_view in = decoded;
  const auto drop_last_segment = [&out] { out.erase(std::min(out.size(), out.rfind('/'))); };
  while (!in.empty()) {
    if (in.starts_with("../")) {
      in.remove_prefix(3);
    } else if (in.starts_with("./") || in.starts_with("/./")) {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.starts_with("/../")) {
      in.remove_prefix(3);
      drop_last_segment();
    } else if (in == "/..") {
      in = "/";
      drop_last_segment();
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      const size_t end = in.find('/', 1);
      out.append(in.substr(0, end));
      in.remove_prefix(std::min(end, in.size()));
    }
  }
  return out.empty() ? "/" : out;
}

// Reads the request's target as its path (origin-form, "/path?query") in the spelling routes
// match (NormalPath); returns why it cannot. Routes match paths and the upstream's path prefix is
// put before the target, so a target without its leading "/" would pass by a route that requires
// a key or reach past the prefix ("/api" + "-internal"). The absolute-form ("http://host/path"),
// which a server must accept (RFC 9112 §3.2.2), is rewritten to its path; OPTIONS's "*" is passed
// on; anything else is refused.
absl::Status ToOriginForm(http::request_header<>& h) {
  std::string_view target = h.target();
  if (target == "*" && h.method() == http::verb::options) return absl::OkStatus();
  std::string origin;
  if (!target.starts_with('/')) {
    const size_t scheme = target.find("://");
    if (scheme == std::string_view::npos || !(beast::iequals(target.substr(0, scheme), "http") ||
                                              beast::iequals(target.substr(0, scheme), "https")))
      return absl::InvalidArgumentError(
          "the request target is not a path; send it as /path?query (or as http://host/path)");
    const std::string_view rest = target.substr(scheme + 3);
    const size_t path = rest.find_first_of("/?");
    origin = path == std::string_view::npos || rest[path] == '?' ? "/" : "";
    if (path != std::string_view::npos) origin.append(rest.substr(path));
    target = origin;
  }
  const size_t query = target.find('?');
  const std::string_view path = target.substr(0, query);
  if (path.find('%') == std::string_view::npos && path.find("/.") == std::string_view::npos) {
    if (!origin.empty()) h.target(origin);
    return absl::OkStatus();
  }
  std::string normal = NormalPath(path);
  if (query != std::string_view::npos) normal.append(target.substr(query));
  h.target(normal);
  return absl::OkStatus();
}

// Drops the client's hop-by-hop fields (RFC 9110 §7.6.1): they describe its connection to the
// gateway, not the request, and an Upgrade forwarded could switch a pooled upstream connection to
// another protocol. Connection keeps only close and keep-alive (the gateway reads them for the
// client's connection and writes its own when forwarding); the fields it names go too, but the
// body's framing and Host, which the gateway itself reads.
void DropHopByHopFields(http::request_header<>& h) {
  std::string kept;
  std::vector<std::string> named;
  for (auto [it, end] = h.equal_range(http::field::connection); it != end; ++it) {
    for (const std::string_view token : http::token_list(it->value())) {
      if (beast::iequals(token, "close") || beast::iequals(token, "keep-alive")) {
        kept.append(kept.empty() ? "" : ", ").append(token);
      } else {
        named.emplace_back(token);
      }
    }
  }
  if (!named.empty()) {
    for (const std::string& name : named) {
      const http::field f = http::string_to_field(name);
      if (f != http::field::content_length && f != http::field::transfer_encoding &&
          f != http::field::host)
        h.erase(name);
    }
    h.erase(http::field::connection);
    if (!kept.empty()) h.set(http::field::connection, kept);
  }
  for (const http::field f : {http::field::keep_alive, http::field::te, http::field::upgrade,
                              http::field::proxy_connection})
    h.erase(f);
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
};

// Reads the body of a guarded request, then claims, forwards and records it. `headers` are the
// head's, as the head decision saw them. Unless `may_keep_alive`, the answer closes the connection.
asio::awaitable<Outcome> HandleGuarded(GatewayContext& ctx, UpstreamPool& pool, hc::Stream& stream,
                                       beast::flat_buffer& buffer,
                                       http::request_parser<http::empty_body>& head,
                                       std::vector<Header> headers, const Route& route,
                                       const std::string& id, bool may_keep_alive) {
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
  co_await MeetExpectContinue(stream, buffer, head, ctx.config.body_timeout);
  http::request_parser<http::string_body> parser(std::move(head));
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
  http::request<http::string_body> request = parser.release();
  // The head's headers serve unless the body added trailer fields (chunked): the parser puts them
  // with the head's, so hop-by-hop ones among them are dropped too, and the decision sees every
  // field, as it always did.
  if (static_cast<size_t>(std::distance(request.begin(), request.end())) != headers.size()) {
    DropHopByHopFields(request.base());
    headers = HeadersOf(request.base());
  }
  const RequestView view{.method = request.method_string(),
                         .target = request.target(),
                         .headers = &headers,
                         .body = request.body()};
  absl::StatusOr<std::optional<GuardedRequest>> guarded = DecideGuarded(ctx.config, route, view);
  GuardedAnswer answer;
  if (!guarded.ok()) {
    answer = {RequestProblem(guarded.status()), Decision::kInvalid};
  } else if (!guarded->has_value()) {
    answer = co_await ForwardUnguarded(ctx, pool, std::move(request));
  } else {
    answer = co_await RunGuarded(ctx, pool, route, **guarded, std::move(request), id);
  }
  const int status = answer.response.status;
  const bool keep = co_await Answer(stream, std::move(answer.response), version, keep_alive,
                                    ctx.config.body_timeout);
  co_return Outcome{keep, answer.decision, status};
}

// Handles one request whose header `head` holds; returns what happened. Unless `may_keep_alive`
// (the connection's last request), its answer says Connection: close.
asio::awaitable<Outcome> HandleRequest(GatewayContext& ctx, UpstreamPool& pool, hc::Stream& stream,
                                       beast::flat_buffer& buffer,
                                       http::request_parser<http::empty_body>& head,
                                       const std::string& id, bool may_keep_alive) {
  absl::Status unreadable = AmbiguousFraming(head);
  if (unreadable.ok()) unreadable = ToOriginForm(head.get());
  DropHopByHopFields(head.get());
  std::vector<Header> headers = HeadersOf(head.get().base());
  const RequestView view{
      .method = head.get().method_string(), .target = head.get().target(), .headers = &headers};
  const HeadDecision decision =
      unreadable.ok() ? DecideHead(ctx.config, view)
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
      const bool keep = co_await RelayPassThrough(stream, buffer, relay, pool,
                                                  ctx.config.upstream_timeout,
                                                  may_keep_alive && !ctx.draining);
      if (!keep) co_await Linger(stream);
      co_return Outcome{keep, Decision::kPassThrough, 0};
    }
    case HeadDecision::Kind::kGuard:
      break;
  }
  co_return co_await HandleGuarded(ctx, pool, stream, buffer, head, std::move(headers),
                                   *decision.route, id, may_keep_alive);
}

void LogRequest(const std::string& id, std::string_view method, std::string_view target,
                const Outcome& outcome, SteadyClock::duration took) {
  spdlog::debug("{} {} {} -> {} {} in {:.1f} ms", id, method, target, outcome.status,
                DecisionName(outcome.decision),
                std::chrono::duration<double, std::milli>(took).count());
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

asio::awaitable<void> ServeConnection(GatewayContext& ctx, UpstreamPool& pool, tcp::socket socket) {
  ctx.metrics.open_connections.fetch_add(1, std::memory_order_relaxed);
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  hc::Stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (int served = 0; !ctx.draining; ++served) {
    http::request_parser<http::empty_body> head;
    head.header_limit(kHeaderLimit);
    head.body_limit(boost::none);
    stream.tcp().expires_after(ctx.config.header_timeout);
    auto [ec, n] = co_await http::async_read_header(stream, buffer, head, kTuple);
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
    // Copied for the log line only when it is written: the request is moved on below.
    const bool log = spdlog::should_log(spdlog::level::debug);
    std::string method;
    std::string target;
    if (log) {
      method = std::string(head.get().method_string());
      target = std::string(head.get().target());
    }
    // The last request a connection may carry is answered with Connection: close: a client told
    // so opens a new connection for its next request instead of sending it into a closed one.
    const bool last = served + 1 >= ctx.config.max_requests_per_connection;
    const Outcome outcome = co_await HandleRequest(ctx, pool, stream, buffer, head, id, !last);
    ctx.in_flight.EndRequest();
    ctx.metrics.Count(outcome.decision);
    ctx.metrics.request_seconds.Observe(SteadyClock::now() - start);
    if (log) LogRequest(id, method, target, outcome, SteadyClock::now() - start);
    if (!outcome.keep_alive) break;
  }
  stream.Close();
  ctx.metrics.open_connections.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace idem::gateway

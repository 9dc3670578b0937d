#include "gateway/forward.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#pragma GCC diagnostic pop

#include "gateway/guard_outcome.h"
#include "gateway/hop_by_hop.h"
#include "gateway/problem_json.h"
#include "gateway/trailer_filter.h"
#include "http/exchange.h"
#include "http/url.h"
#include "idem/store.h"

namespace idem::gateway {
namespace {

constexpr uint32_t kUpstreamHeaderLimit = 64 * 1024;
constexpr size_t kAnswerArena = 1024;
using ArenaFields = http::basic_fields<std::pmr::polymorphic_allocator<char>>;

namespace hc = ::idem::http;

// What a failed upstream exchange means for the client: DeadlineExceeded (504), DataLoss (502, a
// bad answer) or Unavailable (502, unreachable or cut short).
absl::Status UpstreamError(const absl::Status& status, const UpstreamTarget& target,
                           Millis timeout) {
  switch (status.code()) {
    case absl::StatusCode::kDeadlineExceeded:
      return absl::DeadlineExceededError(fmt::format(
          "the upstream {} did not answer within {} ms; the request was not recorded, retry it "
          "with the same idempotency key",
          target.authority, timeout.count()));
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kResourceExhausted:
      return absl::DataLossError(
          fmt::format("the upstream {} sent an invalid HTTP answer ({}); nothing was recorded",
                      target.authority, std::string(status.message())));
    default:
      return absl::UnavailableError(fmt::format(
          "the upstream {} cannot be reached or failed before a whole answer ({}); nothing was "
          "recorded, retry with the same idempotency key",
          target.authority, std::string(status.message())));
  }
}

// The same for an error of a streamed relay.
absl::Status RelayError(beast::error_code ec, const UpstreamTarget& target, Millis timeout) {
  if (ec == beast::error::timeout)
    return UpstreamError(absl::DeadlineExceededError(""), target, timeout);
  if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message)
    return UpstreamError(absl::DataLossError(ec.message()), target, timeout);
  return UpstreamError(absl::UnavailableError(ec.message()), target, timeout);
}

std::string Prefixed(const UpstreamTarget& target, std::string_view request_target) {
  std::string out;
  out.reserve(target.path_prefix.size() + request_target.size());
  out.append(target.path_prefix).append(request_target);
  return out;
}

// Reads into a buffer_body parser and writes through a serializer until the message is through.
// On an error, `write_failed` says whether writing to `out` failed (else reading `in` did). The
// header is written after the first read, which may hold the whole body: `trailer`, when given,
// drops the trailer fields the parser added to it by then.
template <bool isRequest>
asio::awaitable<beast::error_code> RelayBody(hc::Stream& out, hc::Stream& in,
                                             beast::flat_buffer& in_buffer,
                                             http::parser<isRequest, http::buffer_body>& p,
                                             Millis idle_timeout, bool& write_failed,
                                             TrailerFilter* trailer = nullptr) {
  write_failed = false;
  http::serializer<isRequest, http::buffer_body> sr{p.get()};
  std::array<char, 16384> buf;
  do {
    if (!p.is_done()) {
      p.get().body().data = buf.data();
      p.get().body().size = buf.size();
      in.tcp().expires_after(idle_timeout);
      auto [ec, n] = co_await http::async_read(in, in_buffer, p, kTuple);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) co_return ec;
      if (trailer != nullptr) trailer->Drop();
      p.get().body().size = buf.size() - p.get().body().size;
      p.get().body().data = buf.data();
      p.get().body().more = !p.is_done();
    } else {
      p.get().body().data = nullptr;
      p.get().body().size = 0;
      p.get().body().more = false;
    }
    out.tcp().expires_after(idle_timeout);
    auto [ec, n] = co_await http::async_write(out, sr, kTuple);
    if (ec == http::error::need_buffer) ec = {};
    write_failed = static_cast<bool>(ec);
    if (ec) co_return ec;
  } while (!p.is_done() || !sr.is_done());
  co_return beast::error_code{};
}

}  // namespace

std::vector<Header> EndToEndHeaders(const http::fields& fields) {
  std::vector<Header> out;
  out.reserve(static_cast<size_t>(std::distance(fields.begin(), fields.end())));
  const std::vector<std::string> named = ConnectionNamedFields(fields);
  for (const auto& f : fields) {
    if (HopByHop(f.name())) continue;
    if (std::any_of(named.begin(), named.end(),
                    [&](const std::string& n) { return beast::iequals(n, f.name_string()); }))
      continue;
    out.push_back({std::string(f.name_string()), std::string(f.value())});
  }
  return out;
}

absl::StatusOr<UpstreamTarget> ParseUpstreamUrl(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format(
        "--upstream '{}': {}; write http://HOST:PORT or https://HOST:PORT with an optional path "
        "prefix",
        url, why));
  };
  absl::StatusOr<hc::Url> parsed = hc::ParseUrl(url);
  if (!parsed.ok()) return bad(std::string(parsed.status().message()));
  if (url.find('#') != std::string_view::npos || parsed->target.find('?') != std::string::npos)
    return bad("no query or fragment allowed");
  UpstreamTarget target{.origin = parsed->origin,
                        .path_prefix = std::move(parsed->target),
                        .authority = std::move(parsed->authority)};
  while (!target.path_prefix.empty() && target.path_prefix.back() == '/')
    target.path_prefix.pop_back();
  return target;
}

asio::awaitable<UpstreamAnswer> ForwardBuffered(UpstreamPool& pool,
                                                http::request<http::string_body> request,
                                                Millis timeout, asio::cancellation_slot cancel) {
  if (!pool.target.path_prefix.empty())  // Beast reallocates a target even when it is the same
    request.target(Prefixed(pool.target, request.target()));
  request.set(http::field::host, pool.target.authority);
  request.keep_alive(true);
  request.erase(http::field::transfer_encoding);
  request.prepare_payload();
  // Never sent twice by the gateway: once any byte may have reached the upstream, only the
  // client, who owns the key, decides whether to retry (a re-send could run the effect twice).
  uint64_t max_body = kMaxStoredResponseBody;
  if (pool.store_limit > 0) max_body = std::min(max_body, static_cast<uint64_t>(pool.store_limit));
  const hc::SendOptions options{
      .deadline = std::chrono::steady_clock::now() + timeout,
      .limits = {.max_body = max_body, .max_header = kUpstreamHeaderLimit},
      .resend = hc::Resend::kUnwritten};
  // A connected slot is bound to the send only when given: an unbound send still follows the
  // calling coroutine's own cancellation (a parallel group's).
  // (No co_await inside a conditional expression: GCC 12 miscompiles it.)
  hc::SendResult sent;
  if (cancel.is_connected()) {
    sent = co_await hc::AsyncSend(pool.pool, std::move(request), options,
                                  asio::bind_cancellation_slot(cancel, asio::use_awaitable));
  } else {
    sent = co_await hc::AsyncSend(pool.pool, std::move(request), options, asio::use_awaitable);
  }
  if (!sent.response.ok()) {
    if (absl::IsCancelled(sent.response.status()))
      co_return UpstreamAnswer{.response = sent.response.status()};
    co_return UpstreamAnswer{.response = UpstreamError(sent.response.status(), pool.target, timeout),
                             .head_received = sent.answer_head_received,
                             .head_status = sent.answer_head_status};
  }
  hc::Response& response = *sent.response;
  StoredResponse answer{.status = static_cast<int>(response.result_int()),
                        .headers = EndToEndHeaders(response.base()),
                        .body = std::move(response.body())};
  if (pool.store_limit > 0 && StoredResponseBytes(answer) > pool.store_limit) {
    co_return UpstreamAnswer{
        .response = absl::DataLossError(fmt::format(
            "the answer takes {} bytes, more than the idempotency store keeps for one key ({} "
            "bytes)",
            StoredResponseBytes(answer), pool.store_limit)),
        .head_received = true,
        .head_status = answer.status};
  }
  co_return UpstreamAnswer{.response = std::move(answer)};
}

asio::awaitable<absl::Status> ProbeUpstream(UpstreamPool& pool, Millis timeout) {
  hc::AcquireResult connection = co_await pool.pool->AsyncAcquire(
      std::chrono::steady_clock::now() + timeout, asio::use_awaitable);
  if (!connection.ok()) co_return UpstreamError(connection.status(), pool.target, timeout);
  connection->Release(true);
  co_return absl::OkStatus();
}

asio::awaitable<bool> WriteResponse(hc::Stream& client, StoredResponse response,
                                    bool keep_alive, unsigned http_version, Millis timeout) {
  // Beast allocates each header field on its own; an answer's usual few fields fit this arena
  // (a larger header continues on the heap). Saves ~5 allocations per answer.
  std::array<std::byte, kAnswerArena> arena;
  std::pmr::monotonic_buffer_resource memory(arena.data(), arena.size());
  http::response<http::string_body, ArenaFields> res(
      std::piecewise_construct, std::make_tuple(),
      std::make_tuple(std::pmr::polymorphic_allocator<char>(&memory)));
  res.result(static_cast<http::status>(response.status));
  res.version(http_version);
  for (const Header& h : response.headers) res.insert(h.name, h.value);
  res.body() = std::move(response.body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  client.tcp().expires_after(timeout);
  auto [ec, n] = co_await http::async_write(client, res, kTuple);
  co_return !ec && keep_alive;
}

asio::awaitable<bool> RelayPassThrough(hc::Stream& client, beast::flat_buffer& client_buffer,
                                       http::request_parser<http::buffer_body>& parser,
                                       UpstreamPool& pool, Millis idle_timeout,
                                       bool may_keep_alive, int* sent_status) {
  int ignored_status = 0;
  int& status = sent_status != nullptr ? *sent_status : ignored_status;
  status = 0;
  const unsigned version = parser.get().version();
  const bool head = parser.get().method() == http::verb::head;
  const bool client_keep_alive = parser.get().keep_alive() && may_keep_alive;
  hc::AcquireResult connection = co_await pool.pool->AsyncAcquire(
      std::chrono::steady_clock::now() + idle_timeout, asio::use_awaitable);
  if (!connection.ok()) {
    const StoredResponse problem = ProblemResponse(ProblemFor(
        UpstreamError(connection.status(), pool.target, idle_timeout), Origin::kUpstream));
    status = problem.status;
    co_await WriteResponse(client, problem, false, version, idle_timeout);
    co_return false;
  }
  hc::Stream& upstream = connection->stream();
  parser.get().target(Prefixed(pool.target, parser.get().target()));
  parser.get().set(http::field::host, pool.target.authority);
  parser.get().keep_alive(true);
  bool upstream_stopped_reading = false;
  TrailerFilter trailer;
  trailer.Watch(parser);
  beast::error_code ec = co_await RelayBody(upstream, client, client_buffer, parser, idle_timeout,
                                            upstream_stopped_reading, &trailer);
  if (ec && !upstream_stopped_reading) co_return false;  // the client's body is cut short
  // An upstream may answer before it has read the whole body (a 413 from the head alone) and
  // close its connection: its answer is still read and relayed (or a 502 when none came), and
  // the client's connection is closed after it, the rest of its body unread.
  beast::flat_buffer upstream_buffer;
  // Interim answers (100 Continue, 103 Early Hints) are read past, as ForwardBuffered's exchange
  // does: the client gets the final answer, never an interim one in its place.
  std::optional<http::response_parser<http::buffer_body>> response;
  for (int interim = 0;; ++interim) {
    response.emplace();
    response->header_limit(kUpstreamHeaderLimit);
    response->body_limit(boost::none);
    if (head) response->skip(true);
    upstream.tcp().expires_after(idle_timeout);
    auto [hec, hn] = co_await http::async_read_header(upstream, upstream_buffer, *response, kTuple);
    const bool interim_answer = !hec && response->get().result_int() / 100 == 1;
    // A 101 is no interim answer: what follows it is another protocol, which idem does not relay
    // (a client's Upgrade is never forwarded). The interim answers are bounded.
    if (interim_answer &&
        (response->get().result_int() == 101 || interim >= hc::Limits{}.max_interim))
      hec = http::error::bad_status;
    if (hec) {
      const StoredResponse problem = ProblemResponse(
          ProblemFor(RelayError(hec, pool.target, idle_timeout), Origin::kUpstream));
      status = problem.status;
      co_await WriteResponse(client, problem, false, version, idle_timeout);
      co_return false;
    }
    if (!interim_answer) break;
  }
  // Connection is hop by hop: the upstream's says whether the upstream connection may carry
  // another request, not whether the client's may. The client's connection is kept as the client
  // asked, but after a body that ends only where the upstream closes its connection (neither
  // Content-Length nor chunked): closing the client's connection is what ends the body there.
  const bool client_keeps =
      client_keep_alive && !upstream_stopped_reading && !response->need_eof();
  DropUpstreamHopByHopFields(response->get().base());
  response->get().keep_alive(client_keeps);
  status = static_cast<int>(response->get().result_int());
  bool client_stopped_reading = false;
  ec = co_await RelayBody(client, upstream, upstream_buffer, *response, idle_timeout,
                          client_stopped_reading);
  if (ec) co_return false;
  upstream.tcp().expires_never();
  connection->Release(response->keep_alive() && upstream_buffer.size() == 0 &&
                      !upstream_stopped_reading);
  co_return client_keeps;
}

}  // namespace idem::gateway

// Internal: the gateway's upstream side, on the shared HTTP client (src/http): its keep-alive
// connection pool and TLS.
//  - ForwardBuffered: a guarded request, whole, and its whole answer (to be stored), bounded by
//    one timeout.
//  - RelayPassThrough: an unguarded request streamed to the upstream and its answer streamed back,
//    chunk by chunk, never buffering a whole body.
//
// Thread-safety: an UpstreamPool belongs to one io thread (its pool's executor); use it and these
// functions only from coroutines running there.
#ifndef IDEM_GATEWAY_FORWARD_H_
#define IDEM_GATEWAY_FORWARD_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gateway/asio_includes.h"
#include "http/connection_pool.h"
#include "idem/clock.h"
#include "idem/record.h"

namespace idem::gateway {

// Most bytes of an upstream answer to a guarded request (it is stored and replayed).
inline constexpr uint64_t kMaxStoredResponseBody = 16 << 20;

// Where the gateway forwards to, from --upstream.
struct UpstreamTarget {
  ::idem::http::Origin origin;  // scheme, host, port: what connections go to
  std::string path_prefix;      // prepended to every forwarded target; "" for none
  std::string authority;        // host[:port] as written, for the Host header
};

// Returns the parts of an http:// or https:// upstream URL. Errors: InvalidArgument for anything
// else (another scheme, user info, a query or fragment), naming the flag and what is wrong.
absl::StatusOr<UpstreamTarget> ParseUpstreamUrl(std::string_view url);

// One io thread's way to the upstream: the target and a keep-alive pool of connections to it
// (the shared client's ConnectionPool, on that thread's executor).
struct UpstreamPool {
  UpstreamTarget target;
  std::shared_ptr<::idem::http::ConnectionPool> pool;
  // The most bytes of an answer the key store keeps (Store::MaxResponseBytes); 0: none of its own
  // below kMaxStoredResponseBody. A larger answer cannot be kept: ForwardBuffered reports it as
  // such (an error after the answer's head), so the key records 502 upstream-answer-not-kept
  // instead of an outcome the store would refuse for ever.
  int64_t store_limit = 0;
};

// What ForwardBuffered got from the upstream.
struct UpstreamAnswer {
  // The answer: status, every end-to-end header, body. Errors: Unavailable when the upstream
  // cannot be reached or closes the connection before a whole answer; DeadlineExceeded when the
  // whole exchange takes longer than the timeout; DataLoss when the answer is not HTTP/1.1 or too
  // large; Cancelled when `cancel` was emitted.
  absl::StatusOr<StoredResponse> response;
  // On an error: the head of the upstream's final answer had arrived, so the upstream ran the
  // request (its body was then too large, cut off, malformed or too slow).
  bool head_received = false;
  // On an error with head_received: the status that head gave (a status URL's 200 says the
  // effect happened even when its answer could not be kept).
  int head_status = 0;
};

// Sends `request` (its target is prefixed with the upstream's path prefix, Host set) and returns
// the answer. Emitting `cancel` (when connected) ends the exchange at once with Cancelled.
asio::awaitable<UpstreamAnswer> ForwardBuffered(UpstreamPool& pool,
                                                http::request<http::string_body> request,
                                                Millis timeout,
                                                asio::cancellation_slot cancel = {});

// Streams the request whose header `parser` has read from `client` to the upstream, then the
// upstream's answer back to `client`; `idle_timeout` bounds each read and write. Answers 502 or
// 504 (problem+json) itself when the upstream fails before its answer began. Returns true when the
// client connection may carry another request; never when `may_keep_alive` is false (the gateway
// closes the connection after this answer, which then says Connection: close). `*sent_status`
// (when given) is set to the status of the answer begun to the client, 0 when none was.
asio::awaitable<bool> RelayPassThrough(idem::http::Stream& client,
                                       beast::flat_buffer& client_buffer,
                                       http::request_parser<http::buffer_body>& parser,
                                       UpstreamPool& pool, Millis idle_timeout,
                                       bool may_keep_alive, int* sent_status = nullptr);

// Whether a connection to the upstream can be made now (or an idle one is alive), within
// `timeout`; the reason when not.
asio::awaitable<absl::Status> ProbeUpstream(UpstreamPool& pool, Millis timeout);

// Writes `response` (a StoredResponse) to `client`; returns false when writing failed.
asio::awaitable<bool> WriteResponse(idem::http::Stream& client, StoredResponse response,
                                    bool keep_alive, unsigned http_version, Millis timeout);

// Returns the message's end-to-end headers (hop-by-hop ones such as Connection, Keep-Alive,
// Transfer-Encoding, TE, Trailer, Upgrade, Proxy-* dropped) as name/value pairs in order.
std::vector<Header> EndToEndHeaders(const http::fields& fields);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_FORWARD_H_

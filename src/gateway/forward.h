// Internal: the gateway's upstream calls, over an UpstreamPool.
//  - ForwardBuffered: a guarded request, whole, and its whole answer (to be stored), bounded by
//    one timeout.
//  - RelayPassThrough: an unguarded request streamed to the upstream and its answer streamed back,
//    chunk by chunk, never buffering a whole body.
//
// Thread-safety: run on the pool's own io thread.
#ifndef IDEM_GATEWAY_FORWARD_H_
#define IDEM_GATEWAY_FORWARD_H_

#include <string>

#include "absl/status/statusor.h"
#include "gateway/asio_includes.h"
#include "gateway/upstream_pool.h"
#include "idem/record.h"

namespace idem::gateway {

// Most bytes of an upstream answer to a guarded request (it is stored and replayed).
inline constexpr uint64_t kMaxStoredResponseBody = 16 << 20;

// Sends `request` (its target is prefixed with the upstream's path prefix, Host set) and returns
// the answer: status, every end-to-end header, body. Errors: Unavailable when the upstream cannot
// be reached or closes the connection before a whole answer; DeadlineExceeded when the whole
// exchange takes longer than `timeout`; DataLoss when the answer is not HTTP/1.1 or too large.
asio::awaitable<absl::StatusOr<StoredResponse>> ForwardBuffered(
    UpstreamPool& pool, http::request<http::string_body> request, Millis timeout);

// Streams the request whose header `parser` has read from `client` to the upstream, then the
// upstream's answer back to `client`; `idle_timeout` bounds each read and write. Answers 502 or
// 504 (problem+json) itself when the upstream fails before its answer began. Returns true when the
// client connection may carry another request.
asio::awaitable<bool> RelayPassThrough(beast::tcp_stream& client, beast::flat_buffer& client_buffer,
                                       http::request_parser<http::buffer_body>& parser,
                                       UpstreamPool& pool, Millis idle_timeout);

// Writes `response` (a StoredResponse) to `client`; returns false when writing failed.
asio::awaitable<bool> WriteResponse(beast::tcp_stream& client, const StoredResponse& response,
                                    bool keep_alive, unsigned http_version, Millis timeout);

// Returns the message's end-to-end headers (hop-by-hop ones such as Connection, Keep-Alive,
// Transfer-Encoding, TE, Trailer, Upgrade, Proxy-* dropped) as name/value pairs in order.
std::vector<Header> EndToEndHeaders(const http::fields& fields);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_FORWARD_H_

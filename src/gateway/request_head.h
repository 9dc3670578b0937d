// Internal: a client's request head made safe to decide on and to forward, before anything else
// reads it: a body length every HTTP/1.1 reader agrees on, a target that is a path in one
// spelling (the fields that describe the client's connection: gateway/hop_by_hop.h).
#ifndef IDEM_GATEWAY_REQUEST_HEAD_H_
#define IDEM_GATEWAY_REQUEST_HEAD_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "gateway/asio_includes.h"

namespace idem::gateway {

// Returns why the request's body length is ambiguous (InvalidArgument), OK when it is not.
absl::Status AmbiguousFraming(const http::request_parser<http::empty_body>& head);

// Returns Unimplemented when the request's body comes in a transfer coding other than chunked
// (e.g. `gzip, chunked`): a guarded request's body is read whole and forwarded with a
// Content-Length, which would hand the upstream still-encoded bytes as a plain body.
absl::Status GuardableCoding(const http::request_header<>& h);

// Returns `path` in the one spelling routes match: percent-encoded unreserved characters decoded
// and dot segments removed.
std::string NormalPath(std::string_view path);

// Rewrites the request's target to origin-form ("/path?query") in NormalPath's spelling; returns
// why it cannot (InvalidArgument).
absl::Status ToOriginForm(http::request_header<>& h);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_REQUEST_HEAD_H_

// Answers of the payments example: RFC 9457 problem documents and JSON bodies.
//
// Thread-safety: pure functions; call from any thread.
#ifndef IDEM_EXAMPLES_PAYMENTS_PROBLEM_H_
#define IDEM_EXAMPLES_PAYMENTS_PROBLEM_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "idem/record.h"

namespace idem::payments {

// One HTTP request as a handler sees it.
struct Request {
  std::string method;
  std::string target;  // path and query, as sent
  std::vector<Header> headers;
  std::string body;
};

// The value of header `name` (any case); several fields of that name joined with ", " (so a
// repeated Idempotency-Key reads as a list and is refused); nullopt when absent.
std::optional<std::string> HeaderValue(const Request& request, std::string_view name);

// An answer to one request: the response and whether it is the stored outcome of an earlier
// request with the same key (sent with `Idempotent-Replayed: true`).
struct Reply {
  StoredResponse response;
  bool replayed = false;
};

// An application/problem+json response: {"type","title","status","detail"}, where type is
// "https://idem.dev/problems/<slug>" and detail says what to fix.
StoredResponse Problem(int status, std::string_view slug, std::string_view title,
                       std::string_view detail);

// A 201/200 application/json response with `body` (already serialised).
StoredResponse JsonResponse(int status, std::string body);

// The problem for a status the library returned: InvalidArgument 400, FailedPrecondition 422
// (key reused with another request), Aborted 409, Unavailable 503, anything else 500.
StoredResponse ProblemFor(const absl::Status& status);

}  // namespace idem::payments

#endif  // IDEM_EXAMPLES_PAYMENTS_PROBLEM_H_

#include "problem.h"

#include <strings.h>

#include <boost/json.hpp>
#include <string>

namespace idem::payments {

std::optional<std::string> HeaderValue(const Request& request, std::string_view name) {
  std::optional<std::string> value;
  for (const Header& header : request.headers) {
    if (header.name.size() != name.size() ||
        strncasecmp(header.name.data(), name.data(), name.size()) != 0) {
      continue;
    }
    value = value.has_value() ? *value + ", " + header.value : header.value;
  }
  return value;
}

StoredResponse Problem(int status, std::string_view slug, std::string_view title,
                       std::string_view detail) {
  boost::json::object doc;
  doc["type"] = "https://idem.dev/problems/" + std::string(slug);
  doc["title"] = title;
  doc["status"] = status;
  doc["detail"] = detail;
  return StoredResponse{.status = status,
                        .headers = {{"Content-Type", "application/problem+json"}},
                        .body = boost::json::serialize(doc)};
}

StoredResponse JsonResponse(int status, std::string body) {
  return StoredResponse{
      .status = status, .headers = {{"Content-Type", "application/json"}}, .body = std::move(body)};
}

StoredResponse ProblemFor(const absl::Status& status) {
  const std::string message(status.message());
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return Problem(400, "invalid-request", "The request is malformed", message);
    case absl::StatusCode::kFailedPrecondition:
      return Problem(422, "key-reused", "Idempotency-Key reused with another request",
                     "this Idempotency-Key was first used with a different request (method, path "
                     "or body); send the original request again to get its answer, or use a new "
                     "key for a new request");
    case absl::StatusCode::kAborted:
      return Problem(409, "key-in-flight", "A request with this key is still running",
                     "retry the same request with the same Idempotency-Key in a moment");
    case absl::StatusCode::kUnavailable:
      return Problem(503, "store-unavailable", "The store is unavailable",
                     "the database is busy or down; retry the same request with the same "
                     "Idempotency-Key: it runs at most once");
    default:
      return Problem(500, "internal-error", "Internal error",
                     "the request failed unexpectedly; nothing was stored. " + message);
  }
}

}  // namespace idem::payments

#include "gateway/problem_json.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace idem::gateway {
namespace {

struct Entry {
  Origin origin;
  absl::StatusCode code;
  int http_status;
  std::string_view slug;
  std::string_view title;
  int retry_after;  // seconds; 0: none (409's comes from the lease)
};

using C = absl::StatusCode;
constexpr Entry kTable[] = {
    {Origin::kRequest, C::kInvalidArgument, 400, "invalid-request", "Invalid request", 0},
    {Origin::kRequest, C::kResourceExhausted, 413, "body-too-large", "Request body too large", 0},
    {Origin::kRequest, C::kDeadlineExceeded, 408, "request-timeout", "Request too slow", 0},
    {Origin::kRequest, C::kUnimplemented, 501, "transfer-coding-unsupported",
     "Transfer coding not supported", 0},
    {Origin::kStore, C::kInvalidArgument, 400, "invalid-request", "Invalid request", 0},
    {Origin::kStore, C::kFailedPrecondition, 422, "key-reused",
     "Idempotency key reused with another request", 0},
    {Origin::kStore, C::kAborted, 409, "key-in-flight",
     "A request with this idempotency key is still in progress", 0},
    {Origin::kStore, C::kUnavailable, 503, "store-unavailable", "Idempotency store unavailable", 1},
    {Origin::kStore, C::kResourceExhausted, 503, "store-unavailable",
     "Idempotency store unavailable", 1},
    {Origin::kStore, C::kDeadlineExceeded, 503, "store-unavailable",
     "Idempotency store unavailable", 1},
    {Origin::kUpstream, C::kUnavailable, 502, "upstream-unreachable", "Upstream unreachable", 0},
    {Origin::kUpstream, C::kDeadlineExceeded, 504, "upstream-timeout", "Upstream too slow", 0},
    {Origin::kUpstream, C::kDataLoss, 502, "upstream-bad-response",
     "Upstream sent an invalid response", 0},
    {Origin::kUpstream, C::kInvalidArgument, 502, "upstream-bad-response",
     "Upstream sent an invalid response", 0},
};

constexpr std::string_view kTypeBase = kProblemTypeBase;

}  // namespace

Problem ProblemFor(const absl::Status& status, Origin origin) {
  for (const Entry& e : kTable) {
    if (e.origin != origin || e.code != status.code()) continue;
    Problem p{.status = e.http_status,
              .type = std::string(kTypeBase) + std::string(e.slug),
              .title = std::string(e.title),
              .detail = std::string(status.message())};
    if (e.retry_after > 0) p.retry_after_seconds = e.retry_after;
    return p;
  }
  // The logged error may name internals; the client gets a generic, still actionable detail. Any
  // other store failure (read-only or corrupt file, an unexpected error) fails closed like a
  // store that is down: nothing was forwarded, and a later retry may find the store repaired.
  if (origin == Origin::kStore)
    return Problem{.status = 503,
                   .type = std::string(kTypeBase) + "store-unavailable",
                   .title = "Idempotency store unavailable",
                   .detail =
                       "the idempotency store failed (the gateway's log says how); nothing "
                       "was forwarded: retry later with the same idempotency key",
                   .retry_after_seconds = 1};
  return Problem{.status = 500,
                 .type = std::string(kTypeBase) + "internal",
                 .title = "Internal gateway error",
                 .detail =
                     "idem failed to handle this request; the request may be retried with "
                     "the same idempotency key"};
}

Problem StoreUnavailableProblem(std::string_view request_id) {
  return Problem{.status = 503,
                 .type = std::string(kTypeBase) + "store-unavailable",
                 .title = "Idempotency store unavailable",
                 .detail = "the idempotency store did not take this request's key (the gateway's "
                           "log says why, under this request_id); nothing was forwarded: retry "
                           "later with the same idempotency key",
                 .retry_after_seconds = 1,
                 .request_id = std::string(request_id)};
}

std::string ProblemBody(const Problem& problem) {
  boost::json::object doc;
  doc["type"] = problem.type;
  doc["title"] = problem.title;
  doc["status"] = problem.status;
  doc["detail"] = problem.detail;
  if (problem.request_id.has_value()) doc["request_id"] = *problem.request_id;
  return boost::json::serialize(doc);
}

}  // namespace idem::gateway

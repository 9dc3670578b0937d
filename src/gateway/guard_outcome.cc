#include "gateway/guard_outcome.h"

#include <fmt/format.h>
#include <strings.h>

#include <algorithm>

namespace idem::gateway {
namespace {

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool Replayable(std::string_view name, const Route& route) {
  if (SameName(name, "Content-Type") || SameName(name, "Location")) return true;
  return std::any_of(route.replay_headers.begin(), route.replay_headers.end(),
                     [&](const std::string& h) { return SameName(h, name); });
}

}  // namespace

ClaimDecision DecideClaim(bool claimed, const KeyRecord& record, std::string_view fingerprint,
                          int64_t now_ms) {
  if (claimed) return {.kind = ClaimDecision::Kind::kForward};
  if (record.fingerprint != fingerprint) return {.kind = ClaimDecision::Kind::kMismatch};
  if (record.state != KeyState::kInProgress) return {.kind = ClaimDecision::Kind::kReplay};
  const int64_t left_ms = std::max<int64_t>(record.lease_until_ms - now_ms, 0);
  return {.kind = ClaimDecision::Kind::kInFlight,
          .retry_after_seconds = static_cast<int>(std::max<int64_t>((left_ms + 999) / 1000, 1))};
}

StoredResponse ReplayResponse(const StoredResponse& stored) {
  StoredResponse out = stored;
  out.headers.push_back({std::string(kReplayedHeader), "true"});
  return out;
}

StoredResponse ToStored(const StoredResponse& upstream, const Route& route) {
  StoredResponse out{.status = upstream.status, .body = upstream.body};
  for (const Header& h : upstream.headers) {
    if (Replayable(h.name, route)) out.headers.push_back(h);
  }
  return out;
}

StoredResponse ProblemResponse(const Problem& problem) {
  StoredResponse out{.status = problem.status, .body = ProblemBody(problem)};
  out.headers.push_back({"Content-Type", std::string(kProblemContentType)});
  if (problem.retry_after_seconds.has_value())
    out.headers.push_back({"Retry-After", std::to_string(*problem.retry_after_seconds)});
  return out;
}

StoredResponse InFlightResponse(int retry_after_seconds) {
  Problem p = ProblemFor(
      absl::AbortedError(fmt::format(
          "an earlier request with this idempotency key is still being processed; retry after "
          "{} s with the same key and body to get its outcome",
          retry_after_seconds)),
      Origin::kStore);
  p.retry_after_seconds = retry_after_seconds;
  return ProblemResponse(p);
}

StoredResponse MismatchResponse() {
  return ProblemResponse(ProblemFor(
      absl::FailedPreconditionError(
          "this idempotency key was already used with a different request (method, path, query "
          "or body); use a new key for a new request, or resend the original request unchanged"),
      Origin::kStore));
}

StoredResponse NotRecordedResponse(std::string detail, int retry_after_seconds) {
  return ProblemResponse(Problem{.status = 503,
                                 .type = std::string(kProblemTypeBase) + "outcome-not-recorded",
                                 .title = "Outcome not yet recorded",
                                 .detail = std::move(detail),
                                 .retry_after_seconds = retry_after_seconds});
}

StoredResponse AnswerNotKeptResponse(std::string detail) {
  return ProblemResponse(Problem{.status = 502,
                                 .type = std::string(kProblemTypeBase) + "upstream-answer-not-kept",
                                 .title = "Upstream answer could not be kept",
                                 .detail = std::move(detail)});
}

StoredResponse TooLargeToRecoverResponse(int64_t note_bytes, int64_t limit) {
  const std::string sizes =
      note_bytes > 0 && limit > 0
          ? fmt::format(
                " (it takes {} bytes with its headers; the store keeps at most {} bytes "
                "for one key)",
                note_bytes, limit)
          : std::string();
  return ProblemResponse(Problem{
      .status = 413,
      .type = std::string(kProblemTypeBase) + "request-too-large-to-recover",
      .title = "Request too large to keep for recovery",
      .detail = "this route keeps each request in the idempotency store so that it can be "
                "recovered, and this request is larger than the store can keep" +
                sizes +
                "; nothing was stored or forwarded: send a smaller request (a smaller body or "
                "fewer headers)"});
}

StoredResponse RefusedOutcomeResponse() {
  return AnswerNotKeptResponse(
      "the upstream ran the request and answered, but its answer is larger than the idempotency "
      "store keeps for one key; it was not kept, this is the key's answer, and the request is "
      "never sent again");
}

StoredResponse TooManyPendingResponse() {
  return ProblemResponse(ProblemFor(
      absl::UnavailableError(
          "the gateway holds too many outcomes that the idempotency store has not taken yet; "
          "nothing was forwarded: retry later with the same idempotency key"),
      Origin::kStore));
}

}  // namespace idem::gateway

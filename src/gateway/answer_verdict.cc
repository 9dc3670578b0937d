#include "gateway/answer_verdict.h"

#include <fmt/format.h>

#include "gateway/guard_outcome.h"

namespace idem::gateway {

AnswerVerdict VerdictOnAnswer(const Route& route, const UpstreamAnswer& answer) {
  if (answer.response.ok()) {
    const int status = answer.response->status;
    switch (ClassifyOutcome(route, status)) {
      case OutcomeClass::kCompleted:
        return {.kind = AnswerVerdict::Kind::kCompleted,
                .stored = ToStored(*answer.response, route)};
      case OutcomeClass::kFailedFinal:
        return {.kind = AnswerVerdict::Kind::kFailedFinal,
                .stored = ToStored(*answer.response, route)};
      case OutcomeClass::kTransient:
        break;
    }
    return {.kind = AnswerVerdict::Kind::kTransient,
            .why = fmt::format("the upstream answered {}, a transient status", status)};
  }
  if (!answer.head_received)
    return {.kind = AnswerVerdict::Kind::kNotReached, .why = answer.response.status().ToString()};
  // A head with a transient status (500, 503, 429...) says what the whole answer would have: the
  // upstream did not finish the request, so the key is released as for that answer, though its
  // body was lost (too slow, cut off). Recording the 502 would refuse every retry for ever.
  if (answer.head_status != 0 &&
      ClassifyOutcome(route, answer.head_status) == OutcomeClass::kTransient)
    return {.kind = AnswerVerdict::Kind::kTransient,
            .why = fmt::format("the upstream answered {}, a transient status, whose answer could "
                               "not be read: {}",
                               answer.head_status, answer.response.status().ToString())};
  // The upstream ran the request: sending it again (a release, a re-send) would run it twice.
  return {.kind = AnswerVerdict::Kind::kNotKept,
          .stored = AnswerNotKeptResponse(
              "the upstream ran this request, but its answer could not be kept (" +
              std::string(answer.response.status().message()) +
              "); this is the request's recorded answer: retries with this idempotency key get "
              "it too, and the request is not sent again"),
          .why = answer.response.status().ToString()};
}

AnswerVerdict VerdictOnStatusAnswer(const Route& route, const UpstreamAnswer& answer) {
  // A 200 whose answer cannot be kept (too large, cut off, too slow after its head) still says
  // the effect happened, and asking again gets the same answer for ever: the key records what
  // the request's own answer would have (VerdictOnAnswer: the 502 upstream-answer-not-kept).
  if (!answer.response.ok() && answer.head_received && answer.head_status == 200)
    return VerdictOnAnswer(route, answer);
  if (!answer.response.ok())
    return {.kind = AnswerVerdict::Kind::kNotReached, .why = answer.response.status().ToString()};
  const int status = answer.response->status;
  if (status == 404) return {.kind = AnswerVerdict::Kind::kNeverHappened};
  if (status != 200)
    return {.kind = AnswerVerdict::Kind::kTransient,
            .why = fmt::format("the status URL answered {}; only 200 or 404 settle a key", status)};
  AnswerVerdict verdict{.kind = AnswerVerdict::Kind::kCompleted,
                        .stored = ToStored(*answer.response, route)};
  if (route.recovered_status != 0) verdict.stored.status = route.recovered_status;
  return verdict;
}

}  // namespace idem::gateway

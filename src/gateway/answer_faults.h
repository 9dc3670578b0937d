// Internal: lost answers on purpose, for testing clients' retries (docs/gateway.md, "Testing a
// client's retries"). A route's lose_answer_fraction and delay_answer_fraction, honoured only
// with --allow-faults: once the outcome of a guarded request is recorded, its answer is lost (the
// connection is closed without a byte of it) or delayed by the route's delay_answer. Replays and
// every answer whose outcome this request did not record are never touched: a replay is what a
// retrying client is meant to get.
//
// Thread-safety: DrawAnswerFault is pure; HoldBackAnswer runs on one io thread (it draws from a
// generator of that thread's own).
#ifndef IDEM_GATEWAY_ANSWER_FAULTS_H_
#define IDEM_GATEWAY_ANSWER_FAULTS_H_

#include "gateway/asio_includes.h"
#include "gateway/gateway_config.h"
#include "gateway/metrics.h"

namespace idem::gateway {

enum class AnswerFault {
  kNone,   // answer as usual
  kLose,   // close the connection without answering
  kDelay,  // answer after Route::delay_answer
};

// Returns the fault for one answer of `route` given `draw`, uniform in [0, 1): kLose below
// lose_answer_fraction, kDelay in the next delay_answer_fraction, else kNone; kNone whenever
// `allowed` is false (the gateway runs without --allow-faults).
AnswerFault DrawAnswerFault(const Route& route, bool allowed, double draw);

// For the answer of a request of `route` whose outcome was just recorded: draws its fault, counts
// it in `metrics`, waits delay_answer for kDelay, and returns it. The caller closes the connection
// without answering on kLose, and answers otherwise.
asio::awaitable<AnswerFault> HoldBackAnswer(const Route& route, bool allowed, Metrics& metrics);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_ANSWER_FAULTS_H_

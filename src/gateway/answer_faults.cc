#include "gateway/answer_faults.h"

#include <random>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#pragma GCC diagnostic pop

namespace idem::gateway {
namespace {

// Uniform in [0, 1), from a generator of the calling thread's own, seeded once per thread.
double Draw() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(generator);
}

}  // namespace

AnswerFault DrawAnswerFault(const Route& route, bool allowed, double draw) {
  if (!allowed || !route.HasAnswerFaults()) return AnswerFault::kNone;
  if (draw < route.lose_answer_fraction) return AnswerFault::kLose;
  if (draw < route.lose_answer_fraction + route.delay_answer_fraction) return AnswerFault::kDelay;
  return AnswerFault::kNone;
}

asio::awaitable<AnswerFault> HoldBackAnswer(const Route& route, bool allowed, Metrics& metrics) {
  const AnswerFault fault = DrawAnswerFault(route, allowed, Draw());
  if (fault == AnswerFault::kLose) metrics.answers_lost.fetch_add(1, std::memory_order_relaxed);
  if (fault != AnswerFault::kDelay) co_return fault;
  metrics.answers_delayed.fetch_add(1, std::memory_order_relaxed);
  asio::steady_timer timer(co_await asio::this_coro::executor, route.delay_answer);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));  // an error: answer at once
  co_return fault;
}

}  // namespace idem::gateway

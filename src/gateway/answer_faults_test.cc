#include "gateway/answer_faults.h"

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

TEST(DrawAnswerFault, LosesBelowTheLoseFractionThenDelaysInTheDelayFraction) {
  const Route route{.lose_answer_fraction = 0.1, .delay_answer_fraction = 0.2, .delay_answer = 1s};
  EXPECT_EQ(DrawAnswerFault(route, true, 0.0), AnswerFault::kLose);
  EXPECT_EQ(DrawAnswerFault(route, true, 0.0999), AnswerFault::kLose);
  EXPECT_EQ(DrawAnswerFault(route, true, 0.1), AnswerFault::kDelay);
  EXPECT_EQ(DrawAnswerFault(route, true, 0.2999), AnswerFault::kDelay);
  EXPECT_EQ(DrawAnswerFault(route, true, 0.3001), AnswerFault::kNone);
  EXPECT_EQ(DrawAnswerFault(route, true, 0.9999), AnswerFault::kNone);
}

TEST(DrawAnswerFault, NothingWithoutAllowFaultsOrWithoutTheRouteSetting) {
  const Route faulty{.lose_answer_fraction = 1};
  EXPECT_EQ(DrawAnswerFault(faulty, false, 0.0), AnswerFault::kNone);
  EXPECT_EQ(DrawAnswerFault(faulty, true, 0.0), AnswerFault::kLose);
  EXPECT_EQ(DrawAnswerFault(faulty, true, 0.9999), AnswerFault::kLose);
  const Route plain;
  EXPECT_FALSE(plain.HasAnswerFaults());
  EXPECT_EQ(DrawAnswerFault(plain, true, 0.0), AnswerFault::kNone);
}

}  // namespace
}  // namespace idem::gateway

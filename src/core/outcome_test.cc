#include "idem/outcome.h"

#include <gtest/gtest.h>

#include "idem/record.h"

namespace idem {
namespace {

TEST(OutcomeClassifier, SuccessAndRedirectsAreCompleted) {
  const OutcomeClassifier classifier;
  for (int status : {200, 201, 204, 299, 301, 302, 303, 304, 307, 308, 399}) {
    EXPECT_EQ(classifier.Classify(status), OutcomeClass::kCompleted) << status;
  }
}

TEST(OutcomeClassifier, ClientErrorsAreFailedFinal) {
  const OutcomeClassifier classifier;
  for (int status : {400, 401, 402, 403, 404, 405, 410, 413, 415, 422, 424, 426, 451, 499}) {
    EXPECT_EQ(classifier.Classify(status), OutcomeClass::kFailedFinal) << status;
  }
}

TEST(OutcomeClassifier, InformationalStatusesAreNeverStored) {
  const OutcomeClassifier classifier;
  for (int status : {100, 101, 102, 103, 199}) {
    EXPECT_EQ(classifier.Classify(status), OutcomeClass::kTransient) << status;
  }
}

// An upstream that deduplicates too answers 409 "in flight" to a re-send after a takeover; stored,
// that 409 would be replayed for the whole retention.
TEST(OutcomeClassifier, ConflictIsTransient) {
  EXPECT_EQ(OutcomeClassifier().Classify(409), OutcomeClass::kTransient);
}

TEST(OutcomeClassifier, TimeoutTooEarlyAndTooManyRequestsAreTransient) {
  const OutcomeClassifier classifier;
  EXPECT_EQ(classifier.Classify(408), OutcomeClass::kTransient);
  EXPECT_EQ(classifier.Classify(425), OutcomeClass::kTransient);
  EXPECT_EQ(classifier.Classify(429), OutcomeClass::kTransient);
}

TEST(OutcomeClassifier, ServerErrorsAndUnknownStatusesAreTransient) {
  const OutcomeClassifier classifier;
  for (int status : {500, 501, 502, 503, 504, 599, 600, 999, 0, 99, -1}) {
    EXPECT_EQ(classifier.Classify(status), OutcomeClass::kTransient) << status;
  }
}

TEST(OutcomeClassifier, WithOverridesOneStatusInACopy) {
  const OutcomeClassifier defaults;
  const OutcomeClassifier custom = defaults.With(409, OutcomeClass::kFailedFinal)
                                       .With(501, OutcomeClass::kFailedFinal)
                                       .With(429, OutcomeClass::kFailedFinal);
  EXPECT_EQ(custom.Classify(409), OutcomeClass::kFailedFinal);
  EXPECT_EQ(custom.Classify(501), OutcomeClass::kFailedFinal);
  EXPECT_EQ(custom.Classify(429), OutcomeClass::kFailedFinal);
  EXPECT_EQ(custom.Classify(404), OutcomeClass::kFailedFinal);  // untouched rule
  EXPECT_EQ(custom.Classify(500), OutcomeClass::kTransient);
  // The original is unchanged.
  EXPECT_EQ(defaults.Classify(409), OutcomeClass::kTransient);
  EXPECT_EQ(defaults.Classify(501), OutcomeClass::kTransient);
}

TEST(OutcomeClassifier, LaterWithForTheSameStatusWins) {
  const OutcomeClassifier classifier =
      OutcomeClassifier().With(404, OutcomeClass::kTransient).With(404, OutcomeClass::kCompleted);
  EXPECT_EQ(classifier.Classify(404), OutcomeClass::kCompleted);
}

TEST(KeyStateName, NamesEachPersistedState) {
  EXPECT_EQ(KeyStateName(KeyState::kInProgress), "in_progress");
  EXPECT_EQ(KeyStateName(KeyState::kCompleted), "completed");
  EXPECT_EQ(KeyStateName(KeyState::kFailedFinal), "failed_final");
  EXPECT_EQ(KeyStateName(static_cast<KeyState>(0)), "unknown");
}

}  // namespace
}  // namespace idem

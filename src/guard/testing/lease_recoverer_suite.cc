// The lease recoverer on every store: a lapsed claim is taken over with a new fence and handed to
// the resolver with what it stored; each answer of the resolver is written as it says.
#include "guard/testing/lease_recoverer_suite.h"

#include <stdexcept>
#include <vector>

namespace idem::testing {
namespace {

TEST_P(LeaseRecovererTest, ResolverGetsWhatTheLapsedClaimStoredAndItsCompletedOutcomeIsRecorded) {
  LeaseGuard guard(*store_, GuardOptions("dies"));
  const Scope scope{"acme", "order-1"};
  std::optional<LeasedKey> dead = Claim(guard, scope, Note("charge 5"));
  ASSERT_TRUE(dead.has_value());
  clock_.Advance(kLease + 1ms);
  LeaseRecoverer recoverer(*store_, Options());
  std::vector<LapsedClaim> asked;
  auto report = recoverer.RecoverLapsedOnce([&](const LapsedClaim& claim) {
    asked.push_back(claim);
    return Resolution::Completed(ok_);
  });
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].scope, scope);
  EXPECT_EQ(asked[0].fingerprint, "fp-order-1");
  EXPECT_EQ(asked[0].note, Note("charge 5"));
  EXPECT_EQ(asked[0].attempt, 1);
  EXPECT_EQ(asked[0].lapsed_owner.rfind("dies/", 0), 0u) << asked[0].lapsed_owner;
  EXPECT_NE(asked[0].fence, dead->fence());
  EXPECT_EQ(asked[0].lease_until_ms, clock_.NowMillis() + 20'000);
  EXPECT_EQ(report->lapsed, 1);
  EXPECT_EQ(report->completed, 1);
  EXPECT_TRUE(report->last_error.ok()) << report->last_error;
  auto record = store_->Get(scope);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kCompleted);
  EXPECT_EQ(record->response, ok_);
  // The dead holder, come back, can no longer write; the next arrival gets the recorded answer.
  EXPECT_EQ(dead->Finish(StoredResponse{.status = 500}).status().code(),
            absl::StatusCode::kAborted);
  auto again = guard.Acquire(scope, "fp-order-1");
  ASSERT_TRUE(again.ok() && again->replay) << again.status();
  EXPECT_EQ(again->replay->response, ok_);
}

TEST_P(LeaseRecovererTest, FailedFinalAnswerIsRecordedAndReplayed) {
  LeaseGuard guard(*store_, GuardOptions("dies"));
  const Scope scope{"", "order-2"};
  ASSERT_TRUE(Claim(guard, scope, Note("x")).has_value());
  clock_.Advance(kLease + 1ms);
  LeaseRecoverer recoverer(*store_, Options());
  const StoredResponse declined{.status = 402, .body = "card declined"};
  auto report = recoverer.RecoverLapsedOnce(
      [&](const LapsedClaim&) { return Resolution::FailedFinal(declined); });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->failed_final, 1);
  auto again = guard.Acquire(scope, "fp-order-2");
  ASSERT_TRUE(again.ok() && again->replay) << again.status();
  EXPECT_EQ(again->replay->state, KeyState::kFailedFinal);
  EXPECT_EQ(again->replay->response, declined);
}

TEST_P(LeaseRecovererTest, NeverHappenedReleasesTheKeyAndTheNextArrivalRunsIt) {
  LeaseGuard guard(*store_, GuardOptions("dies"));
  const Scope scope{"", "order-3"};
  ASSERT_TRUE(Claim(guard, scope, Note("x")).has_value());
  clock_.Advance(kLease + 1ms);
  LeaseRecoverer recoverer(*store_, Options());
  auto report =
      recoverer.RecoverLapsedOnce([](const LapsedClaim&) { return Resolution::NeverHappened(); });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->never_happened, 1);
  EXPECT_EQ(store_->Get(scope).status().code(), absl::StatusCode::kNotFound);
  auto again = guard.Acquire(scope, "fp-order-3");
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE(again->key.has_value());
  EXPECT_FALSE(again->key->taken_over());
}

TEST_P(LeaseRecovererTest, LaterKeepsTheKeyHeldForTheHoldThenAPassAsksAgainWithTheNextAttempt) {
  LeaseGuard guard(*store_, GuardOptions("dies"));
  const Scope scope{"", "order-4"};
  ASSERT_TRUE(Claim(guard, scope, Note("x")).has_value());
  clock_.Advance(kLease + 1ms);
  LeaseRecoverer recoverer(*store_, Options());
  std::vector<LapsedClaim> asked;
  auto later = [&](const LapsedClaim& claim) {
    asked.push_back(claim);
    return Resolution::Later(15s);
  };
  auto report = recoverer.RecoverLapsedOnce(later);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->later, 1);
  auto record = store_->Get(scope);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kInProgress);
  EXPECT_EQ(record->lease_until_ms, clock_.NowMillis() + 15'000);
  // Held: an arrival is told the key is in flight, and a pass within the hold asks nothing.
  auto arrival = guard.Acquire(scope, "fp-order-4");
  ASSERT_TRUE(arrival.ok() && arrival->in_flight) << arrival.status();
  clock_.Advance(14s);
  ASSERT_TRUE(recoverer.RecoverLapsedOnce(later).ok());
  EXPECT_EQ(asked.size(), 1u);
  clock_.Advance(1s + 1ms);
  report = recoverer.RecoverLapsedOnce(later);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[1].attempt, 2);
  EXPECT_EQ(asked[1].note, Note("x"));  // the attempt count is the recoverer's, never shown
  EXPECT_NE(asked[1].fence, asked[0].fence);
}

TEST_P(LeaseRecovererTest, LaterWithoutAHoldAndResolverErrorsWaitTheBackoffOfTheAttempt) {
  LeaseGuard guard(*store_, GuardOptions("dies"));
  const Scope scope{"", "order-5"};
  ASSERT_TRUE(Claim(guard, scope, Note("x")).has_value());
  clock_.Advance(kLease + 1ms);
  LeaseRecoverer recoverer(*store_, Options());  // backoff 4 s doubling, no jitter
  auto report = recoverer.RecoverLapsedOnce([](const LapsedClaim&) { return Resolution::Later(); });
  ASSERT_TRUE(report.ok()) << report.status();
  auto record = store_->Get(scope);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->lease_until_ms, clock_.NowMillis() + 4'000);
  clock_.Advance(4s + 1ms);
  report = recoverer.RecoverLapsedOnce([](const LapsedClaim&) -> absl::StatusOr<Resolution> {
    return absl::UnavailableError("payments API down");
  });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->resolver_errors, 1);
  EXPECT_EQ(report->later, 1);
  EXPECT_EQ(report->last_error.code(), absl::StatusCode::kUnavailable);
  record = store_->Get(scope);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kInProgress);
  EXPECT_EQ(record->lease_until_ms, clock_.NowMillis() + 8'000);  // the second attempt's
}

TEST_P(LeaseRecovererTest, AResolverThatThrowsIsAnErrorAndThePassGoesOn) {
  LeaseGuard guard(*store_, GuardOptions("dies"));
  ASSERT_TRUE(Claim(guard, {"", "a-throws"}, Note("x")).has_value());
  ASSERT_TRUE(Claim(guard, {"", "b-fine"}, Note("y")).has_value());
  clock_.Advance(kLease + 1ms);
  LeaseRecoverer recoverer(*store_, Options());
  auto report = recoverer.RecoverLapsedOnce([&](const LapsedClaim& claim) -> Resolution {
    if (claim.scope.key == "a-throws") throw std::runtime_error("boom");
    return Resolution::Completed(ok_);
  });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->resolver_errors, 1);
  EXPECT_EQ(report->last_error.code(), absl::StatusCode::kInternal);
  EXPECT_NE(report->last_error.message().find("boom"), std::string::npos);
  EXPECT_EQ(report->completed, 1);
  EXPECT_EQ(store_->Get({"", "a-throws"})->state, KeyState::kInProgress);
  EXPECT_EQ(store_->Get({"", "b-fine"})->state, KeyState::kCompleted);
}

TEST_P(LeaseRecovererTest, OnlyLapsedClaimsOfTheTenantAndFilterAreTakenOver) {
  LeaseGuard guard(*store_, GuardOptions("holder"));
  ASSERT_TRUE(Claim(guard, {"acme", "mine"}, Note("x")).has_value());
  ASSERT_TRUE(Claim(guard, {"acme", "not-mine"},
                    StoredResponse{.status = 1, .headers = {{"X-Sent-To", "shipping"}}})
                  .has_value());
  ASSERT_TRUE(Claim(guard, {"other", "mine-too"}, Note("x")).has_value());
  clock_.Advance(kLease + 1ms);
  ASSERT_TRUE(Claim(guard, {"acme", "live"}, Note("x")).has_value());  // its lease runs
  RecoverOptions options = Options();
  options.tenant = "acme";
  options.filter = [](const KeyRecord& r) { return r.response == Note("x"); };
  LeaseRecoverer recoverer(*store_, options);
  std::vector<std::string> asked;
  auto report = recoverer.RecoverLapsedOnce([&](const LapsedClaim& claim) {
    asked.push_back(claim.scope.key);
    return Resolution::Completed(ok_);
  });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(asked, std::vector<std::string>{"mine"});
  EXPECT_EQ(report->lapsed, 1);
  EXPECT_EQ(store_->Get({"acme", "not-mine"})->state, KeyState::kInProgress);
  EXPECT_EQ(store_->Get({"other", "mine-too"})->state, KeyState::kInProgress);
  EXPECT_EQ(store_->Get({"acme", "live"})->state, KeyState::kInProgress);
}

TEST_P(LeaseRecovererTest, InvalidOptionsAreRefusedAndNothingIsRead) {
  RecoverOptions options = Options();
  options.lease = Millis(0);
  LeaseRecoverer no_lease(*store_, options);
  int asked = 0;
  auto count = [&](const LapsedClaim&) {
    ++asked;
    return Resolution::Later();
  };
  EXPECT_EQ(no_lease.RecoverLapsedOnce(count).status().code(), absl::StatusCode::kInvalidArgument);
  options = Options();
  options.backoff.cap = Millis(1);  // below the base
  LeaseRecoverer bad_backoff(*store_, options);
  EXPECT_EQ(bad_backoff.RecoverLapsedOnce(count).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(asked, 0);
}

}  // namespace
}  // namespace idem::testing

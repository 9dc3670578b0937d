// The conformance suite, a claim's note (LeaseWrite::response of a kClaim): kept in the
// in_progress record it wins until the outcome replaces it; and List's lapsed filter, which finds
// the claims a takeover may win (idem serve recovers them, docs/gateway.md).
#include <string>
#include <vector>

#include "store/testing/conformance_helpers.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {
namespace {

StoredResponse Note(std::string body) {
  return {.status = 1,
          .headers = {{":method", "POST"}, {"X-Any", std::string("a\0b", 3)}},
          .body = std::move(body)};
}

LeaseWrite NotedClaim(const Scope& scope, std::string owner, StoredResponse note) {
  return {.kind = LeaseWrite::Kind::kClaim,
          .scope = scope,
          .fingerprint = kFingerprint,
          .owner = std::move(owner),
          .lease = kLease,
          .response = std::move(note)};
}

LeaseWriteResult ApplyOne(Store& store, LeaseWrite write) {
  absl::StatusOr<std::vector<LeaseWriteResult>> results = store.ApplyLeaseBatch({&write, 1});
  EXPECT_TRUE(results.ok()) << results.status();
  if (!results.ok() || results->size() != 1) return {.status = absl::InternalError("no result")};
  return (*results)[0];
}

TEST_P(StoreConformanceTest, ClaimNoteIsKeptInTheInProgressRecordUntilItsOutcome) {
  const Scope scope = MakeScope("noted");
  LeaseWriteResult claim = ApplyOne(*store_, NotedClaim(scope, "w1", Note("body one")));
  IDEM_ASSERT_OK(claim.status);
  ASSERT_TRUE(claim.claimed);
  EXPECT_EQ(claim.record.response, Note("body one"));
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.response, Note("body one"));
  IDEM_ASSERT_OK(store_->Heartbeat(scope, claim.record.fence, kLease));
  IDEM_ASSERT_OK_AND_ASSIGN(got, store_->Get(scope));
  EXPECT_EQ(got.response, Note("body one"));  // a heartbeat keeps it
  IDEM_ASSERT_OK(store_->Complete(scope, claim.record.fence, SampleResponse()));
  IDEM_ASSERT_OK_AND_ASSIGN(got, store_->Get(scope));
  EXPECT_EQ(got.response, SampleResponse());  // the outcome replaces it
}

TEST_P(StoreConformanceTest, ClaimNoteOfATakeoverReplacesTheLapsedHoldersNote) {
  const Scope scope = MakeScope("noted");
  IDEM_ASSERT_OK(ApplyOne(*store_, NotedClaim(scope, "w1", Note("first"))).status);
  clock_.Advance(kLease + 1ms);
  LeaseWriteResult taken = ApplyOne(*store_, NotedClaim(scope, "w2", Note("second")));
  IDEM_ASSERT_OK(taken.status);
  ASSERT_TRUE(taken.claimed);
  EXPECT_TRUE(taken.taken_over);
  EXPECT_EQ(taken.record.response, Note("second"));
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.response, Note("second"));
  EXPECT_EQ(got.owner, "w2");
}

TEST_P(StoreConformanceTest, ListLapsedReturnsOnlyInProgressClaimsWhoseLeasePassed) {
  IDEM_ASSERT_OK(ApplyOne(*store_, NotedClaim(MakeScope("early"), "w", Note("e"))).status);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult done, store_->Claim(MakeClaim(MakeScope("done"))));
  IDEM_ASSERT_OK(store_->Complete(done.record.scope, done.record.fence, SampleResponse()));
  clock_.Advance(kLease / 2);
  IDEM_ASSERT_OK(store_->Claim(MakeClaim(MakeScope("late"))).status());
  EXPECT_TRUE(store_->List({.lapsed = true})->empty());
  clock_.Advance(kLease / 2);  // "early"'s lease ends now: it has passed
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<KeyRecord> lapsed, store_->List({.lapsed = true}));
  ASSERT_EQ(lapsed.size(), 1u);
  EXPECT_EQ(lapsed[0].scope, MakeScope("early"));
  EXPECT_EQ(lapsed[0].response, Note("e"));
  clock_.Advance(kLease);
  IDEM_ASSERT_OK_AND_ASSIGN(lapsed, store_->List({.limit = 1, .lapsed = true}));
  ASSERT_EQ(lapsed.size(), 1u);
  EXPECT_EQ(lapsed[0].scope, MakeScope("early"));
  IDEM_ASSERT_OK_AND_ASSIGN(lapsed, store_->List({.after = MakeScope("early"), .lapsed = true}));
  ASSERT_EQ(lapsed.size(), 1u);
  EXPECT_EQ(lapsed[0].scope, MakeScope("late"));
}

}  // namespace
}  // namespace idem::testing

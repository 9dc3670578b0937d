// The conformance suite, operators' calls (idem keys): List with its filters and paging, Purge.
#include <string>
#include <vector>

#include "store/testing/conformance_helpers.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {
namespace {

using absl::StatusCode;

std::vector<std::string> Keys(const std::vector<KeyRecord>& records) {
  std::vector<std::string> keys;
  for (const KeyRecord& r : records) keys.push_back(r.scope.tenant + "/" + r.scope.key);
  return keys;
}

// a/k1 completed at t0, a/k2 in_progress at t0+1h, b/k1 failed_final at t0+2h; now is t0+3h.
void Populate(Store& store, ManualClock& clock) {
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult c1, store.Claim(MakeClaim(MakeScope("k1", "a"))));
  IDEM_ASSERT_OK(store.Complete(c1.record.scope, c1.record.fence, SampleResponse()));
  clock.Advance(1h);
  IDEM_ASSERT_OK(store.Claim(MakeClaim(MakeScope("k2", "a"), "w", kFingerprint, 10h)).status());
  clock.Advance(1h);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult c3, store.Claim(MakeClaim(MakeScope("k1", "b"))));
  IDEM_ASSERT_OK(store.FailFinal(c3.record.scope, c3.record.fence, SampleResponse(409)));
  clock.Advance(1h);
}

TEST_P(StoreConformanceTest, ListReturnsLiveRecordsInScopeOrderWithTheirResponses) {
  Populate(*store_, clock_);
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<KeyRecord> all, store_->List({}));
  EXPECT_EQ(Keys(all), (std::vector<std::string>{"a/k1", "a/k2", "b/k1"}));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].state, KeyState::kCompleted);
  EXPECT_EQ(all[0].response, SampleResponse());
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(all[2].scope));
  EXPECT_EQ(all[2], got);
}

TEST_P(StoreConformanceTest, ListFiltersByTenantStateAndAge) {
  Populate(*store_, clock_);
  EXPECT_EQ(Keys(*store_->List({.tenant = "a"})), (std::vector<std::string>{"a/k1", "a/k2"}));
  EXPECT_EQ(Keys(*store_->List({.state = KeyState::kInProgress})),
            (std::vector<std::string>{"a/k2"}));
  EXPECT_EQ(Keys(*store_->List({.state = KeyState::kFailedFinal})),
            (std::vector<std::string>{"b/k1"}));
  EXPECT_EQ(Keys(*store_->List({.older_than = 2h})), (std::vector<std::string>{"a/k1", "a/k2"}));
  EXPECT_EQ(Keys(*store_->List({.newer_than = 2h})), (std::vector<std::string>{"b/k1"}));
  EXPECT_EQ(Keys(*store_->List({.tenant = "a", .older_than = 150min})),
            (std::vector<std::string>{"a/k1"}));
  EXPECT_TRUE(store_->List({.tenant = "nobody"})->empty());
}

TEST_P(StoreConformanceTest, ListPagesWithAfterAndLimit) {
  Populate(*store_, clock_);
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<KeyRecord> first, store_->List({.limit = 2}));
  EXPECT_EQ(Keys(first), (std::vector<std::string>{"a/k1", "a/k2"}));
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<KeyRecord> rest,
                            store_->List({.after = first.back().scope, .limit = 2}));
  EXPECT_EQ(Keys(rest), (std::vector<std::string>{"b/k1"}));
}

TEST_P(StoreConformanceTest, ListShowsExpiredRecordsOnlyWhenAsked) {
  Populate(*store_, clock_);
  clock_.Advance(kRetention - 150min);  // a/k1 expired, b/k1 not; a/k2's lease keeps it
  EXPECT_EQ(Keys(*store_->List({})), (std::vector<std::string>{"a/k2", "b/k1"}));
  EXPECT_EQ(Keys(*store_->List({.include_expired = true})),
            (std::vector<std::string>{"a/k1", "a/k2", "b/k1"}));
}

TEST_P(StoreConformanceTest, ListRefusesABadLimitOrAge) {
  EXPECT_EQ(CodeOf(store_->List({.limit = 0})), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(store_->List({.limit = 10001})), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(store_->List({.older_than = Millis(-1)})), StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, PurgeDeletesARecordInAnyStateAndFencesOutItsHolder) {
  Populate(*store_, clock_);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord held, store_->Get(MakeScope("k2", "a")));
  IDEM_ASSERT_OK(store_->Purge(MakeScope("k2", "a")));
  IDEM_ASSERT_OK(store_->Purge(MakeScope("k1", "a")));
  EXPECT_EQ(Keys(*store_->List({})), (std::vector<std::string>{"b/k1"}));
  EXPECT_EQ(CodeOf(store_->Complete(held.scope, held.fence, SampleResponse())),
            StatusCode::kAborted);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult again, store_->Claim(MakeClaim(MakeScope("k2", "a"))));
  EXPECT_TRUE(again.claimed);
  EXPECT_GT(again.record.fence, held.fence);
}

TEST_P(StoreConformanceTest, PurgeOfAnAbsentKeyIsNotFoundAndOfABadScopeInvalid) {
  EXPECT_EQ(CodeOf(store_->Purge(MakeScope("never"))), StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(store_->Purge(MakeScope("has space"))), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::testing

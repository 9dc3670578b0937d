// Concurrent claims of the same keys on the three-node cluster (R=3 buckets), many at once: each
// key has exactly one winner and every loser sees the winner's record. A Create on a replicated
// stream is a conditional publish that the stream's leader checks before Raft replicates it;
// this is the rule the whole store rests on, so it is hammered here beyond the conformance
// suite's one key.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "idem/clock.h"
#include "idem/store.h"
#include "nats_test_support.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using testing::MakeClaim;
using testing::MakeScope;

TEST(NatsClusterRace, EveryKeyClaimedByManyThreadsAtOnceHasExactlyOneWinner) {
  constexpr int kThreads = 8;
  constexpr int kKeys = 100;
  absl::StatusOr<std::string> uri = natstest::StoreUri(
      natstest::Fixture::kCluster, "replicas=3&bucket=" + natstest::FreshBucket("race"));
  ASSERT_TRUE(uri.ok()) << uri.status();
  // One store (connection) per thread, as separate gateways would have.
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < kThreads; ++t) {
    auto store = OpenStore(*uri);
    ASSERT_TRUE(store.ok()) << store.status();
    stores.push_back(*std::move(store));
  }
  // winners[key][thread]: the fence each thread's claim reported, and whether it won.
  std::vector<std::vector<ClaimResult>> results(kKeys, std::vector<ClaimResult>(kThreads));
  std::vector<std::vector<absl::Status>> errors(kKeys, std::vector<absl::Status>(kThreads));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kKeys; ++k) {
        auto claim = stores[t]->Claim(
            MakeClaim(MakeScope("hot-" + std::to_string(k)), "worker-" + std::to_string(t)));
        if (claim.ok()) {
          results[k][t] = *std::move(claim);
        } else {
          errors[k][t] = claim.status();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int k = 0; k < kKeys; ++k) {
    int winners = 0;
    std::string owner;
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_TRUE(errors[k][t].ok()) << errors[k][t];
      if (results[k][t].claimed) {
        ++winners;
        owner = results[k][t].record.owner;
      }
    }
    EXPECT_EQ(winners, 1) << "key hot-" << k;
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(results[k][t].record.owner, owner) << k;
  }
}

// Takeovers of lapsed claims: every thread's claim of the same request expects the same revision
// of each key (the lapsed record's). nats-server before 2.9.21 could accept two such publishes at
// once (issue 4320): on Debian's 2.9.10 two recoverers were both told they took one key over,
// with the same fence. The message id of a write that expects a revision makes the second a
// duplicate, answered as a lost race.
TEST(NatsClusterRace, EveryLapsedClaimTakenOverByManyThreadsAtOnceHasExactlyOneWinner) {
  constexpr int kThreads = 6;
  constexpr int kKeys = 40;
  absl::StatusOr<std::string> uri = natstest::StoreUri(
      natstest::Fixture::kCluster, "replicas=3&bucket=" + natstest::FreshBucket("takeover"));
  ASSERT_TRUE(uri.ok()) << uri.status();
  ManualClock clock;
  StoreOptions options;
  options.clock = &clock;
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < kThreads; ++t) {
    auto store = OpenStore(*uri, options);
    ASSERT_TRUE(store.ok()) << store.status();
    stores.push_back(*std::move(store));
  }
  for (int k = 0; k < kKeys; ++k) {
    auto claim = stores[0]->Claim(MakeClaim(MakeScope("lapsed-" + std::to_string(k)), "dead"));
    ASSERT_TRUE(claim.ok() && claim->claimed) << claim.status();
  }
  clock.Advance(testing::kLease + std::chrono::milliseconds(1));
  std::vector<std::vector<LeaseWriteResult>> results(kKeys,
                                                     std::vector<LeaseWriteResult>(kThreads));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kKeys; ++k) {
        const LeaseWrite take{.kind = LeaseWrite::Kind::kClaim,
                              .scope = MakeScope("lapsed-" + std::to_string(k)),
                              .fingerprint = testing::kFingerprint,
                              .owner = "taker-" + std::to_string(t),
                              .lease = testing::kLease,
                              .claim_nonce = "taker-" + std::to_string(t * kKeys + k)};
        auto batch = stores[t]->ApplyLeaseBatch({&take, 1});
        results[k][t] = batch.ok() ? (*batch)[0] : LeaseWriteResult{.status = batch.status()};
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int k = 0; k < kKeys; ++k) {
    int winners = 0;
    for (int t = 0; t < kThreads; ++t) {
      // A race lost under contention may be Unavailable ("try again"); it never wins.
      if (results[k][t].status.ok() && results[k][t].claimed) ++winners;
    }
    EXPECT_EQ(winners, 1) << "key lapsed-" << k;
    auto record = stores[0]->Get(MakeScope("lapsed-" + std::to_string(k)));
    ASSERT_TRUE(record.ok()) << record.status();
    for (int t = 0; t < kThreads; ++t) {
      if (results[k][t].claimed) {
        EXPECT_EQ(results[k][t].record.owner, record->owner) << "key lapsed-" << k;
        EXPECT_EQ(results[k][t].record.fence, record->fence) << "key lapsed-" << k;
      }
    }
  }
}

}  // namespace
}  // namespace idem

// The NATS store's own rules, on the single-node fixture (replicas=1): how it opens, creates and
// checks its buckets, refuses what it cannot be, and spreads keys over shards.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nats/nats.h>

#include <memory>
#include <string>

#include "idem/store.h"
#include "nats_test_support.h"
#include "store/nats/nats_record.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using absl::StatusCode;
using testing::CodeOf;
using ::testing::HasSubstr;
using testing::MakeClaim;
using testing::MakeScope;
using testing::SampleResponse;

std::string Uri(std::string_view parameters) {
  absl::StatusOr<std::string> uri = natstest::StoreUri(natstest::Fixture::kSingle, parameters);
  EXPECT_TRUE(uri.ok()) << uri.status();
  return uri.value_or("nats://fixture-missing:1");
}

std::string FreshUri(std::string_view extra = "") {
  return Uri(fmt::format("replicas=1&bucket={}{}", natstest::FreshBucket("store"), extra));
}

TEST(NatsStore, UnreachableServersAreUnavailable) {
  StoreOptions options;
  options.lock_timeout = 2s;
  auto store = OpenStore("nats://127.0.0.1:1,127.0.0.1:2?replicas=1", options);
  EXPECT_EQ(CodeOf(store), StatusCode::kUnavailable) << store.status();
}

TEST(NatsStoreWithoutJetStream, OpenIsFailedPreconditionNamingJetStream) {
  absl::StatusOr<std::string> uri = natstest::StoreUri(natstest::Fixture::kPlain, "replicas=1");
  ASSERT_TRUE(uri.ok()) << uri.status();
  auto store = OpenStore(*uri);
  EXPECT_EQ(CodeOf(store), StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("JetStream"));
}

TEST(NatsStore, ThreeReplicasOnOneServerAreFailedPreconditionNamingReplicasOne) {
  auto store = OpenStore(Uri("replicas=3&bucket=" + natstest::FreshBucket("r3")));
  EXPECT_EQ(CodeOf(store), StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("replicas=1"));
}

TEST(NatsStore, MalformedUriIsInvalidArgument) {
  EXPECT_EQ(CodeOf(OpenStore("nats://127.0.0.1:4222?shards=0")), StatusCode::kInvalidArgument);
}

TEST(NatsStore, TransactionModeIsUnimplementedNamingTheSqlStores) {
  auto store = OpenStore(FreshUri());
  ASSERT_TRUE(store.ok()) << store.status();
  auto tx = (*store)->Begin();
  EXPECT_EQ(CodeOf(tx), StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(tx.status().message()), HasSubstr("SQLite"));
  EXPECT_THAT(std::string(tx.status().message()), HasSubstr("PostgreSQL"));
}

TEST(NatsStore, ABucketWithAnotherRetentionIsRefusedUnlessOnlyReading) {
  const std::string uri = FreshUri();
  StoreOptions day;
  day.retention = 24h;
  ASSERT_TRUE(OpenStore(uri, day).ok());
  StoreOptions hour;
  hour.retention = 1h;
  auto refused = OpenStore(uri, hour);
  EXPECT_EQ(CodeOf(refused), StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("max age"));
  hour.create_if_missing = false;  // idem keys: reads and purges whatever the retention
  EXPECT_TRUE(OpenStore(uri, hour).ok());
}

TEST(NatsStore, AMissingBucketIsNotFoundWhenOnlyReading) {
  StoreOptions options;
  options.create_if_missing = false;
  EXPECT_EQ(CodeOf(OpenStore(FreshUri(), options)), StatusCode::kNotFound);
}

TEST(NatsStore, ABucketOfAnotherShardCountIsRefused) {
  const std::string bucket = natstest::FreshBucket("shards");
  ASSERT_TRUE(OpenStore(Uri("replicas=1&shards=2&bucket=" + bucket)).ok());
  auto other = OpenStore(Uri("replicas=1&shards=3&bucket=" + bucket));
  EXPECT_EQ(CodeOf(other), StatusCode::kFailedPrecondition) << other.status();
}

TEST(NatsStore, AKeyValueBucketWithHistoryIsRefused) {
  absl::StatusOr<std::string> urls = natstest::ServerUrls(natstest::Fixture::kSingle);
  ASSERT_TRUE(urls.ok()) << urls.status();
  auto js = natstest::Connect(*urls);
  ASSERT_TRUE(js.ok()) << js.status();
  const std::string bucket = natstest::FreshBucket("history");
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = bucket.c_str();
  config.History = 5;
  kvStore* kv = nullptr;
  ASSERT_EQ(js_CreateKeyValue(&kv, (*js)->js(), &config), NATS_OK);
  kvStore_Destroy(kv);
  auto store = OpenStore(Uri("replicas=1&bucket=" + bucket));
  EXPECT_EQ(CodeOf(store), StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("history"));
}

// Another program's value under a scope's bucket key: reported, never overwritten.
TEST(NatsStore, AForeignValueIsFailedPreconditionAndStaysUntouched) {
  const std::string bucket = natstest::FreshBucket("foreign");
  auto store = OpenStore(Uri("replicas=1&bucket=" + bucket));
  ASSERT_TRUE(store.ok()) << store.status();
  const Scope scope = MakeScope("k1");
  auto js = natstest::Connect(*natstest::ServerUrls(natstest::Fixture::kSingle));
  ASSERT_TRUE(js.ok()) << js.status();
  kvStore* kv = nullptr;
  ASSERT_EQ(js_KeyValue(&kv, (*js)->js(), bucket.c_str()), NATS_OK);
  const std::string key = nats::HashScope(scope, 1).bucket_key;
  ASSERT_EQ(kvStore_PutString(nullptr, kv, key.c_str(), "not idem"), NATS_OK);
  EXPECT_EQ(CodeOf((*store)->Get(scope)), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeOf((*store)->Claim(MakeClaim(scope))), StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeOf((*store)->List({})), StatusCode::kFailedPrecondition);
  kvEntry* entry = nullptr;
  ASSERT_EQ(kvStore_Get(&entry, kv, key.c_str()), NATS_OK);
  EXPECT_EQ(std::string(kvEntry_ValueString(entry)), "not idem");
  kvEntry_Destroy(entry);
  kvStore_Destroy(kv);
}

TEST(NatsStore, ShardsSpreadKeysOverTheirBucketsAndListMergesThemInOrder) {
  const std::string bucket = natstest::FreshBucket("spread");
  auto store = OpenStore(Uri("replicas=1&shards=4&bucket=" + bucket));
  ASSERT_TRUE(store.ok()) << store.status();
  for (int i = 0; i < 40; ++i) {
    const Scope scope = MakeScope(fmt::format("key-{:02}", i));
    auto claim = (*store)->Claim(MakeClaim(scope));
    ASSERT_TRUE(claim.ok()) << claim.status();
    ASSERT_TRUE(claim->claimed);
    ASSERT_TRUE((*store)->Complete(scope, claim->record.fence, SampleResponse()).ok());
  }
  auto listed = (*store)->List({.limit = 100});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ((*listed)[i].scope.key, fmt::format("key-{:02}", i));
  auto js = natstest::Connect(*natstest::ServerUrls(natstest::Fixture::kSingle));
  ASSERT_TRUE(js.ok()) << js.status();
  for (int shard = 0; shard < 4; ++shard) {
    jsStreamInfo* info = nullptr;
    const std::string stream = fmt::format("KV_{}-{}", bucket, shard);
    ASSERT_EQ(js_GetStreamInfo(&info, (*js)->js(), stream.c_str(), nullptr, nullptr), NATS_OK);
    EXPECT_GT(info->State.Msgs, 0u) << stream;
    jsStreamInfo_Destroy(info);
  }
}

// An expired record claimed again is live: the sweeper leaves it (nats_client_test shows that a
// sweeper's delete conditional on the revision it read fails once the claim wrote).
TEST(NatsStore, SweepLeavesAnExpiredKeyThatWasClaimedAgain) {
  ManualClock clock;
  StoreOptions options;
  options.clock = &clock;
  const std::string uri = FreshUri();
  auto store = OpenStore(uri, options);
  ASSERT_TRUE(store.ok()) << store.status();
  const Scope scope = MakeScope("k1");
  auto first = (*store)->Claim(MakeClaim(scope));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*store)->Complete(scope, first->record.fence, SampleResponse()).ok());
  clock.Advance(24h);
  auto again = (*store)->Claim(MakeClaim(scope, "worker-2"));
  ASSERT_TRUE(again.ok() && again->claimed);
  auto swept = (*store)->SweepExpired(10);
  ASSERT_TRUE(swept.ok()) << swept.status();
  EXPECT_EQ(*swept, 0);
  auto got = (*store)->Get(scope);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->owner, "worker-2");
}

}  // namespace
}  // namespace idem

namespace idem {
namespace {

// A store handle remembers the in_progress records it wrote, to skip a read before the next
// fenced write; what it remembers may be stale when another handle (another process) wrote
// since. Neither way may a stale memory decide: the old holder is refused, the new one accepted.
TEST(NatsStore, AHandleRememberingAnOlderClaimRefusesItsHolderAndAcceptsTheNewOne) {
  ManualClock clock;
  StoreOptions options;
  options.clock = &clock;
  const std::string uri = FreshUri();
  auto a = OpenStore(uri, options);
  auto b = OpenStore(uri, options);
  ASSERT_TRUE(a.ok() && b.ok());
  const Scope scope = MakeScope("remembered");
  auto first = (*a)->Claim(MakeClaim(scope, "worker-1", testing::kFingerprint, 1s));
  ASSERT_TRUE(first.ok() && first->claimed) << first.status();
  clock.Advance(2s);
  auto taken = (*b)->TakeOver(MakeClaim(scope, "worker-2"), first->record.fence);
  ASSERT_TRUE(taken.ok()) << taken.status();
  // Handle a still remembers worker-1's claim.
  EXPECT_EQ(CodeOf((*a)->Heartbeat(scope, first->record.fence, 30s)), StatusCode::kAborted);
  EXPECT_EQ(CodeOf((*a)->Complete(scope, first->record.fence, SampleResponse(500))),
            StatusCode::kAborted);
  EXPECT_TRUE((*a)->Heartbeat(scope, taken->fence, 30s).ok());
  EXPECT_TRUE((*a)->Complete(scope, taken->fence, SampleResponse(201)).ok());
  auto got = (*b)->Get(scope);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->owner, "worker-2");
  EXPECT_EQ(got->response, SampleResponse(201));
}

}  // namespace
}  // namespace idem

#include "gateway/replay_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace idem::gateway {
namespace {

CachedOutcome Outcome(std::string fp, std::string body) {
  return {.fingerprint = std::move(fp),
          .response = {.status = 201,
                       .headers = {{"Content-Type", "application/json"}},
                       .body = std::move(body)}};
}

class ReplayCacheTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  Metrics metrics_;
};

TEST_F(ReplayCacheTest, ServesAnOutcomeUntilJustBeforeItsExpiry) {
  ReplayCache cache(1 << 20, clock_, metrics_);
  const int64_t expires = clock_.NowMillis() + 1000;
  cache.Put({"t", "k"}, Outcome("fp", "{}"), expires);
  auto hit = cache.Find({"t", "k"});
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->fingerprint, "fp");
  EXPECT_EQ(hit->response.body, "{}");
  clock_.Advance(Millis(999));
  EXPECT_NE(cache.Find({"t", "k"}), nullptr);
  clock_.Advance(Millis(1));  // at its expiry: never served
  EXPECT_EQ(cache.Find({"t", "k"}), nullptr);
  EXPECT_EQ(cache.bytes(), 0);
  EXPECT_EQ(metrics_.cache_hits.load(), 2u);
  EXPECT_EQ(metrics_.cache_misses.load(), 1u);
}

TEST_F(ReplayCacheTest, TenantsAndKeysNeverCollide) {
  ReplayCache cache(1 << 20, clock_, metrics_);
  const int64_t expires = clock_.NowMillis() + 1000;
  cache.Put({"a", "bk"}, Outcome("1", "one"), expires);
  cache.Put({"ab", "k"}, Outcome("2", "two"), expires);
  EXPECT_EQ(cache.Find({"a", "bk"})->response.body, "one");
  EXPECT_EQ(cache.Find({"ab", "k"})->response.body, "two");
  EXPECT_EQ(cache.Find({"", "abk"}), nullptr);
}

TEST_F(ReplayCacheTest, StaysWithinItsBytesDroppingTheLeastRecentlyUsed) {
  const std::string body(1000, 'x');
  ReplayCache cache(3 * 1400, clock_, metrics_);
  const int64_t expires = clock_.NowMillis() + 60'000;
  cache.Put({"", "a"}, Outcome("f", body), expires);
  cache.Put({"", "b"}, Outcome("f", body), expires);
  cache.Put({"", "c"}, Outcome("f", body), expires);
  ASSERT_NE(cache.Find({"", "a"}), nullptr);  // a is now the most recently used
  cache.Put({"", "d"}, Outcome("f", body), expires);
  EXPECT_LE(cache.bytes(), 3 * 1400);
  EXPECT_EQ(metrics_.cache_bytes.load(), cache.bytes());
  EXPECT_NE(cache.Find({"", "a"}), nullptr);
  EXPECT_EQ(cache.Find({"", "b"}), nullptr);  // the least recently used went first
  EXPECT_NE(cache.Find({"", "d"}), nullptr);
}

TEST_F(ReplayCacheTest, AnOutcomeLargerThanTheBoundOrAlreadyExpiredIsNotCached) {
  ReplayCache cache(1000, clock_, metrics_);
  cache.Put({"", "big"}, Outcome("f", std::string(2000, 'x')), clock_.NowMillis() + 1000);
  cache.Put({"", "old"}, Outcome("f", "x"), clock_.NowMillis());
  EXPECT_EQ(cache.Find({"", "big"}), nullptr);
  EXPECT_EQ(cache.Find({"", "old"}), nullptr);
  EXPECT_EQ(cache.bytes(), 0);
}

TEST_F(ReplayCacheTest, ZeroBytesDisablesTheCache) {
  ReplayCache cache(0, clock_, metrics_);
  cache.Put({"", "k"}, Outcome("f", "x"), clock_.NowMillis() + 1000);
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.Find({"", "k"}), nullptr);
  EXPECT_EQ(metrics_.cache_misses.load(), 0u);
}

TEST_F(ReplayCacheTest, PuttingAKeyAgainReplacesItsEntry) {
  ReplayCache cache(1 << 20, clock_, metrics_);
  cache.Put({"", "k"}, Outcome("f", "first"), clock_.NowMillis() + 1000);
  const int64_t one = cache.bytes();
  cache.Put({"", "k"}, Outcome("f", "again"), clock_.NowMillis() + 1000);
  EXPECT_EQ(cache.bytes(), one);
  EXPECT_EQ(cache.Find({"", "k"})->response.body, "again");
}

TEST_F(ReplayCacheTest, EvictsInLeastRecentlyUsedOrderAfterHitsReorderIt) {
  const std::string body(1000, 'x');
  ReplayCache cache(4 * 1400, clock_, metrics_);
  const int64_t expires = clock_.NowMillis() + 60'000;
  for (const char* key : {"a", "b", "c", "d"}) cache.Put({"", key}, Outcome("f", body), expires);
  // Use order now, least recent first: c, a, d, b.
  ASSERT_NE(cache.Find({"", "a"}), nullptr);
  ASSERT_NE(cache.Find({"", "d"}), nullptr);
  ASSERT_NE(cache.Find({"", "b"}), nullptr);
  cache.Put({"", "e"}, Outcome("f", body), expires);  // evicts c
  cache.Put({"", "f"}, Outcome("f", body), expires);  // evicts a
  EXPECT_EQ(cache.Find({"", "c"}), nullptr);
  EXPECT_EQ(cache.Find({"", "a"}), nullptr);
  cache.Put({"", "g"}, Outcome("f", body), expires);  // evicts d
  EXPECT_EQ(cache.Find({"", "d"}), nullptr);
  for (const char* key : {"b", "e", "f", "g"}) EXPECT_NE(cache.Find({"", key}), nullptr) << key;
  EXPECT_EQ(metrics_.cache_bytes.load(), cache.bytes());
}

TEST_F(ReplayCacheTest, AnOutcomeFoundStaysValidAfterItsEntryIsEvictedOrReplaced) {
  ReplayCache cache(1400, clock_, metrics_);
  const int64_t expires = clock_.NowMillis() + 60'000;
  cache.Put({"", "k"}, Outcome("f", std::string(1000, 'a')), expires);
  std::shared_ptr<const CachedOutcome> held = cache.Find({"", "k"});
  ASSERT_NE(held, nullptr);
  cache.Put({"", "k"}, Outcome("f", std::string(1000, 'b')), expires);      // replaced
  cache.Put({"", "other"}, Outcome("f", std::string(1000, 'c')), expires);  // evicts k
  EXPECT_EQ(cache.Find({"", "k"}), nullptr);
  EXPECT_EQ(held->response.body, std::string(1000, 'a'));
  EXPECT_EQ(held->fingerprint, "f");
}

}  // namespace
}  // namespace idem::gateway

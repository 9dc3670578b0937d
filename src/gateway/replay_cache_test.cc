#include "gateway/replay_cache.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace idem::gateway

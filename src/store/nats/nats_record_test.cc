#include "store/nats/nats_record.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace idem::nats {
namespace {

KeyRecord Sample() {
  KeyRecord r;
  r.scope = {"tenant'a", "key \"1\""};
  r.fingerprint = std::string(64, 'f');
  r.state = KeyState::kCompleted;
  r.fence = 42;
  r.owner = "gateway-7";
  r.lease_until_ms = 1'700'000'030'000;
  r.created_ms = 1'700'000'000'000;
  r.updated_ms = 1'700'000'001'000;
  r.expires_ms = 1'700'086'401'000;
  r.response.status = 201;
  r.response.headers = {{"Content-Type", "application/json"}, {"X-Dup", "2"}, {"X-Dup", ""}};
  r.response.body = std::string("{\"id\":7}\0\xff tail", 14);
  return r;
}

TEST(NatsRecord, RoundTripsEveryFieldByteForByte) {
  absl::StatusOr<KeyRecord> back = DecodeRecord(EncodeRecord(Sample()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Sample());
}

TEST(NatsRecord, AnInProgressRecordKeepsItsClaimNonceAndOthersAreWrittenAsVersionOne) {
  KeyRecord held = Sample();
  held.state = KeyState::kInProgress;
  held.claim_nonce = std::string(32, 'a');
  const std::string encoded = EncodeRecord(held);
  EXPECT_TRUE(encoded.starts_with("IDEMKV2\n"));
  absl::StatusOr<KeyRecord> back = DecodeRecord(encoded);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, held);
  // Without a nonce, or once finished, the record is version 1, which older idem reads.
  held.claim_nonce.clear();
  EXPECT_TRUE(EncodeRecord(held).starts_with("IDEMKV1\n"));
  KeyRecord finished = Sample();
  finished.claim_nonce = std::string(32, 'b');
  EXPECT_TRUE(EncodeRecord(finished).starts_with("IDEMKV1\n"));
  back = DecodeRecord(EncodeRecord(finished));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->claim_nonce, "");
}

TEST(NatsRecord, AValueThatIsNotIdemsIsFailedPrecondition) {
  EXPECT_EQ(DecodeRecord("{\"hello\":1}").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(DecodeRecord("").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(NatsRecord, ATruncatedOrPaddedRecordIsDataLoss) {
  const std::string encoded = EncodeRecord(Sample());
  for (size_t cut : {size_t{8}, size_t{20}, encoded.size() - 1}) {
    EXPECT_EQ(DecodeRecord(encoded.substr(0, cut)).status().code(), absl::StatusCode::kDataLoss)
        << cut;
  }
  EXPECT_EQ(DecodeRecord(encoded + "x").status().code(), absl::StatusCode::kDataLoss);
  std::string bad_state = encoded;
  bad_state[8] = 9;
  EXPECT_EQ(DecodeRecord(bad_state).status().code(), absl::StatusCode::kDataLoss);
}

TEST(NatsRecord, BucketKeysAreStableHexAndSeparateTenantFromKey) {
  const HashedScope a = HashScope({"ab", "c"}, 1);
  EXPECT_EQ(a.bucket_key.size(), 64u);
  EXPECT_EQ(a.bucket_key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a.bucket_key, HashScope({"ab", "c"}, 1).bucket_key);
  EXPECT_NE(a.bucket_key, HashScope({"a", "bc"}, 1).bucket_key);
  EXPECT_EQ(a.shard, 0);
}

// Records already stored are found under these keys and shards: SHA-256 of the tenant's length
// (4 bytes, little-endian), the tenant and the key, in lowercase hex; the shard from the digest's
// first four bytes, big-endian.
TEST(NatsRecord, BucketKeysAndShardsAreThoseOfStoredRecords) {
  const HashedScope a = HashScope({"ab", "c"}, 4);
  EXPECT_EQ(a.bucket_key, "18ceb0f3cee682622e29efe8ab8e35b9fc243888b510ac17eb5659b2d935b336");
  EXPECT_EQ(a.shard, static_cast<int>(0x18ceb0f3u % 4));
  const HashedScope b = HashScope({"t", "key-7"}, 4);
  EXPECT_EQ(b.bucket_key, "ca732e12bcde7209c3a13874a81797a085b83d3a7e958bd2430d0ac6444b9688");
  EXPECT_EQ(b.shard, static_cast<int>(0xca732e12u % 4));
}

TEST(NatsRecord, ShardsSpreadKeysOverEveryBucket) {
  std::set<int> seen;
  for (int i = 0; i < 200; ++i) {
    const int shard = HashScope({"t", "key-" + std::to_string(i)}, 4).shard;
    ASSERT_GE(shard, 0);
    ASSERT_LT(shard, 4);
    seen.insert(shard);
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(NatsRecord, FencesAreUniqueAcrossShardsAndGrowWithTheRevision) {
  EXPECT_EQ(FenceOf(7, 0, 1), 7);
  EXPECT_NE(FenceOf(7, 0, 4), FenceOf(7, 1, 4));
  EXPECT_LT(FenceOf(7, 3, 4), FenceOf(8, 0, 4));
}

}  // namespace
}  // namespace idem::nats

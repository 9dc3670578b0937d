#include "store/nats/nats_uri.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace idem::nats {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(NatsUri, DefaultsAreBucketIdemThreeReplicasOneShard) {
  absl::StatusOr<NatsUri> uri = ParseNatsUri("nats://127.0.0.1:4222");
  ASSERT_TRUE(uri.ok()) << uri.status();
  EXPECT_THAT(uri->servers, ElementsAre("nats://127.0.0.1:4222"));
  EXPECT_EQ(uri->bucket, "idem");
  EXPECT_EQ(uri->replicas, 3);
  EXPECT_EQ(uri->shards, 1);
  EXPECT_EQ(ShardBucket(*uri, 0), "idem");
}

TEST(NatsUri, ServerListAndParametersAreRead) {
  absl::StatusOr<NatsUri> uri =
      ParseNatsUri("nats://a:1,b.example:4223,[::1]:3?bucket=keys_01&replicas=1&shards=4");
  ASSERT_TRUE(uri.ok()) << uri.status();
  EXPECT_THAT(uri->servers, ElementsAre("nats://a:1", "nats://b.example:4223", "nats://[::1]:3"));
  EXPECT_EQ(uri->bucket, "keys_01");
  EXPECT_EQ(uri->replicas, 1);
  EXPECT_EQ(uri->shards, 4);
  EXPECT_EQ(ShardBucket(*uri, 3), "keys_01-3");
}

TEST(NatsUri, CredentialsGoOnEveryServer) {
  absl::StatusOr<NatsUri> uri = ParseNatsUri("nats://u:secret@a:1,b:2");
  ASSERT_TRUE(uri.ok()) << uri.status();
  EXPECT_THAT(uri->servers, ElementsAre("nats://u:secret@a:1", "nats://u:secret@b:2"));
}

TEST(NatsUri, MalformedUrisAreInvalidArgumentAndHideThePassword) {
  for (const char* bad : {"nats://", "nats://u:secret@host", "nats://u:secret@h:0", "nats://h:1,",
                          "nats://h:99999", "nats://h:1?bucket=a.b", "nats://h:1?bucket=",
                          "nats://h:1?replicas=0", "nats://h:1?replicas=6", "nats://h:1?shards=65",
                          "nats://h:1?shards=x", "nats://u:secret@h:1?colour=blue", "http://h:1"}) {
    absl::StatusOr<NatsUri> uri = ParseNatsUri(bad);
    ASSERT_FALSE(uri.ok()) << bad;
    EXPECT_EQ(uri.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(uri.status().message()), Not(HasSubstr("secret"))) << bad;
  }
}

}  // namespace
}  // namespace idem::nats

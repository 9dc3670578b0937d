// The store handle's memory of each in_progress key's last revision (Keyspace::Remembered), which
// saves a read before a fenced write, against a real server: a write of the key that fails may
// have been applied with its acknowledgement lost, so the memory is dropped and the key's next
// write starts from a read.
#include "store/nats/nats_keyspace.h"

#include <gtest/gtest.h>

#include <string>

#include "nats_test_support.h"

namespace idem::nats {
namespace {

using namespace std::chrono_literals;

TEST(NatsKeyspace, AWriteThatFailsForgetsTheKeysRememberedRevision) {
  absl::StatusOr<std::string> urls = natstest::ServerUrls(natstest::Fixture::kSingle);
  ASSERT_TRUE(urls.ok()) << urls.status();
  NatsUri uri;
  uri.servers = {*urls};
  uri.bucket = natstest::FreshBucket("keyspace");
  uri.replicas = 1;
  auto client = JetStreamClient::Connect(uri, 2s);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)
                  ->EnsureBucket(
                      uri.bucket,
                      {.replicas = 1, .max_age = 1h, .description = "idem key store, shard 1 of 1"},
                      true, true)
                  .ok());
  Keyspace keyspace(**client, uri);
  KeyRecord claim;
  claim.scope = {"tenant-a", "k"};
  claim.fingerprint = std::string(64, 'a');
  claim.state = KeyState::kInProgress;
  claim.owner = "worker-1/1";
  claim.lease_until_ms = 30'000;
  claim.expires_ms = 86'400'000;
  auto stored = keyspace.Put(claim, 0);
  ASSERT_TRUE(stored.ok() && stored->has_value()) << stored.status();
  std::optional<Current> remembered = keyspace.Remembered(claim.scope);
  ASSERT_TRUE(remembered.has_value());

  // The bucket's stream goes away under the handle: its next write gets no answer.
  auto js = natstest::Connect(*urls);
  ASSERT_TRUE(js.ok()) << js.status();
  const std::string stream = "KV_" + uri.bucket;
  ASSERT_EQ(js_DeleteStream((*js)->js(), stream.c_str(), nullptr, nullptr), NATS_OK);
  KeyRecord beat = **stored;
  beat.lease_until_ms += 10'000;
  auto failed = keyspace.Put(beat, remembered->revision);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable) << failed.status();
  EXPECT_FALSE(keyspace.Remembered(claim.scope).has_value());
}

}  // namespace
}  // namespace idem::nats

// The conditional writes every lease rule rests on, against a real server: a write or delete that
// names a revision other than the key's last one changes nothing, and "no entry" is revision 0.
#include "store/nats/nats_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "nats_test_support.h"

namespace idem::nats {
namespace {

using namespace std::chrono_literals;

class NatsClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> urls = natstest::ServerUrls(natstest::Fixture::kSingle);
    ASSERT_TRUE(urls.ok()) << urls.status();
    NatsUri uri;
    uri.servers = {*urls};
    auto client = JetStreamClient::Connect(uri, 5s);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    absl::StatusOr<uint64_t> made = client_->EnsureBucket(
        bucket_, {.replicas = 1, .max_age = 1h, .description = "idem key store, shard 1 of 1"},
        true, true);
    ASSERT_TRUE(made.ok()) << made.status();
  }

  const std::string bucket_ = natstest::FreshBucket("client");
  std::unique_ptr<JetStreamClient> client_;
};

TEST_F(NatsClientTest, CreateWinsOnceThenOnlyTheLastRevisionWrites) {
  auto first = client_->Write(bucket_, "k", "a", 0);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->has_value());
  auto second_create = client_->Write(bucket_, "k", "b", 0);
  ASSERT_TRUE(second_create.ok()) << second_create.status();
  EXPECT_FALSE(second_create->has_value());
  auto update = client_->Write(bucket_, "k", "c", **first);
  ASSERT_TRUE(update.ok() && update->has_value());
  auto stale = client_->Write(bucket_, "k", "d", **first);
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->has_value());
  auto read = client_->Read(bucket_, "k");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->present);
  EXPECT_EQ(read->value, "c");
  EXPECT_EQ(read->revision, **update);
}

TEST_F(NatsClientTest, AStaleDeleteChangesNothingAndAFreshOneLeavesAMarker) {
  auto first = client_->Write(bucket_, "k", "a", 0);
  ASSERT_TRUE(first.ok() && first->has_value());
  auto update = client_->Write(bucket_, "k", "b", **first);
  ASSERT_TRUE(update.ok() && update->has_value());
  auto stale = client_->Delete(bucket_, "k", **first, false);
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_FALSE(*stale);
  EXPECT_EQ(client_->Read(bucket_, "k")->value, "b");
  auto removed = client_->Delete(bucket_, "k", **update, false);
  ASSERT_TRUE(removed.ok() && *removed);
  auto read = client_->Read(bucket_, "k");
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read->present);
  EXPECT_GT(read->revision, **update);
  // A create over the marker names the marker's revision, never 0.
  EXPECT_FALSE(client_->Write(bucket_, "k", "c", 0)->has_value());
  EXPECT_TRUE(client_->Write(bucket_, "k", "c", read->revision)->has_value());
}

TEST_F(NatsClientTest, ReadAllGivesTheLastValueOfEveryLiveKey) {
  ASSERT_TRUE(client_->Write(bucket_, "a", "1", 0)->has_value());
  auto b = client_->Write(bucket_, "b", "2", 0);
  ASSERT_TRUE(b.ok() && b->has_value());
  ASSERT_TRUE(client_->Delete(bucket_, "b", **b, false).value_or(false));
  auto c = client_->Write(bucket_, "c", "3", 0);
  ASSERT_TRUE(client_->Write(bucket_, "c", "4", **c)->has_value());
  auto all = client_->ReadAll(bucket_);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].key, "a");
  EXPECT_EQ((*all)[1].value, "4");
}

// Regression: the watcher behind ReadAll delivers every message written while it reads, so a key
// written during a listing came back once per revision (`idem keys list` showed it several times).
TEST_F(NatsClientTest, ReadAllGivesEachKeyOnceWhileAKeyIsBeingRewritten) {
  constexpr int kKeys = 200;
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(client_->Write(bucket_, "k" + std::to_string(i), "v", 0)->has_value());
  }
  auto hot = client_->Write(bucket_, "hot", "0", 0);
  ASSERT_TRUE(hot.ok() && hot->has_value());
  std::atomic<bool> stop{false};
  std::thread writer([&, revision = **hot]() mutable {
    for (int n = 1; !stop.load(); ++n) {
      auto next = client_->Write(bucket_, "hot", std::to_string(n), revision);
      if (next.ok() && next->has_value()) revision = **next;
    }
  });
  for (int listing = 0; listing < 20; ++listing) {
    auto all = client_->ReadAll(bucket_);
    if (!all.ok()) {
      ADD_FAILURE() << all.status();
      continue;
    }
    std::set<std::string> keys;
    for (const Entry& entry : *all) {
      EXPECT_TRUE(keys.insert(entry.key).second) << entry.key << " listed twice";
    }
    EXPECT_EQ(keys.size(), kKeys + 1u);
  }
  stop.store(true);
  writer.join();
}

TEST_F(NatsClientTest, ReadAllOfAnEmptyBucketIsEmpty) {
  auto all = client_->ReadAll(bucket_);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->empty());
}

}  // namespace
}  // namespace idem::nats

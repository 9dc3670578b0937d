// The NATS fixtures (scripts/nats-fixture.sh) as the tests that use them need them: JetStream
// answers on the single node, the three-node cluster places a stream on all three, and the
// plain server has no JetStream.
#include <gtest/gtest.h>
#include <nats/nats.h>

#include <memory>
#include <string>
#include <vector>

#include "nats_test_support.h"

namespace idem::natstest {
namespace {

std::vector<std::string> SplitUrls(const std::string& urls) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= urls.size()) {
    const size_t comma = urls.find(',', start);
    const size_t end = comma == std::string::npos ? urls.size() : comma;
    out.push_back(urls.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Asserts that JetStream on `url` answers an account-info request.
void ExpectAccountInfo(const std::string& url) {
  absl::StatusOr<std::unique_ptr<JetStream>> js = Connect(url);
  ASSERT_TRUE(js.ok()) << js.status();
  jsAccountInfo* info = nullptr;
  jsErrCode error = static_cast<jsErrCode>(0);
  const natsStatus status = js_GetAccountInfo(&info, (*js)->js(), nullptr, &error);
  EXPECT_EQ(status, NATS_OK) << url << ": " << Describe(status);
  EXPECT_EQ(static_cast<int>(error), 0);
  EXPECT_NE(info, nullptr);
  jsAccountInfo_Destroy(info);
}

// Adds a stream `name` on subject `name`.> with `replicas`; returns libnats' status and the
// JetStream error code, and the stream's info in `info` (the caller destroys it).
natsStatus AddStream(jsCtx* js, const std::string& name, int replicas, jsStreamInfo** info,
                     jsErrCode* error) {
  const std::string subject = name + ".>";
  const char* subjects[] = {subject.c_str()};
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  config.Name = name.c_str();
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Replicas = replicas;
  return js_AddStream(info, js, &config, nullptr, error);
}

TEST(NatsFixture, JetStreamAnswersOnTheSingleNode) {
  absl::StatusOr<std::string> urls = ServerUrls(Fixture::kSingle);
  ASSERT_TRUE(urls.ok()) << urls.status();
  EXPECT_EQ(SplitUrls(*urls).size(), 1u);
  ExpectAccountInfo(*urls);
}

TEST(NatsFixture, TheSingleNodeIsNoClusterAndRefusesThreeReplicas) {
  absl::StatusOr<std::string> urls = ServerUrls(Fixture::kSingle);
  ASSERT_TRUE(urls.ok()) << urls.status();
  absl::StatusOr<std::unique_ptr<JetStream>> js = Connect(*urls);
  ASSERT_TRUE(js.ok()) << js.status();
  jsStreamInfo* info = nullptr;
  jsErrCode error = static_cast<jsErrCode>(0);
  EXPECT_NE(AddStream((*js)->js(), "fixture_r3_single", 3, &info, &error), NATS_OK);
  EXPECT_EQ(error, JSStreamReplicasNotSupportedErr);
  jsStreamInfo_Destroy(info);
}

TEST(NatsPlainFixture, TheServerAnswersButHasNoJetStream) {
  absl::StatusOr<std::string> urls = ServerUrls(Fixture::kPlain);
  ASSERT_TRUE(urls.ok()) << urls.status();
  absl::StatusOr<std::unique_ptr<JetStream>> js = Connect(*urls);
  ASSERT_TRUE(js.ok()) << js.status();
  jsAccountInfo* info = nullptr;
  EXPECT_EQ(js_GetAccountInfo(&info, (*js)->js(), nullptr, nullptr), NATS_NO_RESPONDERS);
  jsAccountInfo_Destroy(info);
}

TEST(NatsClusterFixture, JetStreamAnswersOnEachOfTheThreeNodes) {
  absl::StatusOr<std::string> urls = ServerUrls(Fixture::kCluster);
  ASSERT_TRUE(urls.ok()) << urls.status();
  const std::vector<std::string> nodes = SplitUrls(*urls);
  ASSERT_EQ(nodes.size(), 3u);
  for (const std::string& url : nodes) ExpectAccountInfo(url);
}

TEST(NatsClusterFixture, AStreamOfThreeReplicasIsPlacedOnEveryNode) {
  absl::StatusOr<std::string> urls = ServerUrls(Fixture::kCluster);
  ASSERT_TRUE(urls.ok()) << urls.status();
  absl::StatusOr<std::unique_ptr<JetStream>> js = Connect(*urls);
  ASSERT_TRUE(js.ok()) << js.status();
  jsStreamInfo* info = nullptr;
  jsErrCode error = static_cast<jsErrCode>(0);
  const natsStatus status = AddStream((*js)->js(), "fixture_r3_cluster", 3, &info, &error);
  ASSERT_EQ(status, NATS_OK) << Describe(status) << " code " << error;
  ASSERT_NE(info->Cluster, nullptr);
  EXPECT_NE(info->Cluster->Leader, nullptr);
  EXPECT_EQ(info->Cluster->ReplicasLen, 2);  // the leader plus two followers
  jsStreamInfo_Destroy(info);
  jsPubAck* ack = nullptr;
  const natsStatus published =
      js_Publish(&ack, (*js)->js(), "fixture_r3_cluster.a", "x", 1, nullptr, &error);
  EXPECT_EQ(published, NATS_OK) << Describe(published);
  if (ack != nullptr) {
    EXPECT_EQ(ack->Sequence, 1u);
  }
  jsPubAck_Destroy(ack);
  EXPECT_EQ(js_DeleteStream((*js)->js(), "fixture_r3_cluster", nullptr, nullptr), NATS_OK);
}

}  // namespace
}  // namespace idem::natstest

// How libnats' and JetStream's errors become absl::Status codes (no server needed).
#include <gtest/gtest.h>

#include "store/nats/nats_client.h"

namespace idem::nats {
namespace {

// Regression: a write that reached a server just as it lost the stream's leadership came back as
// "raft: not leader" without a JetStream error code, and was Internal (a worker stopped on it in
// the paused-leader fault test) instead of Unavailable (retry, as in any leader election).
TEST(TranslateJetStreamError, NotLeaderWithoutAnErrorCodeIsUnavailable) {
  const absl::Status status =
      TranslateJetStreamError(NATS_ERR, 0, "raft: not leader", "writing to bucket 'b'");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("writing to bucket 'b'"), absl::string_view::npos) << status;
}

TEST(TranslateJetStreamError, TimeoutIsUnavailableWithAnUnknownOutcome) {
  const absl::Status status = TranslateJetStreamError(NATS_TIMEOUT, 0, "", "claiming a key");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("outcome is unknown"), absl::string_view::npos) << status;
}

TEST(TranslateJetStreamError, ClusterNotAvailableIsUnavailable) {
  EXPECT_EQ(TranslateJetStreamError(NATS_ERR, JSClusterNotAvailErr, "unavailable", "w").code(),
            absl::StatusCode::kUnavailable);
}

TEST(TranslateJetStreamError, ReplicasOnAServerThatIsNoClusterIsFailedPrecondition) {
  EXPECT_EQ(
      TranslateJetStreamError(NATS_ERR, JSStreamReplicasNotSupportedErr, "replicas", "w").code(),
      absl::StatusCode::kFailedPrecondition);
}

TEST(TranslateJetStreamError, AnErrorOfNoKnownMeaningIsInternalWithItsText) {
  const absl::Status status = TranslateJetStreamError(NATS_ERR, 0, "something odd", "w");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_NE(status.message().find("something odd"), absl::string_view::npos) << status;
}

}  // namespace
}  // namespace idem::nats

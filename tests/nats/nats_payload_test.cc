// The NATS store against servers whose max_payload is 64 KiB: it learns the limit when it
// connects, says how large a response it keeps (Store::MaxResponseBytes), and refuses a larger
// outcome with OutOfRange before sending anything, a refusal for ever that leaves the key as it
// was (before, the write went out, libnats refused it, and the caller could only retry it).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "idem/store.h"
#include "nats_test_support.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using absl::StatusCode;
using testing::CodeOf;
using testing::MakeClaim;
using testing::MakeScope;

constexpr int64_t kMaxPayload = 64 << 10;  // the fixture's (tests/nats/CMakeLists.txt)

// A response of `bytes` bytes as StoredResponseBytes counts them.
StoredResponse ResponseOf(int64_t bytes) {
  StoredResponse response{.status = 201, .headers = {{"Content-Type", "text/plain"}}};
  response.body.assign(static_cast<size_t>(bytes - 4 - 8 - 22), 'x');
  EXPECT_EQ(StoredResponseBytes(response), bytes);
  return response;
}

TEST(NatsPayload, AnOutcomeLargerThanTheServersMaxPayloadIsOutOfRangeAndTheKeyStaysHeld) {
  absl::StatusOr<std::string> uri = natstest::StoreUri(
      natstest::Fixture::kSingle, "replicas=1&bucket=" + natstest::FreshBucket("payload"));
  ASSERT_TRUE(uri.ok()) << uri.status();
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(*uri);
  ASSERT_TRUE(store.ok()) << store.status();
  const int64_t limit = (*store)->MaxResponseBytes();
  EXPECT_GT(limit, kMaxPayload - 8192);
  EXPECT_LT(limit, kMaxPayload);

  const Scope scope = MakeScope("k1");
  absl::StatusOr<ClaimResult> claim = (*store)->Claim(MakeClaim(scope));
  ASSERT_TRUE(claim.ok() && claim->claimed) << claim.status();
  const int64_t fence = claim->record.fence;
  const absl::Status too_large = (*store)->Complete(scope, fence, ResponseOf(kMaxPayload + 1));
  EXPECT_EQ(CodeOf(too_large), StatusCode::kOutOfRange) << too_large;
  EXPECT_NE(too_large.message().find("max_payload"), std::string::npos) << too_large;
  EXPECT_EQ(CodeOf((*store)->FailFinal(scope, fence, ResponseOf(kMaxPayload))),
            StatusCode::kOutOfRange);
  std::vector<LeaseWrite> batch{{.kind = LeaseWrite::Kind::kComplete,
                                 .scope = scope,
                                 .fence = fence,
                                 .response = ResponseOf(kMaxPayload)}};
  absl::StatusOr<std::vector<LeaseWriteResult>> batched = (*store)->ApplyLeaseBatch(batch);
  ASSERT_TRUE(batched.ok()) << batched.status();
  EXPECT_EQ(CodeOf(batched->front().status), StatusCode::kOutOfRange);
  absl::StatusOr<KeyRecord> held = (*store)->Get(scope);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(held->state, KeyState::kInProgress);
  EXPECT_EQ(held->fence, fence);
  // A response of the limit's size is kept, byte for byte (the limit leaves room for a scope,
  // fingerprint and owner at their longest: a slightly larger one may fit too).
  const StoredResponse at_limit = ResponseOf(limit);
  ASSERT_TRUE((*store)->Complete(scope, fence, at_limit).ok());
  absl::StatusOr<KeyRecord> done = (*store)->Get(scope);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state, KeyState::kCompleted);
  EXPECT_EQ(done->response, at_limit);
}

}  // namespace
}  // namespace idem

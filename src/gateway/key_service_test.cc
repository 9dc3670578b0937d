#include "gateway/key_service.h"

#include <gtest/gtest.h>

#include <future>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#pragma GCC diagnostic pop

#include "guard/temp_sqlite_store.h"

namespace idem::gateway {
namespace {

class KeyServiceTest : public testing::TempSqliteStoreTest {
 protected:
  // Submits `op` and runs the io_context until its completion arrives there.
  KeyOpResult Run(KeyOp op) {
    boost::asio::io_context ioc;
    std::optional<KeyOpResult> got;
    const std::thread::id io_thread = std::this_thread::get_id();
    service_->Submit(std::move(op), ioc.get_executor(), [&](KeyOpResult r) {
      EXPECT_TRUE(std::this_thread::get_id() == io_thread);  // posted back to the caller's executor
      got = std::move(r);
    });
    auto work = boost::asio::make_work_guard(ioc);
    while (!got.has_value()) ioc.run_one();
    return std::move(*got);
  }
  KeyOp Claim(std::string fp) {
    return {.kind = KeyOp::Kind::kClaim,
            .scope = {"", "k"},
            .fingerprint = std::move(fp),
            .owner = "me",
            .lease = Millis(1000)};
  }

  std::unique_ptr<KeyService> service_ = nullptr;
  void SetUp() override {
    TempSqliteStoreTest::SetUp();
    service_ = NewThreadPoolKeyService(*store_, clock_, 2);
  }
  void TearDown() override {
    service_.reset();
    TempSqliteStoreTest::TearDown();
  }
};

TEST_F(KeyServiceTest, FirstClaimWinsSecondSeesTheLiveRecord) {
  KeyOpResult first = Run(Claim("f"));
  ASSERT_TRUE(first.status.ok()) << first.status;
  EXPECT_TRUE(first.claimed);
  KeyOpResult second = Run(Claim("f"));
  ASSERT_TRUE(second.status.ok());
  EXPECT_FALSE(second.claimed);
  EXPECT_EQ(second.record.fence, first.record.fence);
  EXPECT_EQ(second.record.lease_until_ms, clock_.NowMillis() + 1000);
}

TEST_F(KeyServiceTest, LapsedLeaseOfTheSameRequestIsTakenOverWithANewFence) {
  KeyOpResult first = Run(Claim("f"));
  clock_.Advance(Millis(1001));
  KeyOpResult other = Run(Claim("g"));
  EXPECT_FALSE(other.claimed);  // another request never takes the key over
  KeyOpResult retry = Run(Claim("f"));
  ASSERT_TRUE(retry.status.ok());
  EXPECT_TRUE(retry.claimed);
  EXPECT_TRUE(retry.taken_over);
  EXPECT_GT(retry.record.fence, first.record.fence);
  KeyOpResult late = Run({.kind = KeyOp::Kind::kComplete,
                          .scope = {"", "k"},
                          .fence = first.record.fence,
                          .response = {.status = 200}});
  EXPECT_EQ(late.status.code(), absl::StatusCode::kAborted);  // the fence stops a late writer
}

TEST_F(KeyServiceTest, CompleteThenGetReturnsTheStoredResponse) {
  KeyOpResult claim = Run(Claim("f"));
  StoredResponse response{.status = 201, .headers = {{"Content-Type", "text/plain"}}, .body = "ok"};
  KeyOpResult done = Run({.kind = KeyOp::Kind::kComplete,
                          .scope = {"", "k"},
                          .fence = claim.record.fence,
                          .response = response});
  ASSERT_TRUE(done.status.ok()) << done.status;
  KeyOpResult got = Run({.kind = KeyOp::Kind::kGet, .scope = {"", "k"}});
  ASSERT_TRUE(got.status.ok());
  EXPECT_EQ(got.record.state, KeyState::kCompleted);
  EXPECT_EQ(got.record.response, response);
}

TEST_F(KeyServiceTest, ReleaseMakesTheKeyAbsent) {
  KeyOpResult claim = Run(Claim("f"));
  EXPECT_TRUE(Run({.kind = KeyOp::Kind::kHeartbeat,
                   .scope = {"", "k"},
                   .lease = Millis(500),
                   .fence = claim.record.fence})
                  .status.ok());
  EXPECT_TRUE(Run({.kind = KeyOp::Kind::kRelease, .scope = {"", "k"}, .fence = claim.record.fence})
                  .status.ok());
  EXPECT_EQ(Run({.kind = KeyOp::Kind::kGet, .scope = {"", "k"}}).status.code(),
            absl::StatusCode::kNotFound);
}

TEST_F(KeyServiceTest, AfterShutdownOperationsReportUnavailable) {
  service_->Shutdown();
  EXPECT_EQ(Run(Claim("f")).status.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace idem::gateway

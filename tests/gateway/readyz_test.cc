// /readyz answers within a second (a Kubernetes probe's default timeout) even while the store is
// locked by another process and a store call waits out --lock-timeout, and it says why the gateway
// is not ready (issue 39). SQLite: another connection holds the database's write lock.
#include <chrono>
#include <string>

#include "gateway_fixture.h"
#include "store_faults.h"

namespace idem::e2e {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

class ReadyzE2E : public GatewayFixture {};

TEST_F(ReadyzE2E, AnswersWithinOneSecondWhileTheStoreIsLockedAndSaysWhy) {
  StartGateway({"--lock-timeout", "3s", "--record-wait", "1s"});
  ASSERT_EQ(Send(admin_port_, "GET", "/readyz").status, 200);
  {
    WriteLockHolder lock(dir_ + "/idem.db");
    ASSERT_TRUE(lock.locked());
    // A claim that cannot be written: 503, and the gateway now knows writes fail.
    ExpectProblem(Post("while-locked"), 503);
    for (int probe = 0; probe < 3; ++probe) {
      const auto start = steady_clock::now();
      const Response ready = Send(admin_port_, "GET", "/readyz");
      const auto took = std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
      EXPECT_LT(took, milliseconds(1000)) << probe;
      EXPECT_EQ(ready.status, 503) << ready.body;
      EXPECT_EQ(ready.body.rfind("key store unavailable for writes: ", 0), 0u) << ready.body;
    }
  }
  ASSERT_TRUE(Eventually([&] { return Send(admin_port_, "GET", "/readyz").status == 200; }));
  EXPECT_EQ(Post("while-locked").status, 201);
}

}  // namespace
}  // namespace idem::e2e

// End-to-end: whose claim a record is, is never told by what the client sends (issue 37, item 3a).
// Request 1 of key K, X-Request-Id retry-77, is held by the upstream; meanwhile the store's lock
// is held past --lock-timeout, so request 2 (the same key, body and X-Request-Id) gets Unavailable
// from its claim. Its lost-acknowledgement check reads K in_progress under the owner label both
// requests share; only its own claim nonce would make it the holder, so it answers 503 and
// forwards nothing. The upstream runs K once. SQLite: another connection holds the database's
// write lock. PostgreSQL: another connection holds idem_keys in EXCLUSIVE mode (reads go on).
#include <chrono>
#include <string>
#include <thread>

#include "gateway_fixture.h"
#include "store_faults.h"

#ifdef IDEM_E2E_POSTGRES
#include <libpq-fe.h>
#endif

namespace idem::e2e {
namespace {

#ifdef IDEM_E2E_POSTGRES
// Holds idem_keys in EXCLUSIVE mode from another connection while alive, as an operator's
// maintenance transaction would: the gateway's writes wait past its lock timeout, reads go on.
class KeyTableLockHolder {
 public:
  explicit KeyTableLockHolder(const std::string& uri) : conn_(PQconnectdb(uri.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) return;
    PGresult* result = PQexec(conn_, "BEGIN; LOCK TABLE idem_keys IN EXCLUSIVE MODE");
    locked_ = PQresultStatus(result) == PGRES_COMMAND_OK;
    PQclear(result);
  }
  ~KeyTableLockHolder() {
    PQclear(PQexec(conn_, "ROLLBACK"));
    PQfinish(conn_);
  }
  KeyTableLockHolder(const KeyTableLockHolder&) = delete;
  KeyTableLockHolder& operator=(const KeyTableLockHolder&) = delete;
  bool locked() const { return locked_; }

 private:
  PGconn* conn_;
  bool locked_ = false;
};
#endif

class E2E_SUITE(OwnerIdentityE2E) : public GatewayFixture {};
#define OwnerIdentityE2E E2E_SUITE(OwnerIdentityE2E)

TEST_F(OwnerIdentityE2E, ASecondRequestWithTheSameRequestIdWhoseClaimFailedIsNotForwarded) {
  StartGateway({"--lock-timeout", "200ms"});
  const Headers same_id = {{"X-Request-Id", "retry-77"}};
  Headers held = same_id;
  held.emplace_back("X-Charges-Hold", "first");
  Response first;
  std::thread call([&] { first = Post("K", kBody, held); });
  const bool forwarded = Eventually([&] { return Stat("held") == 1; });
  Response second;
  bool locked = false;
  if (forwarded) {
#ifndef IDEM_E2E_POSTGRES
    WriteLockHolder lock(dir_ + "/idem.db");
#else
    KeyTableLockHolder lock(store_);
#endif
    locked = lock.locked();
    if (locked) second = Post("K", kBody, same_id);
  }
  Send(charges_port_, "POST", "/release/first", {}, "");
  call.join();
  ASSERT_TRUE(forwarded);
  ASSERT_TRUE(locked);
  ExpectProblem(second, 503);
  EXPECT_NE(second.body.find("store-unavailable"), std::string::npos) << second.body;
  EXPECT_EQ(first.status, 201) << first.body << first.error;
  // The upstream saw K once, and the outcome of that one call is what K replays.
  EXPECT_EQ(Stat("calls"), 1) << Stats();
  const Response again = Post("K", kBody, same_id);
  EXPECT_EQ(again.status, 201) << again.body;
  EXPECT_EQ(again.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(Stat("calls"), 1) << Stats();
}

}  // namespace
}  // namespace idem::e2e

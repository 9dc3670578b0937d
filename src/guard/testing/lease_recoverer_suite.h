// Test support: the lease recoverer suite (lease_recoverer_suite.cc, lease_recoverer_race_suite.cc)
// runs on every store, SQLite, PostgreSQL and NATS JetStream alike (it needs lease mode and
// Store::List only). A backend instantiates it in its own test binary:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, LeaseRecovererTest, ::testing::Values(factory), ...);
#ifndef IDEM_GUARD_TESTING_LEASE_RECOVERER_SUITE_H_
#define IDEM_GUARD_TESTING_LEASE_RECOVERER_SUITE_H_

#include <optional>
#include <string>

#include "guard/testing/guard_store_test.h"
#include "idem/lease_guard.h"
#include "idem/lease_recoverer.h"

namespace idem::testing {

class LeaseRecovererTest : public GuardStoreTest {
 protected:
  static constexpr Millis kLease = 10s;

  LeaseOptions GuardOptions(std::string owner) {
    LeaseOptions options;
    options.lease = kLease;
    options.owner = std::move(owner);
    return options;
  }

  RecoverOptions Options() {
    RecoverOptions options;
    options.lease = 20s;
    options.owner = "recoverer";
    options.seed = 7;
    options.backoff = {.jitter = retry::Jitter::kNone, .base = 4s, .cap = 60s};
    return options;
  }

  // A note as a service would store it: where the request went and what it carried.
  static StoredResponse Note(const std::string& body) {
    return {.status = 1, .headers = {{"X-Sent-To", "payments"}}, .body = body};
  }

  // Claims `scope` with `note` through `guard`; returns the holder's key (the tests then let its
  // lease lapse, as if the holder had died).
  std::optional<LeasedKey> Claim(LeaseGuard& guard, const Scope& scope,
                                 const StoredResponse& note) {
    auto got = guard.Acquire(scope, "fp-" + scope.key, note);
    EXPECT_TRUE(got.ok() && got->key) << got.status();
    if (!got.ok() || !got->key) return std::nullopt;
    return std::move(got->key);
  }

  StoredResponse ok_{.status = 201, .headers = {{"Location", "/orders/7"}}, .body = "created"};
};

}  // namespace idem::testing

#endif  // IDEM_GUARD_TESTING_LEASE_RECOVERER_SUITE_H_

// Helpers shared by the conformance suite's test files.
#ifndef IDEM_STORE_TESTING_CONFORMANCE_HELPERS_H_
#define IDEM_STORE_TESTING_CONFORMANCE_HELPERS_H_

#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/store.h"

#define IDEM_TEST_CONCAT_INNER_(a, b) a##b
#define IDEM_TEST_CONCAT_(a, b) IDEM_TEST_CONCAT_INNER_(a, b)

// Asserts that `expr` (an absl::Status) is OK.
#define IDEM_ASSERT_OK(expr)                      \
  do {                                            \
    const ::absl::Status idem_test_s_ = (expr);   \
    ASSERT_TRUE(idem_test_s_.ok()) << idem_test_s_; \
  } while (false)
#define IDEM_EXPECT_OK(expr)                      \
  do {                                            \
    const ::absl::Status idem_test_s_ = (expr);   \
    EXPECT_TRUE(idem_test_s_.ok()) << idem_test_s_; \
  } while (false)

// Asserts that `rexpr` (an absl::StatusOr) is OK and moves its value into `lhs`.
#define IDEM_ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  IDEM_ASSERT_OK_AND_ASSIGN_IMPL_(IDEM_TEST_CONCAT_(idem_test_so_, __LINE__), lhs, rexpr)
#define IDEM_ASSERT_OK_AND_ASSIGN_IMPL_(so, lhs, rexpr) \
  auto so = (rexpr);                                    \
  ASSERT_TRUE(so.ok()) << so.status();                  \
  lhs = std::move(so).value()

namespace idem::testing {

inline absl::StatusCode CodeOf(const absl::Status& status) { return status.code(); }
template <typename T>
absl::StatusCode CodeOf(const absl::StatusOr<T>& status_or) {
  return status_or.status().code();
}

using namespace std::chrono_literals;

inline constexpr Millis kRetention = 24h;
inline constexpr Millis kLease = 30s;
inline constexpr char kFingerprint[] =
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
inline constexpr char kOtherFingerprint[] =
    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

inline Scope MakeScope(std::string key, std::string tenant = "tenant-a") {
  return Scope{std::move(tenant), std::move(key)};
}

inline ClaimRequest MakeClaim(const Scope& scope, std::string owner = "worker-1",
                              std::string fingerprint = kFingerprint, Millis lease = kLease) {
  return ClaimRequest{scope, std::move(fingerprint), std::move(owner), lease};
}

// A response that exercises exact storage: repeated and empty headers in a set order, and a body
// with NUL and non-UTF-8 bytes.
inline StoredResponse SampleResponse(int status = 201) {
  StoredResponse response;
  response.status = status;
  response.headers = {{"Content-Type", "application/json"},
                      {"Location", "/transfers/7"},
                      {"X-Dup", "2"},
                      {"X-Dup", "1"},
                      {"X-Empty", ""}};
  response.body = std::string("{\"id\":7}\0\xff\xfe tail", 16);
  return response;
}

// Returns the number of rows of `table` (SELECT count(*)) seen by a fresh transaction.
inline absl::StatusOr<int64_t> CountRows(Store& store, const std::string& table) {
  absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store.Begin();
  if (!tx.ok()) return tx.status();
  absl::StatusOr<std::vector<SqlRow>> rows = (*tx)->Query("SELECT count(*) FROM " + table);
  if (!rows.ok()) return rows.status();
  (*tx)->Rollback().IgnoreError();
  if (rows->size() != 1 || rows->front().size() != 1) return absl::InternalError("bad count");
  const int64_t* count = std::get_if<int64_t>(&rows->front().front());
  if (count == nullptr) return absl::InternalError("count(*) is not an integer");
  return *count;
}

}  // namespace idem::testing

#endif  // IDEM_STORE_TESTING_CONFORMANCE_HELPERS_H_

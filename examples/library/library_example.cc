// libidem from a service of your own: the program docs/library.md quotes, section by section
// (the "[docs:NAME]" markers; a CTest check keeps the page equal to this file). It is built in
// the tree (idem-library-example) and, by tests/package, against an installed libidem with
// find_package(idem) and with pkg-config.
//
// Usage: idem-library-example DATABASE_FILE   (exits 0 when every step behaved as documented)
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

// [docs:includes]
#include "idem/fingerprint.h"
#include "idem/guard.h"
#include "idem/lease_guard.h"
#include "idem/retry/backoff.h"
#include "idem/store.h"
#include "idem/version.h"
// [docs:end]

namespace {

bool Check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  return ok;
}

// [docs:schema]
// Your own tables live beside idem's in the same database; create them in a transaction of the
// store, as you would any migration.
absl::Status CreateOrdersTable(idem::Store& store) {
  auto tx = store.Begin();
  if (!tx.ok()) return tx.status();
  auto created = (*tx)->Execute(
      "CREATE TABLE IF NOT EXISTS orders (order_key TEXT NOT NULL, item TEXT NOT NULL)");
  if (!created.ok()) return created.status();
  return (*tx)->Commit();
}
// [docs:end]

// [docs:guard]
// Places an order at most once per idempotency key: the INSERT below, the key's claim and the
// stored response commit in one transaction. A second arrival of the key gets the first
// response back (replayed = true) and the INSERT does not run again.
absl::StatusOr<idem::GuardResult> PlaceOrder(idem::Guard& guard, const std::string& key,
                                             const std::string& item) {
  const std::string body = R"({"item":")" + item + R"("})";
  const std::string fingerprint =
      idem::Fingerprint({.method = "POST", .target = "/orders", .body = body});
  return guard.Run({.tenant = "shop", .key = key}, fingerprint,
                   [&](idem::Transaction& tx) -> absl::StatusOr<idem::StoredResponse> {
                     const std::vector<idem::SqlValue> params = {key, item};
                     auto inserted =
                         tx.Execute("INSERT INTO orders (order_key, item) VALUES ($1, $2)", params);
                     if (!inserted.ok()) return inserted.status();
                     return idem::StoredResponse{.status = 201, .body = body};
                   });
}
// [docs:end]

// [docs:errors]
// What to do with each status code the guard returns.
const char* WhatToDo(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return "send the response (and Idempotent-Replayed: true when replayed)";
    case absl::StatusCode::kInvalidArgument:
      return "malformed input (a bad key): reject the request, 400";
    case absl::StatusCode::kFailedPrecondition:
      return "the key was used for another request: 422, never the stored response";
    case absl::StatusCode::kAborted:
      return "the key is still in flight elsewhere: 409 with Retry-After";
    case absl::StatusCode::kUnavailable:
      return "the store is busy or down: 503, safe to retry with the same key";
    case absl::StatusCode::kDeadlineExceeded:
      return "out of time: 504, safe to retry with the same key";
    case absl::StatusCode::kNotFound:
      return "idem's tables are missing: open the database once with idem::OpenStore";
    default:
      return "a broken invariant: 500, and log the detail";
  }
}
// [docs:end]

// [docs:lease]
// An effect outside the database (an HTTP call to a payment provider, say): the claim commits
// on its own with a lease, the call runs, the outcome is recorded with the claim's fence.
absl::StatusOr<idem::GuardResult> ChargeOnce(idem::LeaseGuard& guard, const std::string& key) {
  auto acquired =
      guard.Acquire({.tenant = "shop", .key = key}, idem::Sha256Hex("POST /charges amount=500"));
  if (!acquired.ok()) return acquired.status();  // FailedPrecondition: the key was reused
  if (acquired->replay.has_value()) return *acquired->replay;
  if (acquired->in_flight.has_value()) {  // another holder runs it now: ask again later
    return absl::AbortedError("in flight; retry in " +
                              std::to_string(acquired->in_flight->remaining().count()) + " ms");
  }
  idem::LeasedKey& leased = *acquired->key;
  // Call the provider here, sending `key` on as its Idempotency-Key; while a long call runs,
  // call leased.Heartbeat(), which returns the lease's new end. Then record what it answered:
  const idem::StoredResponse answer{.status = 200, .body = R"({"charge":"ch_1"})"};
  return leased.Finish(answer);
}
// [docs:end]

// [docs:retry]
// The calling side: wait with full jitter between attempts of a call that can fail transiently.
absl::Status CallWithBackoff(int failures_before_success) {
  auto backoff = idem::retry::Backoff::Create(
      {.jitter = idem::retry::Jitter::kFull, .base = idem::Millis(1), .cap = idem::Millis(8)},
      /*seed=*/42);
  if (!backoff.ok()) return backoff.status();
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt >= failures_before_success) return absl::OkStatus();  // the call succeeded
    const idem::Millis wait = backoff->NextDelay();
    std::printf("     attempt %d failed; retrying in %lld ms\n", attempt + 1,
                static_cast<long long>(wait.count()));
    // Sleep for `wait` here (std::this_thread::sleep_for) before the next attempt.
  }
  return absl::UnavailableError("gave up after 5 attempts");
}
// [docs:end]

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATABASE_FILE\n", argv[0]);
    return 2;
  }
  std::printf("libidem %s\n", IDEM_VERSION);
  // [docs:open]
  auto store = idem::OpenStore(std::string("sqlite:") + argv[1]);
  if (!store.ok()) {
    std::fprintf(stderr, "cannot open the store: %s\n", store.status().ToString().c_str());
    return 1;
  }
  // [docs:end]
  bool ok = Check(CreateOrdersTable(**store).ok(), "created the orders table");

  idem::Guard guard(**store);
  auto first = PlaceOrder(guard, "order-1", "book");
  auto again = PlaceOrder(guard, "order-1", "book");
  auto reused = PlaceOrder(guard, "order-1", "pen");
  ok &= Check(first.ok() && !first->replayed && first->response.status == 201, "first run");
  ok &= Check(again.ok() && again->replayed && again->response == first->response, "replay");
  ok &= Check(reused.status().code() == absl::StatusCode::kFailedPrecondition, "key reuse");
  std::printf("     key reuse: %s\n", WhatToDo(reused.status()));

  idem::LeaseGuard lease_guard(**store);
  auto charged = ChargeOnce(lease_guard, "charge-1");
  auto charged_again = ChargeOnce(lease_guard, "charge-1");
  ok &= Check(charged.ok() && !charged->replayed, "lease mode: first call");
  ok &= Check(charged_again.ok() && charged_again->replayed, "lease mode: replay");

  ok &= Check(CallWithBackoff(2).ok(), "retry toolkit: succeeded on the third attempt");
  return ok ? 0 : 1;
}

// The ledger: accounts and their balances, changed only by keyed transfers run through the
// run-once guard (idem/guard.h), so a transfer delivered twice moves money once.
//
// Each transfer is one transaction on the store's database: the guard claims the key, the effect
// records the key for good (ledger_transfers), writes both legs of the transfer (ledger_entries)
// and the two balances (ledger_balances), and the guard records the outcome; all of it commits
// together or not at all.
//
// The guard's key record expires after the store's retention (24 h); ledger_transfers does not.
// A transfer arriving again after the retention finds its key there and is replayed, not applied
// again: money never depends on a retention window.
//
// Thread-safety: a Ledger may be used from several threads at once (the guard and the store are).
#ifndef IDEM_EXAMPLES_LEDGER_LEDGER_H_
#define IDEM_EXAMPLES_LEDGER_LEDGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/guard.h"
#include "idem/store.h"
#include "transfer.h"

namespace idem::ledger {

// Every ledger key lives in this tenant of the store, apart from other users of the same store.
inline constexpr std::string_view kTenant = "ledger";

struct LedgerOptions {
  // When set, a transfer that would take the debited account below -overdraft_limit is declined:
  // a deterministic business failure, stored (failed_final) and replayed like a success. Default:
  // none, balances may go as low as they like.
  std::optional<int64_t> overdraft_limit;
  // How many times a transient store error (busy, lock timeout, lost connection) is retried per
  // transfer, with a doubling backoff from 5 ms to 1 s, before it is reported. Default 8.
  int transient_retries = 8;
  // How long to wait for a store locked by another process (StoreOptions::lock_timeout).
  // Default 5 s.
  Millis lock_timeout{5000};
  // false: a SQLite store that does not exist is an error (NotFound) rather than created, for
  // commands that only read. Default true.
  bool create_store = true;
};

enum class ApplyStatus {
  kApplied,   // the transfer ran now and committed
  kReplayed,  // an earlier run applied it; nothing changed now
  kDeclined,  // the business rule refused it (now or in an earlier run); nothing moved
};

struct ApplyResult {
  ApplyStatus status = ApplyStatus::kApplied;
  bool replayed = false;  // the outcome (applied or declined) was stored by an earlier run
  std::string detail;     // why it was declined; empty otherwise
};

class Ledger final {
 public:
  // Opens the store named by `store_uri` (see OpenStore in idem/store.h) and creates the ledger's
  // tables if absent. Errors: those of OpenStore; Unavailable when the tables cannot be created.
  static absl::StatusOr<std::unique_ptr<Ledger>> Open(std::string_view store_uri,
                                                      LedgerOptions options = {});

  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // Applies `transfer`, parsed from `line`, at most once per key. The line (the request body) is
  // fingerprinted, so a key is bound to the transfer it first came with.
  // Errors: FailedPrecondition when the key was used before with another transfer; Aborted when
  // another process holds the key in lease mode; OutOfRange when a balance would leave the 64-bit
  // range; Unavailable when the store stayed busy through every retry; DataLoss when the store
  // holds a corrupt record; Internal for a store failure. On error nothing is stored for the
  // transfer.
  absl::StatusOr<ApplyResult> Apply(const Transfer& transfer, std::string_view line);

  // Returns every account's balance. Errors: Unavailable when the store is busy or down.
  absl::StatusOr<std::map<std::string, int64_t>> Balances();

 private:
  Ledger(std::unique_ptr<Store> store, LedgerOptions options);
  absl::Status CreateTables();
  absl::StatusOr<ApplyResult> ApplyOnce(const Transfer& transfer, std::string_view fingerprint);

  std::unique_ptr<Store> store_;
  LedgerOptions options_;
  Guard guard_;
};

// Renders balances as one JSON object, keys sorted byte-wise: {"a":-5,"b":5}.
std::string BalancesJson(const std::map<std::string, int64_t>& balances);

}  // namespace idem::ledger

#endif  // IDEM_EXAMPLES_LEDGER_LEDGER_H_

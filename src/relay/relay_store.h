// The relay's side of the outbox tables: claiming a batch of due messages, recording what
// became of each, deleting sent messages after retention (docs/outbox.md, "idem relay").
//
// A batch holds, per aggregate, a prefix of its unsent messages in seq order, each due now and
// none behind a message that is waiting for a later attempt (nor, unless dead messages are let
// through, behind a dead one). Publishing them in order and stopping an aggregate at its first
// failure keeps every aggregate's order.
//  - SQLite: one relay runs at a time (the caller holds the relay lock), so a claim is a read.
//  - PostgreSQL: several relays share the work by aggregate. A claim leases the batch's
//    aggregates in idem_outbox_leases (lease rows taken FOR UPDATE SKIP LOCKED, in one short
//    transaction); no row lock is held while the batch is published; the lease lapses by
//    itself if the relay dies. Nothing is found by "id > last seen": a row that commits late is
//    simply pending, and found by the next claim.
//    A relay may claim its next batch while the previous one is still published (claiming
//    ahead): that claim leaves the unfinished batch's messages out and takes its aggregates over
//    from it (their leases then carry the new batch's token), so an aggregate can have messages
//    in both batches. When the earlier batch is finished, the later one is either kept (its
//    leases renewed when its claim has aged) or given back (Successor; Relay::Run decides).
//
// Thread-safety: one RelayStore per relay; on PostgreSQL a claim ahead may run on a second
// thread beside the relay's other calls (each transaction takes its own pooled connection).
#ifndef IDEM_RELAY_RELAY_STORE_H_
#define IDEM_RELAY_RELAY_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/outbox_admin.h"
#include "idem/store.h"

namespace idem::relay {

enum class Dialect { kSqlite, kPostgres };

// The dialect of a store URI: kSqlite for sqlite:..., kPostgres for postgres(ql)://...
absl::StatusOr<Dialect> DialectOf(std::string_view uri);

struct Batch {
  std::string token;       // the lease token (PostgreSQL); "" on SQLite
  int64_t claimed_ms = 0;  // when it was claimed
  int64_t lease_until_ms = 0;
  std::vector<std::string> leased;     // the aggregates leased under `token` (PostgreSQL)
  std::vector<OutboxRecord> messages;  // seq order; per aggregate a prefix of its chain
};

// What became of one attempted message.
struct Outcome {
  int64_t seq = 0;
  enum class Kind { kSent, kRetry, kDead } kind = Kind::kSent;
  int64_t next_attempt_ms = 0;  // kRetry: when it is due again
  std::string error;            // kRetry, kDead: why
};

// The batch a relay claimed ahead while another was published (PostgreSQL, Relay::Run), and what
// becomes of it when that other batch is finished.
struct Successor {
  Batch* batch = nullptr;  // null: there is none (or its claim failed)
  // true: it is published next, so its leases stay held, those it took over from the finished
  // batch included; false: it is given back, its leases released with the finished batch's.
  bool keep = false;
  // With keep, when > 0: its leases are renewed until then, because its publishing starts now.
  // Once that is committed, Finish sets batch->lease_until_ms to it and drops from the batch the
  // aggregates whose lease no longer carries its token (another relay took the lease after it
  // lapsed), with their messages.
  int64_t renew_until_ms = 0;
};

class RelayStore final {
 public:
  // REQUIRES: `store` outlives the RelayStore.
  RelayStore(Store& store, Dialect dialect, std::string owner)
      : store_(store), dialect_(dialect), owner_(std::move(owner)) {}
  RelayStore(const RelayStore&) = delete;
  RelayStore& operator=(const RelayStore&) = delete;

  // Claims up to `max_messages` due messages at `now_ms`, leasing their aggregates until
  // now_ms + lease_ms (PostgreSQL). `let_dead_pass`: a dead message no longer holds back its
  // aggregate's followers. `unfinished` (PostgreSQL, claims_ahead()): a batch of this relay that
  // is claimed but not yet finished; its messages are left out, and its aggregates may be taken
  // over (see above). Errors: Unavailable when the store is busy or down; FailedPrecondition for
  // `unfinished` on SQLite.
  absl::StatusOr<Batch> Claim(int64_t now_ms, int64_t max_messages, int64_t lease_ms,
                              bool let_dead_pass, const Batch* unfinished = nullptr);

  // true when Claim may be given an unfinished batch: on PostgreSQL, whose leases keep a batch
  // claimed ahead apart from the one still published. SQLite's claim is a plain read.
  bool claims_ahead() const { return dialect_ == Dialect::kPostgres; }

  // Records `outcomes` (attempted messages of `batch`) at `now_ms` and releases the batch's
  // leases, in one transaction. A message already sent or purged meanwhile is left as it is.
  // `successor`, when set, is called after the outcomes are recorded and before the leases are
  // released: it returns the batch claimed ahead of `batch` (once that claim has committed) and
  // whether it is kept or given back (Successor). The leases a kept successor took over from
  // `batch` are left alone: releasing them by the batch's token would change nothing, but would
  // cost a lock on each row (the relay's loop measured 24 ms per release so). Errors:
  // Unavailable; then nothing is recorded, released or renewed.
  absl::Status Finish(const Batch& batch, const std::vector<Outcome>& outcomes, int64_t now_ms,
                      const std::function<Successor()>& successor = {});

  // Returns how many messages are pending. Errors: Unavailable.
  absl::StatusOr<int64_t> CountPending();

  // Deletes up to `max_rows` messages sent before `sent_before_ms`, and returns how many.
  absl::StatusOr<int64_t> DeleteSent(int64_t sent_before_ms, int64_t max_rows);

 private:
  absl::StatusOr<Batch> ClaimPostgres(int64_t now_ms, int64_t max_messages, int64_t lease_ms,
                                      bool let_dead_pass, const Batch* unfinished);

  Store& store_;
  Dialect dialect_;
  std::string owner_;
  std::atomic<int64_t> claims_ = 0;  // a claim ahead runs beside the thread that finishes
};

}  // namespace idem::relay

#endif  // IDEM_RELAY_RELAY_STORE_H_

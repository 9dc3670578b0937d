// Where each scope's record lives (bucket and bucket key, by the scope's hash) and how it is read
// and written: a record read comes with the revision a conditional write must name.
//
// Thread-safety: safe to use from many threads at once.
#ifndef IDEM_STORE_NATS_NATS_KEYSPACE_H_
#define IDEM_STORE_NATS_NATS_KEYSPACE_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/record.h"
#include "store/nats/nats_client.h"
#include "store/nats/nats_uri.h"

namespace idem::nats {

struct Slot {
  std::string bucket;
  std::string key;
  int shard = 0;
};

// A scope's last entry: its revision (0: none) and, when it holds a value, the record (with its
// fence resolved), whether live or expired; when it is a delete or purge marker of idem, the fence
// of the record it removed.
struct Current {
  uint64_t revision = 0;
  std::optional<KeyRecord> record;
  int64_t removed_fence = 0;

  // The last fence the key held, as far as its entry tells: a new claim draws above it.
  int64_t last_fence() const { return record.has_value() ? record->fence : removed_fence; }
};

class Keyspace {
 public:
  // `max_age`: the buckets' max age (the store's retention), after which the servers drop a key's
  // every entry; 0 when they never do.
  Keyspace(JetStreamClient& client, NatsUri uri, Millis max_age = Millis(0))
      : client_(client),
        uri_(std::move(uri)),
        max_age_(max_age),
        seen_(static_cast<size_t>(uri_.shards), 0),
        last_seen_at_(static_cast<size_t>(uri_.shards)) {}

  const NatsUri& uri() const { return uri_; }
  JetStreamClient& client() { return client_; }

  Slot Locate(const Scope& scope) const;

  // Errors: FailedPrecondition for a value that is not an idem record or holds another scope;
  // DataLoss for a malformed one; Unavailable.
  absl::StatusOr<Current> Load(const Scope& scope);

  // Writes `record` over revision `expected` of its slot. A fence of 0 in it (a claim or a
  // takeover) asks for a new fence (NewFence, above `replaced_fence`, the last fence the key held:
  // Current::last_fence), written into the record. Returns the record as stored, or nullopt when
  // the slot moved on. Errors: OutOfRange, nothing sent, for a record larger than the servers'
  // max_payload (refused for ever); Unavailable, its outcome unknown when the message says so (a
  // later write finds out by a read).
  absl::StatusOr<std::optional<KeyRecord>> Put(const KeyRecord& record, uint64_t expected,
                                               int64_t replaced_fence = 0);

  // Deletes the scope's record at revision `expected`, its marker keeping `fence` (the record's);
  // false when the slot moved on.
  absl::StatusOr<bool> Remove(const Scope& scope, uint64_t expected, bool purge, int64_t fence);

  // The most bytes of a record's value a write sends (the servers' max_payload less the room its
  // headers take); 0 when the servers announced no limit.
  int64_t MaxValueBytes() const;

  // One conditional write of WriteMany.
  struct Change {
    enum class Kind { kPut, kDelete, kPurge };
    Kind kind = Kind::kPut;
    KeyRecord record;       // kPut: the record (fence 0: a new one, above replaced_fence); else
                            // its scope, and its fence, which the marker keeps
    uint64_t expected = 0;  // the revision it writes over (0: the slot has no entry at all)
    int64_t replaced_fence = 0;
  };
  // Sends every change at once, in order, and waits for each's acknowledgement (one round trip;
  // JetStreamClient::WriteMany). Each result is as Put's (a removal returns its record back).
  std::vector<absl::StatusOr<std::optional<KeyRecord>>> WriteMany(std::vector<Change> changes);

  // The last in_progress record this Keyspace read or wrote for `scope`, with its revision, if
  // it still remembers one. Possibly stale: only a conditional write on its revision may act on
  // it (a write that succeeds proves it was current); never decide a refusal from it. A write of
  // the scope that fails (Put, Remove, WriteMany: its outcome may be unknown, the write applied
  // and its acknowledgement lost) forgets it, so the next write starts from a read.
  std::optional<Current> Remembered(const Scope& scope);

  // Notes that the bucket of `shard` has reached `revision` (a key's revision read).
  void Saw(int shard, uint64_t revision);
  // Notes that `revision` was the last revision of the bucket of `shard` at `at` (its stream's
  // state, or the acknowledgement of a write: every revision written before is below it).
  void SawLast(int shard, uint64_t revision, std::chrono::steady_clock::time_point at);

  // Every record of shard `shard` that holds a value, fences resolved. Values that are not idem
  // records are skipped when `skip_foreign`, else FailedPrecondition.
  absl::StatusOr<std::vector<KeyRecord>> LoadShard(int shard, bool skip_foreign,
                                                   std::vector<uint64_t>* revisions);

 private:
  // Keeps `current` for its scope when it is an in_progress record, forgets the scope otherwise.
  void Remember(const Slot& slot, const Current& current);

  // A fence for a claim or takeover written over revision `expected` of `slot`: the next revision
  // of the slot's bucket as far as this Keyspace has seen it (revisions read, acknowledged or
  // stated, never a fence drawn: a draw whose write does not land must not push later draws
  // ahead), in the slot's shard's residue, and above `replaced_fence`, the last fence the key held.
  // So a fence never exceeds FenceOf the revision its own write lands at (which is above every
  // revision this Keyspace saw and above `expected`), whatever ends the claim (a takeover, a
  // delete marker, the bucket's max age) sits higher, and each key's fences strictly grow across
  // processes: over a record or marker by `replaced_fence` and `expected`, and for a key with no
  // entry left (dropped by the max age) because the bucket's last revision was seen within half
  // the max age (RefreshStale).
  int64_t NewFence(const Slot& slot, uint64_t expected, int64_t replaced_fence);

  // Asks for the last revision of shard `shard`'s bucket when this Keyspace has not seen it for
  // half the max age: a key whose entries all aged out held no fence above FenceOf that revision.
  absl::Status RefreshStale(int shard);

  JetStreamClient& client_;
  const NatsUri uri_;
  const Millis max_age_;
  std::mutex mu_;
  std::unordered_map<std::string, Current> in_progress_;  // bucket/key -> last seen; bounded
  std::vector<uint64_t> seen_;  // per shard: the highest revision of its bucket seen
  // Per shard: when seen_ was last its bucket's last revision (SawLast).
  std::vector<std::chrono::steady_clock::time_point> last_seen_at_;
};

}  // namespace idem::nats

#endif  // IDEM_STORE_NATS_NATS_KEYSPACE_H_

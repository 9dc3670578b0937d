// Where each scope's record lives (bucket and bucket key, by the scope's hash) and how it is read
// and written: a record read comes with the revision a conditional write must name.
//
// Thread-safety: safe to use from many threads at once.
#ifndef IDEM_STORE_NATS_NATS_KEYSPACE_H_
#define IDEM_STORE_NATS_NATS_KEYSPACE_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
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
// fence resolved), whether live or expired.
struct Current {
  uint64_t revision = 0;
  std::optional<KeyRecord> record;
};

class Keyspace {
 public:
  Keyspace(JetStreamClient& client, NatsUri uri)
      : client_(client), uri_(std::move(uri)), seen_(static_cast<size_t>(uri_.shards), 0) {}

  const NatsUri& uri() const { return uri_; }
  JetStreamClient& client() { return client_; }

  Slot Locate(const Scope& scope) const;

  // Errors: FailedPrecondition for a value that is not an idem record or holds another scope;
  // DataLoss for a malformed one; Unavailable.
  absl::StatusOr<Current> Load(const Scope& scope);

  // Writes `record` over revision `expected` of its slot. A fence of 0 in it (a claim or a
  // takeover) asks for a new fence (NewFence, above `replaced_fence`, the fence of the record it
  // replaces), written into the record. Returns the record as stored, or nullopt when the slot
  // moved on. Errors: Unavailable, its outcome unknown when the message says so (a later write
  // finds out by a read).
  absl::StatusOr<std::optional<KeyRecord>> Put(const KeyRecord& record, uint64_t expected,
                                               int64_t replaced_fence = 0);

  // Deletes the scope's record at revision `expected`; false when the slot moved on.
  absl::StatusOr<bool> Remove(const Scope& scope, uint64_t expected, bool purge);

  // One conditional write of WriteMany.
  struct Change {
    enum class Kind { kPut, kDelete, kPurge };
    Kind kind = Kind::kPut;
    KeyRecord record;       // kPut: the record (fence 0: a new one, above replaced_fence); else
                            // only its scope counts
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

  // Notes that the bucket of `shard` has reached `revision` (from its stream's state at open).
  void Saw(int shard, uint64_t revision);

  // Every record of shard `shard` that holds a value, fences resolved. Values that are not idem
  // records are skipped when `skip_foreign`, else FailedPrecondition.
  absl::StatusOr<std::vector<KeyRecord>> LoadShard(int shard, bool skip_foreign,
                                                   std::vector<uint64_t>* revisions);

 private:
  // Keeps `current` for its scope when it is an in_progress record, forgets the scope otherwise.
  void Remember(const Slot& slot, const Current& current);

  // A fence for a claim or takeover written over revision `expected` of `slot`: the next
  // revision of the slot's bucket as far as this Keyspace has seen it (its revisions read and
  // written, its stream's state at open, and the fences it drew, so that each draw is above the
  // last), in the slot's shard's residue, and above `replaced_fence`. Written into the record, it
  // stays the holder's whatever revision the entry later sits at (a message applied again after a
  // quorum lost unflushed writes lands at a new revision). It exceeds the revision its own write
  // lands at only by the draws of this process whose writes did not land since its last
  // acknowledgement, so the delete marker or takeover that ends a claim sits above its fence and
  // each key's fences grow.
  int64_t NewFence(const Slot& slot, uint64_t expected, int64_t replaced_fence);

  JetStreamClient& client_;
  const NatsUri uri_;
  std::mutex mu_;
  std::unordered_map<std::string, Current> in_progress_;  // bucket/key -> last seen; bounded
  std::vector<uint64_t> seen_;  // per shard: the highest revision of its bucket seen
};

}  // namespace idem::nats

#endif  // IDEM_STORE_NATS_NATS_KEYSPACE_H_

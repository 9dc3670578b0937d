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
  Keyspace(JetStreamClient& client, NatsUri uri) : client_(client), uri_(std::move(uri)) {}

  const NatsUri& uri() const { return uri_; }
  JetStreamClient& client() { return client_; }

  Slot Locate(const Scope& scope) const;

  // Errors: FailedPrecondition for a value that is not an idem record or holds another scope;
  // DataLoss for a malformed one; Unavailable.
  absl::StatusOr<Current> Load(const Scope& scope);

  // Writes `record` over revision `expected` of its slot (a fence of 0 in it means "this write's
  // revision"). Returns the record as stored, its fence resolved, or nullopt when the slot moved
  // on. Errors: Unavailable, its outcome unknown when the message says so (a later write finds
  // out by a read).
  absl::StatusOr<std::optional<KeyRecord>> Put(const KeyRecord& record, uint64_t expected);

  // Writes each record (a fresh claim: fence 0) if its slot has no entry at all, all at once and
  // in order. Each result is as Put's.
  absl::StatusOr<std::vector<absl::StatusOr<std::optional<KeyRecord>>>> CreateMany(
      const std::vector<KeyRecord>& records);

  // Deletes the scope's record at revision `expected`; false when the slot moved on.
  absl::StatusOr<bool> Remove(const Scope& scope, uint64_t expected, bool purge);

  // The last in_progress record this Keyspace read or wrote for `scope`, with its revision, if
  // it still remembers one. Possibly stale: only a conditional write on its revision may act on
  // it (a write that succeeds proves it was current); never decide a refusal from it. A write of
  // the scope that fails (Put, Remove, CreateMany: its outcome may be unknown, the write applied
  // and its acknowledgement lost) forgets it, so the next write starts from a read.
  std::optional<Current> Remembered(const Scope& scope);

  // Every record of shard `shard` that holds a value, fences resolved. Values that are not idem
  // records are skipped when `skip_foreign`, else FailedPrecondition.
  absl::StatusOr<std::vector<KeyRecord>> LoadShard(int shard, bool skip_foreign,
                                                   std::vector<uint64_t>* revisions);

 private:
  // Keeps `current` for its scope when it is an in_progress record, forgets the scope otherwise.
  void Remember(const Slot& slot, const Current& current);

  JetStreamClient& client_;
  const NatsUri uri_;
  std::mutex mu_;
  std::unordered_map<std::string, Current> in_progress_;  // bucket/key -> last seen; bounded
};

}  // namespace idem::nats

#endif  // IDEM_STORE_NATS_NATS_KEYSPACE_H_

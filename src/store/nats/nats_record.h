// How a key record lives in a JetStream key-value bucket: the bucket key derived from the scope,
// the shard it falls in, and the record's bytes.
//
// Bucket keys accept only A-Z a-z 0-9 and a few marks, so the key is the lowercase hex SHA-256 of
// the scope (tenant and key, length-prefixed), and the value carries the scope itself: a read
// checks that the record it found is the scope it asked for.
//
// persisted: the value's layout is versioned by its magic ("IDEMKV1\n", "IDEMKV2\n": version 1
// and the claim's nonce); never change a version.
//
// Thread-safety: pure functions.
#ifndef IDEM_STORE_NATS_NATS_RECORD_H_
#define IDEM_STORE_NATS_NATS_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/record.h"

namespace idem::nats {

struct HashedScope {
  std::string bucket_key;  // 64 lowercase hex digits
  int shard = 0;           // 0 .. shards-1
};

// REQUIRES: shards >= 1.
HashedScope HashScope(const Scope& scope, int shards);

// A record as stored. A stored fence of 0 means "the revision of the entry that holds this
// value" (a claim or takeover cannot know its revision before it is written); StoredFence and
// ResolveFence translate.
std::string EncodeRecord(const KeyRecord& record);

// Errors: FailedPrecondition for a value that is not an idem record (another program's key in
// the bucket); DataLoss for an idem record that is truncated or malformed.
absl::StatusOr<KeyRecord> DecodeRecord(std::string_view value);

// The fence a claim or takeover written at `revision` of shard `shard` holds: revisions grow per
// bucket and never repeat, so fences are unique across the shards and grow for each key.
inline int64_t FenceOf(uint64_t revision, int shard, int shards) {
  return static_cast<int64_t>(revision) * shards + shard;
}

}  // namespace idem::nats

#endif  // IDEM_STORE_NATS_NATS_RECORD_H_

// The store's one connection to JetStream, and the only place that speaks libnats: reads of a
// bucket key's last entry from the stream leader, conditional writes (the key-value protocol's
// Create and Update: a publish that carries the revision it expects), conditional deletes, and
// the buckets' creation and checks. Writes are published asynchronously (WriteMany), so a batch
// of them costs one round trip. libnats' errors become absl::Status here, once.
//
// A bucket NAME is the stream KV_NAME on subjects $KV.NAME.>, as every NATS key-value client
// lays it out, so `nats kv` tools see it. Reads go to the stream leader (never a follower's
// direct get), so a read sees every write acknowledged before it.
//
// Writes and reads of a bucket go through a connection to its stream's leader once it is found
// (LeaderRoutes), through the connection to any server until then; bucket calls, listings and
// stream states through the latter.
//
// Thread-safety: safe to use from many threads at once (libnats connections are).
#ifndef IDEM_STORE_NATS_NATS_CLIENT_H_
#define IDEM_STORE_NATS_NATS_CLIENT_H_

#include <nats/nats.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "store/nats/nats_uri.h"

namespace idem::nats {

// The last entry of one bucket key.
struct Entry {
  std::string key;        // the bucket key
  uint64_t revision = 0;  // its last revision (a value or a delete marker); 0 when none is left
  bool present = false;   // a value (not a delete marker, not nothing)
  std::string value;
  // A delete or purge marker: the fence of the record it removed, kept in its Idem-Fence header
  // (0: none, a marker written by an older idem or another program).
  int64_t removed_fence = 0;
};

// The header of idem's delete and purge markers that keeps the fence of the record they removed,
// so that the next claim of the key draws above it (nats_keyspace.h, NewFence).
inline constexpr char kRemovedFenceHeader[] = "Idem-Fence";

// The key-value protocol's header that marks an entry as a delete or a purge.
inline constexpr char kOperationHeader[] = "KV-Operation";

struct PendingWrites;  // nats_write_many.cc
class LeaderRoutes;    // nats_leaders.h

// The name every connection of the store gives the servers (its main one and each leader
// connection alike), as their monitoring lists it.
inline constexpr char kConnectionName[] = "idem key store";

// The stream that holds `bucket` (the KV layout's name for it).
inline std::string StreamOf(const std::string& bucket) { return "KV_" + bucket; }

// How idem's buckets are made: replicas, max age (the store's retention), one value per key.
struct BucketSpec {
  int replicas = 3;
  Millis max_age{0};
  std::string description;  // "idem key store, shard I of N"
};

// Translates libnats' `status` (and JetStream's error code) of `what` into absl::Status, with
// libnats' last error of this thread as its text.
absl::Status TranslateNatsError(natsStatus status, int js_code, std::string_view what);

// The same with the error's text given: the text decides too, for what JetStream reports without
// an error code ("raft: not leader", from a server that lost a stream's leadership while the write
// was on its way: Unavailable, to retry, as during any leader election).
absl::Status TranslateJetStreamError(natsStatus status, int js_code, std::string_view text,
                                     std::string_view what);

class JetStreamClient {
 public:
  // Connects to `uri`'s servers; every request waits at most `timeout` for JetStream.
  // Errors: Unavailable when no server answers; FailedPrecondition when JetStream is not
  // enabled; PermissionDenied for refused credentials.
  static absl::StatusOr<std::unique_ptr<JetStreamClient>> Connect(const NatsUri& uri,
                                                                  Millis timeout);
  JetStreamClient(const JetStreamClient&) = delete;
  JetStreamClient& operator=(const JetStreamClient&) = delete;
  ~JetStreamClient();

  // Creates `bucket` when it does not exist and `create` is set, else checks it: its replicas and
  // history always, its max age only when `check_age`. Returns the last revision of the bucket
  // (its stream's last sequence; 0 for a bucket just created).
  // Errors: NotFound (absent, !create); FailedPrecondition for a bucket of other settings, or
  // replicas the servers cannot place (R>1 on one server); Unavailable.
  absl::StatusOr<uint64_t> EnsureBucket(const std::string& bucket, const BucketSpec& spec,
                                        bool create, bool check_age);

  // The key's last entry. Errors: Unavailable (no answer in time, no stream leader).
  absl::StatusOr<Entry> Read(const std::string& bucket, const std::string& key);

  // Writes `value` as the key's next revision if its last revision is `expected` (0: the key has
  // no entry at all). Returns the new revision, or nullopt when the key moved on (another writer
  // won; nothing written). Errors: Unavailable, its outcome unknown when the message says so.
  absl::StatusOr<std::optional<uint64_t>> Write(const std::string& bucket, const std::string& key,
                                                std::string_view value, uint64_t expected);

  // Deletes the key (a delete marker; `purge`: a purge marker that also drops older revisions) if
  // its last revision is `expected`. Returns false when the key moved on. Errors: as Write.
  absl::StatusOr<bool> Delete(const std::string& bucket, const std::string& key, uint64_t expected,
                              bool purge);

  // One conditional write of WriteMany: `value` at `key` of `bucket` (or, with `marker` "DEL" or
  // "PURGE", a delete or purge marker) if the key's last revision is `expected` (0: no entry).
  struct Publish {
    std::string bucket;
    std::string key;
    std::string value;
    uint64_t expected = 0;
    const char* marker = nullptr;
    int64_t removed_fence = 0;  // with a marker: written in its Idem-Fence header when above 0
  };
  using WriteResult = absl::StatusOr<std::optional<uint64_t>>;
  // Publishes every write at once, in order (so revisions follow the order within a bucket),
  // without waiting for each acknowledgement before the next: all of them take one round trip.
  // At most kWindow writes of this client (all calls together) wait for their acknowledgement at
  // any time; a write beyond waits for a slot. Each write counts once JetStream acknowledged it
  // (its quorum has it); each result is as Write's: a write with no answer in the timeout (or a
  // lost connection) is Unavailable, its outcome unknown. Thread-safe; acknowledgements are
  // taken by one libnats callback for the whole client, no thread is started.
  std::vector<WriteResult> WriteMany(const std::vector<Publish>& writes);
  static constexpr size_t kWindow = 1024;

  // The last entry of every key that holds a value, each key once (its highest revision seen, even
  // when it is written during the call). Every entry acknowledged before the call is in it,
  // whichever replica serves the listing. Errors: Unavailable.
  absl::StatusOr<std::vector<Entry>> ReadAll(const std::string& bucket);

  // A bucket's stream state, as its leader knows it.
  struct StreamState {
    uint64_t first = 0;     // the first sequence still stored
    uint64_t last = 0;      // the last sequence written (stays when its entry is dropped)
    uint64_t messages = 0;  // entries stored
  };
  // Errors: Unavailable (no answer in time); Internal for a bucket that is gone.
  absl::StatusOr<StreamState> State(const std::string& bucket);

  // The name of the server `bucket`'s writes go to now: its stream's leader once found and
  // connected apart; "" while they go through the connection to any server (which may be the
  // leader's too).
  std::string WriteServerOf(const std::string& bucket);

  // The most bytes one message may carry, as the server this client connected to announced it
  // (its max_payload): a record larger than this is refused for ever, on any server of a cluster
  // configured alike.
  int64_t max_payload() const { return max_payload_; }

 private:
  JetStreamClient(natsConnection* connection, jsCtx* js, Millis timeout);
  // Opens async_js_, whose acknowledgement callback answers the writes of every WriteMany, and
  // routes_, whose leader connections' contexts answer to the same callback.
  absl::Status OpenAsync(std::vector<std::string> servers);
  absl::Status CheckBucket(const std::string& bucket, const jsStreamConfig& config,
                           const BucketSpec& spec, bool check_age) const;

  natsConnection* connection_;
  jsCtx* js_;
  const Millis timeout_;
  const int64_t max_payload_;
  std::unique_ptr<PendingWrites> pending_;  // WriteMany's writes awaiting their acknowledgement
  jsCtx* async_js_ = nullptr;                // WriteMany's publishes; its callback's closure: pending_
  std::atomic<bool> published_{false};       // async_js_ sent something (libnats keeps a list)
  std::unique_ptr<LeaderRoutes> routes_;     // each bucket's connection to its stream's leader
};

}  // namespace idem::nats

#endif  // IDEM_STORE_NATS_NATS_CLIENT_H_

// Internal: the gateway's in-memory cache of finished outcomes, so a replay needs no store call.
// A completed or failed_final record never changes until it expires (only an operator's purge
// deletes it sooner; docs/gateway.md says what that means for other gateways' caches), so it may
// be served from memory until its expiry, never at or after it.
//
// Bounded in bytes (keys, fingerprints, stored bodies and headers, plus a fixed overhead per
// entry): past the bound the least recently used entries go. Keyed by (tenant, key); the caller
// still checks the fingerprint (another request with the key is a 422, not a replay).
//
// Thread-safety: every member may be called from any thread at once.
#ifndef IDEM_GATEWAY_REPLAY_CACHE_H_
#define IDEM_GATEWAY_REPLAY_CACHE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"

#include "gateway/metrics.h"
#include "idem/clock.h"
#include "idem/record.h"

namespace idem::gateway {

struct CachedOutcome {
  std::string fingerprint;  // of the request that produced it
  StoredResponse response;
};

class ReplayCache final {
 public:
  // A cache of at most `max_bytes` (0: disabled, Find never finds); expiry is judged by `clock`.
  // Hits, misses and bytes are counted in `metrics`.
  // REQUIRES: `clock` and `metrics` outlive the cache; max_bytes >= 0.
  ReplayCache(int64_t max_bytes, const Clock& clock, Metrics& metrics);
  ReplayCache(const ReplayCache&) = delete;
  ReplayCache& operator=(const ReplayCache&) = delete;

  // Returns the outcome cached for `scope` while its expiry (by the clock) is still ahead, else
  // nullptr (an expired entry is dropped).
  std::shared_ptr<const CachedOutcome> Find(const Scope& scope);

  // Caches a finished outcome of `scope` that expires at `expires_ms` (by the clock). An outcome
  // already expired, or larger than the whole bound, is not cached.
  void Put(const Scope& scope, CachedOutcome outcome, int64_t expires_ms);

  int64_t bytes() const;
  // The cache clock's time (for an expiry counted from a write's start).
  int64_t NowMillis() const { return clock_.NowMillis(); }
  bool enabled() const { return max_bytes_ > 0; }

 private:
  // One cached outcome. Find hands out its outcome as a shared_ptr aliasing the node, so an entry
  // costs one block besides its id and the index's node, and a hit allocates nothing. The LRU
  // order is a list threaded through the nodes themselves.
  struct Node {
    Node(std::string node_id, CachedOutcome cached, int64_t expires, int64_t size)
        : id(std::move(node_id)), outcome(std::move(cached)), expires_ms(expires), bytes(size) {}
    const std::string id;
    const CachedOutcome outcome;
    const int64_t expires_ms;
    const int64_t bytes;
    Node* newer = nullptr;  // guarded by mu_
    Node* older = nullptr;  // guarded by mu_
  };
  // Views of Node::id. Open addressing: a lookup in a large index touches a group of control
  // bytes and a slot, where a chained map walks a bucket's nodes, each one a cache miss.
  using Index = absl::flat_hash_map<std::string_view, std::shared_ptr<Node>>;

  void LinkNewestLocked(Node& node);
  void UnlinkLocked(Node& node);
  void EraseLocked(Index::iterator it);
  void EvictOldestLocked();  // REQUIRES: oldest_ != nullptr

  const int64_t max_bytes_;
  const Clock& clock_;
  Metrics& metrics_;
  mutable std::mutex mu_;
  Index index_;
  Node* newest_ = nullptr;  // most recently used
  Node* oldest_ = nullptr;  // least recently used: evicted first
  int64_t bytes_ = 0;
};

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_REPLAY_CACHE_H_

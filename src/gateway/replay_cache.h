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
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

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
  struct Entry {
    std::string id;
    std::shared_ptr<const CachedOutcome> outcome;
    int64_t expires_ms = 0;
    int64_t bytes = 0;
  };
  using Lru = std::list<Entry>;  // most recently used first

  void EraseLocked(Lru::iterator it);

  const int64_t max_bytes_;
  const Clock& clock_;
  Metrics& metrics_;
  mutable std::mutex mu_;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> index_;
  int64_t bytes_ = 0;
};

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_REPLAY_CACHE_H_

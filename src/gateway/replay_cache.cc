#include "gateway/replay_cache.h"

#include <fmt/format.h>

namespace idem::gateway {
namespace {

// What an entry costs beyond its strings: list and map nodes, the shared outcome's block.
constexpr int64_t kEntryOverhead = 256;

// (tenant, key) as one string that no other pair maps to.
std::string IdOf(const Scope& scope) {
  return fmt::format("{}:{}{}", scope.tenant.size(), scope.tenant, scope.key);
}

int64_t SizeOf(const std::string& id, const CachedOutcome& outcome) {
  int64_t size = kEntryOverhead + static_cast<int64_t>(id.size() + outcome.fingerprint.size() +
                                                       outcome.response.body.size());
  for (const Header& h : outcome.response.headers)
    size += static_cast<int64_t>(h.name.size() + h.value.size() + 64);
  return size;
}

}  // namespace

ReplayCache::ReplayCache(int64_t max_bytes, const Clock& clock, Metrics& metrics)
    : max_bytes_(max_bytes), clock_(clock), metrics_(metrics) {}

std::shared_ptr<const CachedOutcome> ReplayCache::Find(const Scope& scope) {
  if (!enabled()) return nullptr;
  const std::string id = IdOf(scope);
  std::lock_guard<std::mutex> lock(mu_);
  auto found = index_.find(id);
  if (found == index_.end()) {
    metrics_.cache_misses.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Lru::iterator it = found->second;
  if (clock_.NowMillis() >= it->expires_ms) {
    EraseLocked(it);
    metrics_.cache_misses.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it);
  metrics_.cache_hits.fetch_add(1, std::memory_order_relaxed);
  return it->outcome;
}

void ReplayCache::Put(const Scope& scope, CachedOutcome outcome, int64_t expires_ms) {
  if (!enabled() || clock_.NowMillis() >= expires_ms) return;
  std::string id = IdOf(scope);
  const int64_t size = SizeOf(id, outcome);
  if (size > max_bytes_) return;
  auto shared = std::make_shared<const CachedOutcome>(std::move(outcome));
  std::lock_guard<std::mutex> lock(mu_);
  if (auto found = index_.find(id); found != index_.end()) EraseLocked(found->second);
  while (!lru_.empty() && bytes_ + size > max_bytes_) EraseLocked(std::prev(lru_.end()));
  lru_.push_front(
      {.id = id, .outcome = std::move(shared), .expires_ms = expires_ms, .bytes = size});
  index_.emplace(std::move(id), lru_.begin());
  bytes_ += size;
  metrics_.cache_bytes.store(bytes_, std::memory_order_relaxed);
}

int64_t ReplayCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

void ReplayCache::EraseLocked(Lru::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(it->id);
  lru_.erase(it);
  metrics_.cache_bytes.store(bytes_, std::memory_order_relaxed);
}

}  // namespace idem::gateway

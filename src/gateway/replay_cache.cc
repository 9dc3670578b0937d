#include "gateway/replay_cache.h"

#include <fmt/format.h>

#include <iterator>

namespace idem::gateway {
namespace {

// What an entry costs beyond its strings: its node, the index's node, the id's block.
constexpr int64_t kEntryOverhead = 256;

// Appends (tenant, key) as one string that no other pair maps to.
void AppendId(const Scope& scope, std::string& out) {
  fmt::format_to(std::back_inserter(out), "{}:{}{}", scope.tenant.size(), scope.tenant, scope.key);
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
  // Looked up by a view of a per-thread buffer: a lookup, hit or miss, allocates nothing.
  thread_local std::string id;
  id.clear();
  AppendId(scope, id);
  std::lock_guard<std::mutex> lock(mu_);
  auto found = index_.find(id);
  if (found == index_.end()) {
    metrics_.cache_misses.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Node& node = *found->second;
  if (clock_.NowMillis() >= node.expires_ms) {
    EraseLocked(found);
    metrics_.cache_misses.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  UnlinkLocked(node);
  LinkNewestLocked(node);
  metrics_.cache_hits.fetch_add(1, std::memory_order_relaxed);
  return std::shared_ptr<const CachedOutcome>(found->second, &node.outcome);
}

void ReplayCache::Put(const Scope& scope, CachedOutcome outcome, int64_t expires_ms) {
  if (!enabled() || clock_.NowMillis() >= expires_ms) return;
  std::string id;
  AppendId(scope, id);
  const int64_t size = SizeOf(id, outcome);
  if (size > max_bytes_) return;
  auto node = std::make_shared<Node>(std::move(id), std::move(outcome), expires_ms, size);
  // Each lookup in a large index is a walk through memory no cache holds: a new key costs one
  // (its insert) and each eviction one (its find), not two each.
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = index_.try_emplace(node->id, node);
  if (!inserted) {  // the key again: its entry goes first
    EraseLocked(it);
    index_.try_emplace(node->id, node);
  }
  while (oldest_ != nullptr && bytes_ + size > max_bytes_) EvictOldestLocked();
  LinkNewestLocked(*node);
  bytes_ += size;
  metrics_.cache_bytes.store(bytes_, std::memory_order_relaxed);
}

int64_t ReplayCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

void ReplayCache::LinkNewestLocked(Node& node) {
  node.older = newest_;
  node.newer = nullptr;
  if (newest_ != nullptr) newest_->newer = &node;
  newest_ = &node;
  if (oldest_ == nullptr) oldest_ = &node;
}

void ReplayCache::UnlinkLocked(Node& node) {
  (node.newer != nullptr ? node.newer->older : newest_) = node.older;
  (node.older != nullptr ? node.older->newer : oldest_) = node.newer;
  node.newer = node.older = nullptr;
}

void ReplayCache::EvictOldestLocked() { EraseLocked(index_.find(std::string_view(oldest_->id))); }

void ReplayCache::EraseLocked(Index::iterator it) {
  Node& node = *it->second;
  bytes_ -= node.bytes;
  UnlinkLocked(node);
  // The entry may hold the last reference: kept alive here until the slot viewing its id is gone.
  const std::shared_ptr<Node> last = std::move(it->second);
  index_.erase(it);
  metrics_.cache_bytes.store(bytes_, std::memory_order_relaxed);
}

}  // namespace idem::gateway

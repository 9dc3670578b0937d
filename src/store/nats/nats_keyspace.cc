#include "store/nats/nats_keyspace.h"

#include <fmt/format.h>

#include <algorithm>

#include "store/nats/nats_record.h"

namespace idem::nats {
namespace {

// Bound of the remembered in_progress records (a claim is remembered until its outcome).
constexpr size_t kRememberedRecords = 65536;

std::string SlotName(const Slot& slot) { return slot.bucket + "/" + slot.key; }

}  // namespace

void Keyspace::Remember(const Slot& slot, const Current& current) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!current.record.has_value() || current.record->state != KeyState::kInProgress) {
    in_progress_.erase(SlotName(slot));
    return;
  }
  if (in_progress_.size() >= kRememberedRecords) in_progress_.clear();
  in_progress_[SlotName(slot)] = current;
}

std::optional<Current> Keyspace::Remembered(const Scope& scope) {
  const std::string name = SlotName(Locate(scope));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_progress_.find(name);
  if (it == in_progress_.end() || it->second.record->scope != scope) return std::nullopt;
  return it->second;
}

void Keyspace::Saw(int shard, uint64_t revision) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t& seen = seen_.at(static_cast<size_t>(shard));
  seen = std::max(seen, revision);
}

int64_t Keyspace::NewFence(const Slot& slot, uint64_t expected, int64_t replaced_fence) {
  uint64_t next = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t& seen = seen_.at(static_cast<size_t>(slot.shard));
    seen = std::max(seen, expected) + 1;  // drawn: the next one is above it, even in one batch
    next = seen;
  }
  int64_t fence = FenceOf(next, slot.shard, uri_.shards);
  if (fence <= replaced_fence) {
    fence = replaced_fence + uri_.shards - (replaced_fence - slot.shard) % uri_.shards;
  }
  return fence;
}

Slot Keyspace::Locate(const Scope& scope) const {
  HashedScope hashed = HashScope(scope, uri_.shards);
  return Slot{ShardBucket(uri_, hashed.shard), std::move(hashed.bucket_key), hashed.shard};
}

absl::StatusOr<Current> Keyspace::Load(const Scope& scope) {
  const Slot slot = Locate(scope);
  absl::StatusOr<Entry> entry = client_.Read(slot.bucket, slot.key);
  if (!entry.ok()) return entry.status();
  Saw(slot.shard, entry->revision);
  Current current{.revision = entry->revision};
  if (!entry->present) return current;
  absl::StatusOr<KeyRecord> record = DecodeRecord(entry->value);
  if (!record.ok()) return record.status();
  if (record->scope != scope) {
    return absl::FailedPreconditionError(fmt::format(
        "bucket key {} of bucket '{}' holds key '{}' of tenant '{}', not the key asked for",
        slot.key, slot.bucket, record->scope.key, record->scope.tenant));
  }
  // A record of an older idem, whose claims left the fence to their revision.
  if (record->fence == 0) record->fence = FenceOf(entry->revision, slot.shard, uri_.shards);
  current.record = *std::move(record);
  Remember(slot, current);
  return current;
}

absl::StatusOr<std::optional<KeyRecord>> Keyspace::Put(const KeyRecord& record, uint64_t expected,
                                                       int64_t replaced_fence) {
  const Slot slot = Locate(record.scope);
  std::optional<KeyRecord> stored(record);
  if (stored->fence == 0) stored->fence = NewFence(slot, expected, replaced_fence);
  absl::StatusOr<std::optional<uint64_t>> written =
      client_.Write(slot.bucket, slot.key, EncodeRecord(*stored), expected);
  if (!written.ok()) {
    Remember(slot, Current{});  // the write may have gone through: the revision is unknown now
    return written.status();
  }
  if (!written->has_value()) return std::optional<KeyRecord>();
  Saw(slot.shard, **written);
  Remember(slot, Current{.revision = **written, .record = stored});
  return stored;
}

absl::StatusOr<std::vector<absl::StatusOr<std::optional<KeyRecord>>>> Keyspace::CreateMany(
    std::vector<KeyRecord> records) {
  std::vector<JetStreamClient::Create> creates;
  std::vector<Slot> slots;
  for (KeyRecord& record : records) {
    slots.push_back(Locate(record.scope));
    if (record.fence == 0) record.fence = NewFence(slots.back(), 0, 0);
    creates.push_back({slots.back().bucket, slots.back().key, EncodeRecord(record)});
  }
  auto written = client_.CreateMany(creates);
  if (!written.ok()) return written.status();
  std::vector<absl::StatusOr<std::optional<KeyRecord>>> out;
  for (size_t i = 0; i < records.size(); ++i) {
    const absl::StatusOr<std::optional<uint64_t>>& w = (*written)[i];
    if (!w.ok()) {
      Remember(slots[i], Current{});  // may have been written: nothing known of its revision
      out.push_back(w.status());
    } else if (!w->has_value()) {
      out.push_back(std::optional<KeyRecord>());
    } else {
      KeyRecord stored = std::move(records[i]);
      Saw(slots[i].shard, **w);
      Remember(slots[i], Current{.revision = **w, .record = stored});
      out.push_back(std::optional<KeyRecord>(std::move(stored)));
    }
  }
  return out;
}

absl::StatusOr<bool> Keyspace::Remove(const Scope& scope, uint64_t expected, bool purge) {
  const Slot slot = Locate(scope);
  absl::StatusOr<bool> removed = client_.Delete(slot.bucket, slot.key, expected, purge);
  // Removed, or maybe removed (an error: the outcome may be unknown): forget the revision.
  if (!removed.ok() || *removed) Remember(slot, Current{});
  return removed;
}

absl::StatusOr<std::vector<KeyRecord>> Keyspace::LoadShard(int shard, bool skip_foreign,
                                                           std::vector<uint64_t>* revisions) {
  absl::StatusOr<std::vector<Entry>> entries = client_.ReadAll(ShardBucket(uri_, shard));
  if (!entries.ok()) return entries.status();
  std::vector<KeyRecord> records;
  for (const Entry& entry : *entries) {
    absl::StatusOr<KeyRecord> record = DecodeRecord(entry.value);
    if (!record.ok()) {
      if (skip_foreign) continue;
      return record.status();
    }
    Saw(shard, entry.revision);
    if (record->fence == 0) record->fence = FenceOf(entry.revision, shard, uri_.shards);
    records.push_back(*std::move(record));
    if (revisions != nullptr) revisions->push_back(entry.revision);
  }
  return records;
}

}  // namespace idem::nats

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
  std::vector<Change> one;
  one.push_back({.record = record, .expected = expected, .replaced_fence = replaced_fence});
  return std::move(WriteMany(std::move(one)).front());
}

absl::StatusOr<bool> Keyspace::Remove(const Scope& scope, uint64_t expected, bool purge) {
  std::vector<Change> one(1);
  one.front().kind = purge ? Change::Kind::kPurge : Change::Kind::kDelete;
  one.front().record.scope = scope;
  one.front().expected = expected;
  absl::StatusOr<std::optional<KeyRecord>> removed = std::move(WriteMany(std::move(one)).front());
  if (!removed.ok()) return removed.status();
  return removed->has_value();
}

std::vector<absl::StatusOr<std::optional<KeyRecord>>> Keyspace::WriteMany(
    std::vector<Change> changes) {
  std::vector<JetStreamClient::Publish> publishes;
  std::vector<Slot> slots;
  for (Change& change : changes) {
    slots.push_back(Locate(change.record.scope));
    JetStreamClient::Publish publish{
        .bucket = slots.back().bucket, .key = slots.back().key, .expected = change.expected};
    if (change.kind == Change::Kind::kPut) {
      if (change.record.fence == 0) {
        change.record.fence = NewFence(slots.back(), change.expected, change.replaced_fence);
      }
      publish.value = EncodeRecord(change.record);
    } else {
      publish.marker = change.kind == Change::Kind::kPurge ? "PURGE" : "DEL";
    }
    publishes.push_back(std::move(publish));
  }
  std::vector<JetStreamClient::WriteResult> written = client_.WriteMany(publishes);
  std::vector<absl::StatusOr<std::optional<KeyRecord>>> out;
  for (size_t i = 0; i < changes.size(); ++i) {
    const JetStreamClient::WriteResult& w = written[i];
    if (!w.ok()) {
      Remember(slots[i], Current{});  // may have been written: nothing known of its revision
      out.push_back(w.status());
    } else if (!w->has_value()) {
      out.push_back(std::optional<KeyRecord>());
    } else {
      Saw(slots[i].shard, **w);
      if (changes[i].kind == Change::Kind::kPut) {
        Remember(slots[i], Current{.revision = **w, .record = changes[i].record});
      } else {
        Remember(slots[i], Current{});
      }
      out.push_back(std::optional<KeyRecord>(std::move(changes[i].record)));
    }
  }
  return out;
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

#include "store/nats/nats_keyspace.h"

#include <fmt/format.h>

#include <algorithm>

#include "store/nats/nats_record.h"

namespace idem::nats {
namespace {

// Bound of the remembered in_progress records (a claim is remembered until its outcome).
constexpr size_t kRememberedRecords = 65536;

// The room a write's headers take in its message beside the record (the expected revision, the
// message id naming the subject, a marker's operation and fence): libnats counts them in the
// max_payload too.
constexpr int64_t kHeaderRoom = 512;

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

void Keyspace::SawLast(int shard, uint64_t revision, std::chrono::steady_clock::time_point at) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t& seen = seen_.at(static_cast<size_t>(shard));
  seen = std::max(seen, revision);
  auto& seen_at = last_seen_at_.at(static_cast<size_t>(shard));
  seen_at = std::max(seen_at, at);
}

absl::Status Keyspace::RefreshStale(int shard) {
  if (max_age_.count() <= 0) return absl::OkStatus();
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (now - last_seen_at_.at(static_cast<size_t>(shard)) < max_age_ / 2) {
      return absl::OkStatus();
    }
  }
  absl::StatusOr<JetStreamClient::StreamState> state = client_.State(ShardBucket(uri_, shard));
  if (!state.ok()) return state.status();
  SawLast(shard, state->last, now);
  return absl::OkStatus();
}

int64_t Keyspace::NewFence(const Slot& slot, uint64_t expected, int64_t replaced_fence) {
  uint64_t next = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    next = std::max(seen_.at(static_cast<size_t>(slot.shard)), expected) + 1;
  }
  int64_t fence = FenceOf(next, slot.shard, uri_.shards);
  if (fence <= replaced_fence) {
    fence = replaced_fence + uri_.shards - (replaced_fence - slot.shard) % uri_.shards;
  }
  return fence;
}

int64_t Keyspace::MaxValueBytes() const {
  const int64_t max_payload = client_.max_payload();
  return max_payload > 0 ? std::max<int64_t>(max_payload - kHeaderRoom, 1) : 0;
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
  if (!entry->present) {
    current.removed_fence = entry->removed_fence;
    return current;
  }
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

absl::StatusOr<bool> Keyspace::Remove(const Scope& scope, uint64_t expected, bool purge,
                                      int64_t fence) {
  std::vector<Change> one(1);
  one.front().kind = purge ? Change::Kind::kPurge : Change::Kind::kDelete;
  one.front().record.scope = scope;
  one.front().record.fence = fence;
  one.front().expected = expected;
  absl::StatusOr<std::optional<KeyRecord>> removed = std::move(WriteMany(std::move(one)).front());
  if (!removed.ok()) return removed.status();
  return removed->has_value();
}

std::vector<absl::StatusOr<std::optional<KeyRecord>>> Keyspace::WriteMany(
    std::vector<Change> changes) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<absl::StatusOr<std::optional<KeyRecord>>> out(changes.size(),
                                                            std::optional<KeyRecord>());
  std::vector<JetStreamClient::Publish> publishes;
  std::vector<size_t> sent;  // the change each publish writes
  std::vector<Slot> slots;
  const int64_t max_value = MaxValueBytes();
  for (size_t i = 0; i < changes.size(); ++i) {
    Change& change = changes[i];
    slots.push_back(Locate(change.record.scope));
    const Slot& slot = slots.back();
    JetStreamClient::Publish publish{.bucket = slot.bucket, .key = slot.key,
                                     .expected = change.expected};
    if (change.kind == Change::Kind::kPut) {
      if (change.record.fence == 0) {
        // A key with no entry left may have held fences up to its bucket's last revision.
        if (change.expected == 0) {
          if (absl::Status fresh = RefreshStale(slot.shard); !fresh.ok()) {
            out[i] = fresh;
            continue;
          }
        }
        change.record.fence = NewFence(slot, change.expected, change.replaced_fence);
      }
      publish.value = EncodeRecord(change.record);
      if (max_value > 0 && static_cast<int64_t>(publish.value.size()) > max_value) {
        out[i] = absl::OutOfRangeError(fmt::format(
            "the record of key '{}' of tenant '{}' takes {} bytes, more than the NATS servers "
            "take in one message ({} bytes of record within their max_payload of {}); it is "
            "refused for ever: keep a smaller outcome, or raise max_payload on every server",
            change.record.scope.key, change.record.scope.tenant, publish.value.size(), max_value,
            client_.max_payload()));
        continue;
      }
    } else {
      publish.marker = change.kind == Change::Kind::kPurge ? "PURGE" : "DEL";
      publish.removed_fence = change.record.fence;
    }
    publishes.push_back(std::move(publish));
    sent.push_back(i);
  }
  std::vector<JetStreamClient::WriteResult> written = client_.WriteMany(publishes);
  for (size_t j = 0; j < sent.size(); ++j) {
    const size_t i = sent[j];
    const JetStreamClient::WriteResult& w = written[j];
    if (!w.ok()) {
      Remember(slots[i], Current{});  // may have been written: nothing known of its revision
      out[i] = w.status();
    } else if (!w->has_value()) {
      out[i] = std::optional<KeyRecord>();
    } else {
      // Acknowledged: the bucket's last revision when it was written, above every one before.
      SawLast(slots[i].shard, **w, started);
      if (changes[i].kind == Change::Kind::kPut) {
        Remember(slots[i], Current{.revision = **w, .record = changes[i].record});
      } else {
        Remember(slots[i], Current{});
      }
      out[i] = std::optional<KeyRecord>(std::move(changes[i].record));
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

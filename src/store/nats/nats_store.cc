// The key store on JetStream key-value buckets: lease mode through nats_lease_ops, the operators'
// calls (List, Purge, SweepExpired) by reading whole buckets.
#include "idem/nats_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <tuple>
#include <vector>

#include "common/status_macros.h"
#include "core/key_query.h"
#include "idem/key.h"
#include "store/nats/nats_client.h"
#include "store/nats/nats_keyspace.h"
#include "store/nats/nats_lease_ops.h"
#include "store/nats/nats_uri.h"

namespace idem {
namespace nats {
namespace {

// The room a record takes in its value beside its response: its fixed fields, the scope, the
// fingerprint, the owner label and the claim's nonce, each well within it.
constexpr int64_t kRecordRoom = 4096;

bool Sweepable(const KeyRecord& r, int64_t now) {
  return r.expires_ms <= now && (r.state != KeyState::kInProgress || r.lease_until_ms <= now);
}

bool Selected(const KeyRecord& r, const KeyQuery& q, int64_t now) {
  if (!q.include_expired && r.expires_ms <= now) return false;
  if (q.tenant && r.scope.tenant != *q.tenant) return false;
  if (q.state && r.state != *q.state) return false;
  if (q.older_than && r.created_ms > now - q.older_than->count()) return false;
  if (q.newer_than && r.created_ms <= now - q.newer_than->count()) return false;
  if (q.after && std::tie(r.scope.tenant, r.scope.key) <= std::tie(q.after->tenant, q.after->key))
    return false;
  if (q.lapsed && (r.state != KeyState::kInProgress || r.lease_until_ms > now)) return false;
  return true;
}

class NatsStore final : public Store {
 public:
  // `last_revisions`: each shard's bucket's last revision at `opened`, where new fences start.
  NatsStore(std::unique_ptr<JetStreamClient> client, NatsUri uri, const StoreOptions& options,
            const std::vector<uint64_t>& last_revisions,
            std::chrono::steady_clock::time_point opened)
      : client_(std::move(client)),
        keyspace_(*client_, std::move(uri), options.retention),
        rules_{options.clock != nullptr ? *options.clock : SystemClock(), options.retention} {
    for (size_t shard = 0; shard < last_revisions.size(); ++shard) {
      keyspace_.SawLast(static_cast<int>(shard), last_revisions[shard], opened);
    }
  }

  absl::StatusOr<ClaimResult> Claim(const ClaimRequest& request) override {
    LeaseWriteResult result = Single({.kind = LeaseWrite::Kind::kClaim,
                                      .scope = request.scope,
                                      .fingerprint = request.fingerprint,
                                      .owner = request.owner,
                                      .lease = request.lease});
    IDEM_RETURN_IF_ERROR(result.status);
    return ClaimResult{result.claimed, std::move(result.record)};
  }
  absl::StatusOr<KeyRecord> TakeOver(const ClaimRequest& request, int64_t expected_fence) override {
    return TakeOverKey(keyspace_, rules_, request, expected_fence);
  }
  absl::Status Heartbeat(const Scope& scope, int64_t fence, Millis lease) override {
    return Single({.kind = LeaseWrite::Kind::kHeartbeat,
                   .scope = scope,
                   .lease = lease,
                   .fence = fence})
        .status;
  }
  absl::Status Complete(const Scope& scope, int64_t fence,
                        const StoredResponse& response) override {
    return Single({.kind = LeaseWrite::Kind::kComplete,
                   .scope = scope,
                   .fence = fence,
                   .response = response})
        .status;
  }
  absl::Status FailFinal(const Scope& scope, int64_t fence,
                         const StoredResponse& response) override {
    return Single({.kind = LeaseWrite::Kind::kFailFinal,
                   .scope = scope,
                   .fence = fence,
                   .response = response})
        .status;
  }
  absl::Status Release(const Scope& scope, int64_t fence) override {
    return Single({.kind = LeaseWrite::Kind::kRelease, .scope = scope, .fence = fence}).status;
  }
  int64_t MaxResponseBytes() const override {
    const int64_t value = keyspace_.MaxValueBytes();
    return value > 0 ? std::max<int64_t>(value - kRecordRoom, 1) : 0;
  }

  absl::StatusOr<KeyRecord> Get(const Scope& scope) override {
    IDEM_RETURN_IF_ERROR(ValidateScope(scope));
    IDEM_ASSIGN_OR_RETURN(Current current, keyspace_.Load(scope));
    if (!current.record.has_value() || current.record->expires_ms <= rules_.clock.NowMillis()) {
      return absl::NotFoundError(
          fmt::format("key '{}' of tenant '{}' has no live record", scope.key, scope.tenant));
    }
    return *std::move(current.record);
  }

  absl::StatusOr<int64_t> SweepExpired(int64_t max_rows) override;
  absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) override;
  absl::StatusOr<std::vector<KeyRecord>> List(const KeyQuery& query) override;
  absl::Status Purge(const Scope& scope) override;

  absl::StatusOr<std::unique_ptr<StoreTransaction>> Begin() override {
    return absl::UnimplementedError(
        "the NATS JetStream key store has lease mode only: transaction mode (an effect in the "
        "same transaction as its key) needs a SQL database, the SQLite store (sqlite:PATH) or "
        "the PostgreSQL store (postgresql://...)");
  }

 private:
  LeaseWriteResult Single(const LeaseWrite& write) {
    return std::move(ApplyLeaseWrites(keyspace_, rules_, {&write, 1}, /*batch=*/false).front());
  }

  std::unique_ptr<JetStreamClient> client_;
  Keyspace keyspace_;
  const LeaseRules rules_;
};

absl::StatusOr<int64_t> NatsStore::SweepExpired(int64_t max_rows) {
  if (max_rows <= 0) {
    return absl::InvalidArgumentError(
        fmt::format("SweepExpired needs a positive max_rows, got {}", max_rows));
  }
  int64_t deleted = 0;
  for (int shard = 0; shard < keyspace_.uri().shards && deleted < max_rows; ++shard) {
    std::vector<uint64_t> revisions;
    IDEM_ASSIGN_OR_RETURN(std::vector<KeyRecord> records,
                          keyspace_.LoadShard(shard, /*skip_foreign=*/true, &revisions));
    for (size_t i = 0; i < records.size() && deleted < max_rows; ++i) {
      if (!Sweepable(records[i], rules_.clock.NowMillis())) continue;
      // Conditional on the revision read: a claim that turned the key live again wins.
      IDEM_ASSIGN_OR_RETURN(bool removed, keyspace_.Remove(records[i].scope, revisions[i],
                                                           /*purge=*/false, records[i].fence));
      if (removed) ++deleted;
    }
  }
  return deleted;
}

absl::StatusOr<std::vector<KeyRecord>> NatsStore::List(const KeyQuery& query) {
  IDEM_RETURN_IF_ERROR(ValidateKeyQuery(query));
  const int64_t now = rules_.clock.NowMillis();
  std::vector<KeyRecord> selected;
  for (int shard = 0; shard < keyspace_.uri().shards; ++shard) {
    IDEM_ASSIGN_OR_RETURN(std::vector<KeyRecord> records,
                          keyspace_.LoadShard(shard, /*skip_foreign=*/false, nullptr));
    for (KeyRecord& r : records) {
      if (Selected(r, query, now)) selected.push_back(std::move(r));
    }
  }
  std::sort(selected.begin(), selected.end(), [](const KeyRecord& a, const KeyRecord& b) {
    return std::tie(a.scope.tenant, a.scope.key) < std::tie(b.scope.tenant, b.scope.key);
  });
  if (selected.size() > static_cast<size_t>(query.limit)) selected.resize(query.limit);
  return selected;
}

absl::Status NatsStore::Purge(const Scope& scope) {
  IDEM_RETURN_IF_ERROR(ValidateScope(scope));
  for (int attempt = 0; attempt < 64; ++attempt) {
    IDEM_ASSIGN_OR_RETURN(Current current, keyspace_.Load(scope));
    if (!current.record.has_value()) {
      return absl::NotFoundError(
          fmt::format("key '{}' of tenant '{}' has no record", scope.key, scope.tenant));
    }
    IDEM_ASSIGN_OR_RETURN(bool removed, keyspace_.Remove(scope, current.revision, /*purge=*/true,
                                                         current.record->fence));
    if (removed) return absl::OkStatus();
  }
  return absl::UnavailableError(
      fmt::format("key '{}' of tenant '{}' kept changing while it was purged; try again", scope.key,
                  scope.tenant));
}

// Every write of the batch in rounds, each round's conditional writes published together
// (ApplyLeaseWrites): a batch of claims and completions of different keys is one round trip.
absl::StatusOr<std::vector<LeaseWriteResult>> NatsStore::ApplyLeaseBatch(
    std::span<const LeaseWrite> writes) {
  return ApplyLeaseWrites(keyspace_, rules_, writes, /*batch=*/true);
}

}  // namespace
}  // namespace nats

absl::StatusOr<std::unique_ptr<Store>> OpenNatsStore(std::string_view uri_text,
                                                     const StoreOptions& options) {
  IDEM_ASSIGN_OR_RETURN(nats::NatsUri uri, nats::ParseNatsUri(uri_text));
  IDEM_ASSIGN_OR_RETURN(std::unique_ptr<nats::JetStreamClient> client,
                        nats::JetStreamClient::Connect(uri, options.lock_timeout));
  std::vector<uint64_t> last_revisions;
  const auto opened = std::chrono::steady_clock::now();  // before any last revision is asked
  for (int shard = 0; shard < uri.shards; ++shard) {
    const nats::BucketSpec spec{
        .replicas = uri.replicas,
        .max_age = options.retention,
        .description = fmt::format("idem key store, shard {} of {}", shard + 1, uri.shards)};
    IDEM_ASSIGN_OR_RETURN(
        uint64_t last,
        client->EnsureBucket(nats::ShardBucket(uri, shard), spec, options.create_if_missing,
                             /*check_age=*/options.create_if_missing));
    last_revisions.push_back(last);
  }
  return std::make_unique<nats::NatsStore>(std::move(client), std::move(uri), options,
                                           last_revisions, opened);
}

}  // namespace idem

// JetStreamClient's bucket calls: creating and checking idem's buckets, and reading every key of
// one (for List and SweepExpired).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/nats/nats_client.h"
#include "store/nats/nats_leaders.h"

namespace idem::nats {
namespace {

constexpr std::string_view kIdemDescription = "idem key store";

int64_t Nanos(Millis ms) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(ms).count();
}

std::string Duration(int64_t nanos) {
  return fmt::format("{} s", static_cast<double>(nanos) / 1e9);
}

Entry ToEntry(kvEntry* e) {
  Entry entry;
  entry.key = kvEntry_Key(e);
  entry.revision = kvEntry_Revision(e);
  entry.present = kvEntry_Operation(e) == kvOp_Put;
  if (entry.present && kvEntry_ValueLen(e) > 0) {
    entry.value.assign(static_cast<const char*>(kvEntry_Value(e)),
                       static_cast<size_t>(kvEntry_ValueLen(e)));
  }
  return entry;
}

}  // namespace

absl::Status JetStreamClient::CheckBucket(const std::string& bucket, const jsStreamConfig& config,
                                          const BucketSpec& spec, bool check_age) const {
  const auto mismatch = [&](std::string_view what, const std::string& has,
                            const std::string& wants) {
    return absl::FailedPreconditionError(fmt::format(
        "bucket '{}' exists with {} {}, but this store wants {}: open it with the settings it "
        "was made with, or give another bucket=NAME",
        bucket, what, has, wants));
  };
  if (config.Replicas != spec.replicas) {
    return mismatch("replicas", std::to_string(config.Replicas), std::to_string(spec.replicas));
  }
  if (config.MaxMsgsPerSubject != 1) {
    return mismatch("history", std::to_string(config.MaxMsgsPerSubject), "1");
  }
  if (check_age && config.MaxAge != Nanos(spec.max_age)) {
    return mismatch("max age (the retention)", Duration(config.MaxAge),
                    Duration(Nanos(spec.max_age)));
  }
  const std::string_view description =
      config.Description != nullptr ? config.Description : std::string_view();
  if (description.starts_with(kIdemDescription) && description != spec.description) {
    return mismatch("the description", fmt::format("'{}'", description),
                    fmt::format("'{}' (another shards=N moves every key)", spec.description));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> JetStreamClient::EnsureBucket(const std::string& bucket,
                                                       const BucketSpec& spec, bool create,
                                                       bool check_age) {
  const std::string stream = StreamOf(bucket);
  const std::string subject = fmt::format("$KV.{}.>", bucket);
  for (int attempt = 0; attempt < 2; ++attempt) {
    jsStreamInfo* info = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    natsStatus s = js_GetStreamInfo(&info, js_, stream.c_str(), nullptr, &code);
    if (s == NATS_OK) {
      absl::Status checked = CheckBucket(bucket, *info->Config, spec, check_age);
      const uint64_t last = info->State.LastSeq;
      jsStreamInfo_Destroy(info);
      if (!checked.ok()) return checked;
      routes_->Watch(bucket);
      return last;
    }
    if (s != NATS_NOT_FOUND) {
      return TranslateNatsError(s, code, fmt::format("looking bucket '{}' up", bucket));
    }
    if (!create) {
      return absl::NotFoundError(fmt::format("bucket '{}' does not exist", bucket));
    }
    const char* subjects[] = {subject.c_str()};
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = stream.c_str();
    config.Description = spec.description.c_str();
    config.Subjects = subjects;
    config.SubjectsLen = 1;
    config.MaxMsgsPerSubject = 1;
    config.MaxAge = Nanos(spec.max_age);
    config.MaxBytes = -1;
    config.MaxMsgSize = -1;
    config.Storage = js_FileStorage;
    config.Replicas = spec.replicas;
    config.Discard = js_DiscardNew;
    config.AllowRollup = true;
    config.DenyDelete = true;
    config.AllowDirect = false;  // reads from the leader only: they see every acknowledged write
    s = js_AddStream(&info, js_, &config, nullptr, &code);
    jsStreamInfo_Destroy(info);
    if (s == NATS_OK) {
      routes_->Watch(bucket);
      return uint64_t{0};
    }
    // Another process created it first: check what it made.
    if (code != JSStreamNameExistErr) {
      return TranslateNatsError(s, code, fmt::format("creating bucket '{}'", bucket));
    }
  }
  return absl::UnavailableError(
      fmt::format("bucket '{}' was created and deleted again while idem opened it", bucket));
}

// The stream's last sequence, first sequence and message count, from its leader (so it counts
// every acknowledged write).
absl::StatusOr<JetStreamClient::StreamState> JetStreamClient::State(const std::string& bucket) {
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const std::string stream = StreamOf(bucket);
  const natsStatus s = js_GetStreamInfo(&info, js_, stream.c_str(), nullptr, &code);
  if (s != NATS_OK) {
    return TranslateNatsError(s, code, fmt::format("asking for the state of bucket '{}'", bucket));
  }
  const StreamState state{.first = info->State.FirstSeq,
                          .last = info->State.LastSeq,
                          .messages = info->State.Msgs};
  jsStreamInfo_Destroy(info);
  return state;
}

// The watcher is an ordered consumer that JetStream places on any replica of the bucket, not
// necessarily its leader: on a replica that has not applied every acknowledged write yet (a
// write counts once a quorum has it), the consumer starts from that replica's entries, and its
// "caught up" marker (the null entry) may come before entries the leader acknowledged before the
// listing began (seen: a list missing keys written before it, under load). So the leader's last
// sequence at the start decides: the listing reads until the watcher has delivered an entry at
// or past it (entries come in sequence order), marker or not. An entry the servers dropped
// meanwhile (the bucket's max age) is never delivered: when the watcher stays silent, the
// stream's state is asked again, and a stream that no longer holds anything up to that sequence
// ends the listing.
//
// Past that, the watcher delivers every message written since it started: a key written during
// the listing comes again, once per revision, and an ordered consumer recreated under load
// (missed heartbeats) may deliver an entry again too. So the highest revision of each key
// decides, and a key whose highest is a delete or purge marker is left out. Keys keep the order
// of their first delivery.
absl::StatusOr<std::vector<Entry>> JetStreamClient::ReadAll(const std::string& bucket) {
  absl::StatusOr<StreamState> start = State(bucket);
  if (!start.ok()) return start.status();
  if (start->messages == 0) return std::vector<Entry>();
  kvStore* kv = nullptr;
  natsStatus s = js_KeyValue(&kv, js_, bucket.c_str());
  if (s != NATS_OK) return TranslateNatsError(s, 0, fmt::format("opening bucket '{}'", bucket));
  kvWatcher* watcher = nullptr;
  s = kvStore_WatchAll(&watcher, kv, nullptr);  // markers too: a later delete must hide the key
  std::vector<Entry> entries;
  std::unordered_map<std::string, size_t> index;  // key -> its place in `entries`
  uint64_t highest = 0;                           // the highest revision delivered
  while (s == NATS_OK && highest < start->last) {
    kvEntry* e = nullptr;
    s = kvWatcher_Next(&e, watcher, timeout_.count());
    if (s == NATS_TIMEOUT) {
      absl::StatusOr<StreamState> now = State(bucket);
      if (now.ok() && (now->messages == 0 || now->first > start->last)) s = NATS_OK;
      break;  // dropped by age, or still missing: an error below
    }
    if (s != NATS_OK || e == nullptr) continue;  // the marker: not enough, see above
    Entry entry = ToEntry(e);
    kvEntry_Destroy(e);
    highest = std::max(highest, entry.revision);
    auto [at, first] = index.try_emplace(entry.key, entries.size());
    if (first) {
      entries.push_back(std::move(entry));
    } else if (entry.revision > entries[at->second].revision) {
      entries[at->second] = std::move(entry);
    }
  }
  if (watcher != nullptr) kvWatcher_Destroy(watcher);
  kvStore_Destroy(kv);
  if (s != NATS_OK) return TranslateNatsError(s, 0, fmt::format("listing bucket '{}'", bucket));
  std::erase_if(entries, [](const Entry& entry) { return !entry.present; });
  return entries;
}

}  // namespace idem::nats

// The nats:// store URI: which servers, which buckets, how many replicas.
//
//   nats://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...][?bucket=NAME][&replicas=R][&shards=N]
//
// Thread-safety: pure functions.
#ifndef IDEM_STORE_NATS_NATS_URI_H_
#define IDEM_STORE_NATS_NATS_URI_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace idem::nats {

inline constexpr int kMaxShards = 64;

struct NatsUri {
  // One libnats URL per server, "nats://[user:password@]host:port", in the URI's order.
  std::vector<std::string> servers;
  std::string bucket = "idem";  // bucket=NAME: A-Z a-z 0-9 _ -, at most 64 characters
  int replicas = 3;             // replicas=R: 1 to 5; R=3 survives the loss of one server
  int shards = 1;               // shards=N: 1 to kMaxShards buckets, chosen by the key's hash
};

// Errors: InvalidArgument naming what is wrong (no host, a bad port, an unknown parameter, a
// value out of range); the message never carries the password.
absl::StatusOr<NatsUri> ParseNatsUri(std::string_view uri);

// The name of shard `index` of `uri`'s bucket: NAME when there is one shard, else NAME-INDEX.
std::string ShardBucket(const NatsUri& uri, int index);

}  // namespace idem::nats

#endif  // IDEM_STORE_NATS_NATS_URI_H_

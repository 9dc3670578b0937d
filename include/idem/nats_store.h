// idem/nats_store.h: the key store on NATS JetStream key-value buckets (lease mode only).
//
// Each (tenant, key) lives under the hex SHA-256 of the scope in one of N buckets (shards=N,
// chosen by the same hash); its value is the whole record, fence included. A claim is a Create
// (a write that succeeds only while the key has no entry, or replaces the exact expired record or
// delete marker it read); every later write is an Update on the revision the writer read, so a
// writer that lost its lease fails with Aborted exactly as on the SQL stores. A claim's fence is
// the revision that wrote it (times the shard count, plus the shard): unique in the store and
// growing for each key. Buckets keep one value per key and drop values older than the
// retention (their max age). Transaction mode is not available: Begin() is Unimplemented.
//
// Thread-safety: as idem/store.h.
#ifndef IDEM_NATS_STORE_H_
#define IDEM_NATS_STORE_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/store.h"

namespace idem {

// Opens the store named by
//   nats://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...][?bucket=NAME][&replicas=R][&shards=N]
// (defaults: bucket idem, replicas 3, shards 1), creating its buckets with R replicas and max age
// options.retention where they do not exist, and checking them where they do. With
// options.create_if_missing false, missing buckets are NotFound and the max age is not checked
// (for tools that only read or purge). options.lock_timeout bounds every request to JetStream.
// Errors: InvalidArgument for a malformed URI; Unavailable when no server answers or the
// replicas cannot be placed now; FailedPrecondition when JetStream is not enabled, for R>1 on a
// single server, or for a bucket of other settings (replicas, history, max age, shard count);
// NotFound; PermissionDenied for refused credentials.
absl::StatusOr<std::unique_ptr<Store>> OpenNatsStore(std::string_view uri,
                                                     const StoreOptions& options);

}  // namespace idem

#endif  // IDEM_NATS_STORE_H_

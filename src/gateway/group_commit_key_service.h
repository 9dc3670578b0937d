// Internal: the KeyService `idem serve` runs on. Writes (claim, heartbeat, complete, fail_final,
// release) go to one of `writers` writer threads, chosen by a hash of the key's scope (WriterOf),
// so every write of one key goes to the same writer and is applied in the order submitted. Each
// writer takes every write queued for it while its previous batch was committing (up to
// max_batch), applies them with one Store::ApplyLeaseBatch (one transaction, one durable commit),
// and only then posts each result to its caller's executor. When fewer writes are queued than
// its last batch answered (each answer soon brings its caller's next write), a writer waits a
// little for them before it commits: at most half its last commit's time and max_linger. Several
// writers keep several batches in flight, for stores that commit concurrent transactions side by
// side (PostgreSQL); their batches never share a key. Reads (get, for replays and waits) go to a
// few reader threads and never queue behind a writer, so a replay never waits for, nor takes, the
// store's write lock.
//
// A batch the store refuses as a whole (Unavailable) reports that status to every caller in it,
// and to no one else. Shutdown stops accepting, finishes every operation already queued on every
// writer and reader, then joins the threads.
//
// Thread-safety: Submit and Shutdown may be called from any thread at once.
#ifndef IDEM_GATEWAY_GROUP_COMMIT_KEY_SERVICE_H_
#define IDEM_GATEWAY_GROUP_COMMIT_KEY_SERVICE_H_

#include <chrono>
#include <cstddef>
#include <memory>

#include "gateway/key_service.h"
#include "gateway/metrics.h"
#include "idem/store.h"

namespace idem::gateway {

struct GroupCommitOptions {
  size_t max_batch = 256;  // most writes in one batch (per writer); >= 1
  // The longest a writer waits for more writes before a commit (see above); 0 never waits.
  std::chrono::microseconds max_linger{2000};
  int readers = 2;  // threads serving gets; >= 1
  int writers = 1;  // threads applying batches, each its own keys; >= 1
};

// Returns the writer (0 to writers - 1) that applies every write of `scope`.
// REQUIRES: writers >= 1.
size_t WriterOf(const Scope& scope, int writers);

// Returns the group-committing service over `store`; batch sizes and commits are counted in
// `metrics` (batch_sizes, commits, failed_commits).
// REQUIRES: `store` and `metrics` outlive the service; options as documented.
std::unique_ptr<KeyService> NewGroupCommitKeyService(Store& store, Metrics& metrics,
                                                     GroupCommitOptions options = {});

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_GROUP_COMMIT_KEY_SERVICE_H_

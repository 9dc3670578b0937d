// Internal: the KeyService `idem serve` runs on. Writes (claim, heartbeat, complete, fail_final,
// release) go to ONE writer thread that takes every write queued while its previous batch was
// committing (up to max_batch), applies them with one Store::ApplyLeaseBatch (one transaction,
// one durable commit), and only then posts each result to its caller's executor. Reads (get, for
// replays and waits) go to a few reader threads and never queue behind the writer, so a replay
// never waits for, nor takes, the store's write lock.
//
// A batch the store refuses as a whole (Unavailable) reports that status to every caller in it.
// Shutdown stops accepting, finishes every operation already queued, then joins the threads.
//
// Thread-safety: Submit and Shutdown may be called from any thread at once.
#ifndef IDEM_GATEWAY_GROUP_COMMIT_KEY_SERVICE_H_
#define IDEM_GATEWAY_GROUP_COMMIT_KEY_SERVICE_H_

#include <cstddef>
#include <memory>

#include "gateway/key_service.h"
#include "gateway/metrics.h"
#include "idem/store.h"

namespace idem::gateway {

struct GroupCommitOptions {
  size_t max_batch = 256;  // most writes in one batch; >= 1
  int readers = 2;         // threads serving gets; >= 1
};

// Returns the group-committing service over `store`; batch sizes and commits are counted in
// `metrics` (batch_sizes, commits, failed_commits).
// REQUIRES: `store` and `metrics` outlive the service; options as documented.
std::unique_ptr<KeyService> NewGroupCommitKeyService(Store& store, Metrics& metrics,
                                                     GroupCommitOptions options = {});

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_GROUP_COMMIT_KEY_SERVICE_H_

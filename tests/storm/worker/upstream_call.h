// The storm worker's HTTP call to the storm's counting upstream (tests/storm/upstream.py): one
// POST on a fresh loopback connection, `Connection: close`, the answer read to its end. A tiny
// client of its own so that every way the call can end is told apart: an answer, the upstream
// hanging up after running the effect (mode drop), or no answer within the timeout (mode late).
#ifndef IDEM_TESTS_STORM_WORKER_UPSTREAM_CALL_H_
#define IDEM_TESTS_STORM_WORKER_UPSTREAM_CALL_H_

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace idem::storm {

struct UpstreamAnswer {
  int status = 0;
  std::string body;
};

// POSTs `body` to http://127.0.0.1:`port``target` with `headers` and waits at most `timeout`
// for the whole answer. Errors: Unavailable when the connection failed or was closed before a
// whole answer arrived (the upstream may have run the effect); DeadlineExceeded when the answer
// was later than `timeout`; Internal for an answer that is not HTTP/1.1.
absl::StatusOr<UpstreamAnswer> PostToUpstream(
    int port, const std::string& target,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    std::chrono::milliseconds timeout);

}  // namespace idem::storm

#endif  // IDEM_TESTS_STORM_WORKER_UPSTREAM_CALL_H_

// Helpers for tests against the fixtures' nats-server processes (tests/nats/CMakeLists.txt).
#ifndef IDEM_TESTS_NATS_NATS_TEST_SUPPORT_H_
#define IDEM_TESTS_NATS_NATS_TEST_SUPPORT_H_

#include <nats/nats.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace idem::natstest {

enum class Fixture {
  kSingle,   // "nats": one node
  kCluster,  // "nats_cluster": three nodes, routes between them
  kPlain,    // "nats_plain": one node without JetStream
};

// The fixture's state directory: IDEM_NATS_FIXTURE_DIR (kSingle) or IDEM_NATS_CLUSTER_FIXTURE_DIR
// (kCluster) from the environment when CTest sets it (a test with a private server), else the
// shared fixture's; kPlain's is always the shared one.
std::string FixtureDir(Fixture fixture);

// The fixture's client URLs, comma-separated (nats://127.0.0.1:P1,...).
// Errors: FailedPrecondition naming the missing file when the fixture did not start.
absl::StatusOr<std::string> ServerUrls(Fixture fixture);

// Runs scripts/nats-fixture.sh COMMAND DIR [NODE] (kill-node, start-node, pause-node, resume-node
// with a node; heal without: every node of the fixture running and answering again).
// Errors: Internal with the command when it fails.
absl::Status RunFixture(Fixture fixture, std::string_view command, int node = 0);

// The process id of node `node` (1-based) of the fixture, as scripts/nats-fixture.sh pid prints
// it. Errors: Internal when the script fails or prints no number.
absl::StatusOr<int> NodePid(Fixture fixture, int node);

// A connection and its JetStream context, closed on destruction.
class JetStream {
 public:
  JetStream(natsConnection* connection, jsCtx* js) : connection_(connection), js_(js) {}
  JetStream(const JetStream&) = delete;
  JetStream& operator=(const JetStream&) = delete;
  ~JetStream();

  natsConnection* connection() const { return connection_; }
  jsCtx* js() const { return js_; }

 private:
  natsConnection* connection_;
  jsCtx* js_;
};

// Connects to `urls` (comma-separated) and opens a JetStream context.
// Errors: Unavailable with libnats' text when no server answers.
absl::StatusOr<std::unique_ptr<JetStream>> Connect(std::string_view urls);

// libnats' status text and its last error, for assertion messages.
std::string Describe(natsStatus status);

// A store URI on the fixture's servers with `parameters` ("bucket=x&replicas=1").
// Errors: as ServerUrls.
absl::StatusOr<std::string> StoreUri(Fixture fixture, std::string_view parameters);

// Calls `attempt` until it returns true or `bound` passes, pausing 100 ms between attempts;
// returns its last result. For waits on a cluster that recovers (a node restarted by another test).
bool Eventually(const std::function<bool()>& attempt, std::chrono::seconds bound);

// The fixture's client URLs one by one ("nats://127.0.0.1:P").
std::vector<std::string> SplitUrls(const std::string& urls);

// A store URI on the servers `nodes` (client URLs as SplitUrls returns) with `parameters`.
std::string StoreUriOn(const std::vector<std::string>& nodes, std::string_view parameters);

// The number (1-based, from its name "idem-nI") of the server leading `stream`, or 0 while the
// stream has no leader or cannot be asked.
int StreamLeader(jsCtx* js, const std::string& stream);

// A bucket name no other test of this run uses ("<prefix>_<pid>_<n>").
std::string FreshBucket(std::string_view prefix);

// The messages each node of the fixture has received so far from each of its open client
// connections named `client_name` (in_msgs in the node's /connz: a client's publishes and
// requests), by node number (1-based, index 0 for node 1), then by connection id.
// Errors: Unavailable when a node's monitoring port does not answer.
using ConnectionMessages = std::vector<std::map<int64_t, int64_t>>;
absl::StatusOr<ConnectionMessages> MessagesFrom(Fixture fixture, std::string_view client_name);

// What each node received between two MessagesFrom: the growth of the connections open at the
// second, from 0 for those opened in between (those closed in between are left out).
std::vector<int64_t> Received(const ConnectionMessages& before, const ConnectionMessages& after);

// Asks the stream's leader to step down (JetStream's $JS.API.STREAM.LEADER.STEPDOWN.<stream>):
// the other replicas elect another. Errors: Unavailable with the reply when it is refused.
absl::Status StepDown(natsConnection* connection, const std::string& stream);

// Makes the stream leader of `bucket` (a key-value bucket on the fixture's servers) step down and
// returns once another server leads it (10 s at most). Errors: as StepDown; DeadlineExceeded when
// no other server took the lead.
absl::Status ChangeBucketLeader(Fixture fixture, const std::string& bucket);

}  // namespace idem::natstest

#endif  // IDEM_TESTS_NATS_NATS_TEST_SUPPORT_H_

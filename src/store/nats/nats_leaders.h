// Where a bucket's writes and reads go: a connection to the server that leads the bucket's stream
// (its Raft leader), so that a publish and its acknowledgement are not forwarded between servers
// (a connection on a follower makes every write cross one more server: seven server messages a
// request instead of three, bench/RESULTS.md "Session 14"). The leader is found by asking
// JetStream for the stream's info (cluster.leader, a server name) and the server of that name
// among the URI's servers and those the cluster announces (ProbeServerName). Writes and reads of
// a bucket whose leader is unknown, unreachable or not connected go through the main connection,
// as before: routing only saves hops, every guarantee of a write (its quorum acknowledgement, its
// conditional revision) is the stream leader's whichever server the publish enters by.
//
// The leader is asked again: every kRefresh; soon after an error on the bucket (Suspect); and at
// once after JetStream announces a new leader of the stream (its LEADER_ELECTED advisory, when the
// account may subscribe to it). The asking is done by the calling thread, one at a time per
// bucket, with a wait of at most kAskWait; the others go on with the route they have.
//
// Thread-safety: safe to use from many threads at once. The contexts it hands out live as long as
// the LeaderRoutes.
#ifndef IDEM_STORE_NATS_NATS_LEADERS_H_
#define IDEM_STORE_NATS_NATS_LEADERS_H_

#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "idem/clock.h"

namespace idem::nats {

class LeaderRoutes {
 public:
  static constexpr std::chrono::seconds kRefresh{10};
  static constexpr std::chrono::milliseconds kRetry{500};
  static constexpr Millis kAskWait{1000};

  // The JetStream contexts of one connection: `async` publishes with the client's acknowledgement
  // handler, `sync` for requests; `published` is set once `async` has sent something.
  struct Route {
    jsCtx* async = nullptr;
    jsCtx* sync = nullptr;
    std::atomic<bool>* published = nullptr;
  };

  // `main` is the client's connection (any server), with its contexts; `servers` the URI's
  // URLs (with credentials, which leader connections use too); `handler` and `closure` the
  // acknowledgement handler every async context gets; `timeout` each request's wait.
  LeaderRoutes(natsConnection* main, Route main_route, std::vector<std::string> servers,
               Millis timeout, jsPubAckHandler handler, void* closure);
  LeaderRoutes(const LeaderRoutes&) = delete;
  LeaderRoutes& operator=(const LeaderRoutes&) = delete;
  // Closes the leader connections; their writes still unanswered are dropped (taken back from
  // libnats and freed; their calls have given them up).
  ~LeaderRoutes();

  // Starts following `bucket`'s leader (subscribes to the streams' leader advisories once).
  void Watch(const std::string& bucket);

  // The route of `bucket` now: its leader's connection when known and connected, else the main
  // one. May first ask JetStream for the leader (see above).
  Route For(const std::string& bucket);

  // Something failed on `bucket` (no answer, no responders, not the leader, a lost connection):
  // its leader is asked again at its next use (at most every kRetry).
  void Suspect(const std::string& bucket);

  // The name of the server `bucket`'s writes go to, "" for the main connection (for tests).
  std::string ServerOf(const std::string& bucket);

 private:
  struct Server;  // a connection to one server, by name; kept until destruction
  struct Bucket {
    Server* server = nullptr;  // null: the main connection
    std::chrono::steady_clock::time_point next_ask{};
    std::chrono::steady_clock::time_point last_ask{};
    bool asking = false;
  };

  static void OnLeaderElected(natsConnection*, natsSubscription*, natsMsg* msg, void* closure);
  enum class Answer {
    kNone,         // no answer in time: the route stays; asked again after kRetry
    kElecting,     // the stream has no leader now: the main connection; again after kRetry
    kSingle,       // a server without a cluster: the main connection; again after kRefresh
    kLeader,       // its leader, reachable: `server` (null when the main connection is on it)
    kUnreachable,  // a leader whose server is not among the known URLs or does not connect
  };
  // Asks for `bucket`'s leader and connects to it.
  Answer Ask(const std::string& bucket, Server** server);
  // The server named `name`: connected already, or found by probing the known URLs and connected
  // now; null when none of them is `name` or it does not accept a connection. Under connect_mu_.
  Server* Connect(const std::string& name);
  // The name of the server at HOST:PORT, probed once (again when `again`, or for a server that
  // did not tell it, at most every kRefresh); "" when it cannot be told. Under connect_mu_.
  std::string NameAt(const std::string& host_port, bool again);
  Route RouteOf(Server* server) const;
  std::string ServerUrl(const std::string& host_port) const;

  natsConnection* const main_;
  const Route main_route_;
  const std::vector<std::string> servers_;
  const Millis timeout_;
  const jsPubAckHandler handler_;
  void* const closure_;

  std::mutex mu_;  // buckets_, advisories_
  std::map<std::string, Bucket> buckets_;
  natsSubscription* advisories_ = nullptr;  // every stream's LEADER_ELECTED advisories
  std::mutex connect_mu_;                          // connected_, names_; held while connecting
  std::map<std::string, std::unique_ptr<Server>> connected_;  // by server name
  struct Name {
    std::string name;  // "" when the probe failed
    std::chrono::steady_clock::time_point probed;
  };
  std::map<std::string, Name> names_;  // by HOST:PORT
};

}  // namespace idem::nats

#endif  // IDEM_STORE_NATS_NATS_LEADERS_H_

#include "store/nats/nats_leaders.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "store/nats/nats_client.h"
#include "store/nats/nats_server_name.h"

namespace idem::nats {
namespace {

constexpr char kLeaderAdvisories[] = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.*";
constexpr std::string_view kLeaderElected = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.KV_";

// Each leader connection reconnects to its own server only, as often as this.
constexpr int kReconnectWaitMs = 250;
// Leader connections at most (one per server leading a bucket; a cluster has 3 or 5).
constexpr size_t kMaxServers = 16;

}  // namespace

struct LeaderRoutes::Server {
  std::string name;
  natsConnection* connection = nullptr;
  jsCtx* async = nullptr;
  jsCtx* sync = nullptr;
  std::atomic<bool> published{false};

  ~Server() {
    if (async != nullptr) {
      natsMsgList unanswered{};
      if (published && js_PublishAsyncGetPendingList(&unanswered, async) == NATS_OK) {
        natsMsgList_Destroy(&unanswered);
      }
      jsCtx_Destroy(async);
    }
    if (sync != nullptr) jsCtx_Destroy(sync);
    if (connection != nullptr) natsConnection_Destroy(connection);
  }
};

LeaderRoutes::LeaderRoutes(natsConnection* main, Route main_route,
                           std::vector<std::string> servers, Millis timeout,
                           jsPubAckHandler handler, void* closure)
    : main_(main),
      main_route_(std::move(main_route)),
      servers_(std::move(servers)),
      timeout_(timeout),
      handler_(handler),
      closure_(closure) {}

LeaderRoutes::~LeaderRoutes() {
  // Drained, so that no advisory callback still runs on this object once it is gone.
  if (advisories_ != nullptr) {
    if (natsSubscription_Drain(advisories_) == NATS_OK) {
      natsSubscription_WaitForDrainCompletion(advisories_, 2000);
    }
    natsSubscription_Destroy(advisories_);
  }
}

void LeaderRoutes::OnLeaderElected(natsConnection*, natsSubscription*, natsMsg* msg,
                                   void* closure) {
  auto* self = static_cast<LeaderRoutes*>(closure);
  try {
    std::string_view subject = natsMsg_GetSubject(msg);
    if (subject.starts_with(kLeaderElected)) {
      subject.remove_prefix(kLeaderElected.size());
      std::lock_guard<std::mutex> lock(self->mu_);
      auto it = self->buckets_.find(std::string(subject));
      if (it != self->buckets_.end()) it->second.next_ask = {};  // ask at the next use
    }
  } catch (...) {
  }
  natsMsg_Destroy(msg);
}

void LeaderRoutes::Watch(const std::string& bucket) {
  std::lock_guard<std::mutex> lock(mu_);
  buckets_.try_emplace(bucket);
  if (advisories_ != nullptr) return;
  // One subscription for every stream of the account (elections are rare): a thread per
  // subscription is libnats' default. Without the permission to subscribe, the periodic asking
  // still finds the leader.
  if (natsConnection_Subscribe(&advisories_, main_, kLeaderAdvisories, &OnLeaderElected, this) !=
      NATS_OK) {
    advisories_ = nullptr;
  }
}

LeaderRoutes::Route LeaderRoutes::For(const std::string& bucket) {
  const auto now = std::chrono::steady_clock::now();
  Server* server = nullptr;
  bool ask = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Bucket& b = buckets_[bucket];
    if (!b.asking && now >= b.next_ask) {
      b.asking = ask = true;
      b.last_ask = now;
      b.next_ask = std::chrono::steady_clock::time_point::max();  // lowered by news meanwhile
    }
    server = b.server;
  }
  if (ask) {
    Server* found = nullptr;
    const Answer answer = Ask(bucket, &found);
    std::lock_guard<std::mutex> lock(mu_);
    Bucket& b = buckets_[bucket];
    if (answer != Answer::kNone) b.server = found;  // else the route stays as it was
    server = b.server;
    b.asking = false;
    const bool soon = answer == Answer::kNone || answer == Answer::kElecting;
    b.next_ask = std::min(b.next_ask, now + (soon ? kRetry : Millis(kRefresh)));
  }
  if (server != nullptr && natsConnection_Status(server->connection) != NATS_CONN_STATUS_CONNECTED) {
    Suspect(bucket);
    server = nullptr;
  }
  return RouteOf(server);
}

void LeaderRoutes::Suspect(const std::string& bucket) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  Bucket& b = buckets_[bucket];
  b.next_ask = std::min(b.next_ask, std::max(now, b.last_ask + kRetry));
}

std::string LeaderRoutes::ServerOf(const std::string& bucket) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(bucket);
  return it == buckets_.end() || it->second.server == nullptr ? "" : it->second.server->name;
}

LeaderRoutes::Route LeaderRoutes::RouteOf(Server* server) const {
  if (server == nullptr) return main_route_;
  return Route{.async = server->async, .sync = server->sync, .published = &server->published};
}

LeaderRoutes::Answer LeaderRoutes::Ask(const std::string& bucket, Server** server) {
  *server = nullptr;
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = std::min(timeout_, kAskWait).count();
  jsStreamInfo* info = nullptr;
  const std::string stream = StreamOf(bucket);
  std::string leader;
  Answer answer = Answer::kNone;
  if (js_GetStreamInfo(&info, main_route_.sync, stream.c_str(), &options, nullptr) == NATS_OK) {
    answer = Answer::kSingle;  // a server without a cluster may leave it out: nothing to route
    if (info->Cluster != nullptr) {
      answer = Answer::kElecting;
      if (info->Cluster->Leader != nullptr) leader = info->Cluster->Leader;
    }
  }
  jsStreamInfo_Destroy(info);
  if (leader.empty()) return answer;
  std::lock_guard<std::mutex> lock(connect_mu_);
  // The main connection may be on the leader already (always, with a single server).
  char url[256];
  if (natsConnection_GetConnectedUrl(main_, url, sizeof(url)) == NATS_OK && *url != '\0' &&
      NameAt(HostPort(url), false) == leader) {
    return Answer::kLeader;
  }
  *server = Connect(leader);
  return *server != nullptr ? Answer::kLeader : Answer::kUnreachable;
}

std::string LeaderRoutes::NameAt(const std::string& host_port, bool again) {
  const auto now = std::chrono::steady_clock::now();
  auto it = names_.find(host_port);
  // A name is probed again when asked to, and a server that did not tell its name, every kRefresh.
  const bool stale = again || (it != names_.end() && it->second.name.empty());
  if (it != names_.end() && !(stale && now - it->second.probed >= kRefresh)) {
    return it->second.name;
  }
  absl::StatusOr<std::string> name = ProbeServerName(host_port, std::min(timeout_, kAskWait));
  Name& entry = names_[host_port];
  entry.name = name.ok() ? *name : "";
  entry.probed = now;
  return entry.name;
}

LeaderRoutes::Server* LeaderRoutes::Connect(const std::string& name) {
  if (auto it = connected_.find(name); it != connected_.end()) return it->second.get();
  // Every server the main connection knows: the URI's and those the cluster announced. Names are
  // probed again each time a leader is not among them (a server may have moved or been renamed).
  std::vector<std::string> candidates;
  const auto add = [&](std::string_view url) {
    std::string host_port = HostPort(url);
    if (std::find(candidates.begin(), candidates.end(), host_port) == candidates.end()) {
      candidates.push_back(std::move(host_port));
    }
  };
  for (const std::string& url : servers_) add(url);
  char** known = nullptr;
  int count = 0;
  if (natsConnection_GetServers(main_, &known, &count) == NATS_OK) {
    for (int i = 0; i < count; ++i) {
      add(known[i]);
      free(known[i]);
    }
    free(known);
  }
  std::string host_port;
  for (size_t i = 0; i < candidates.size() && host_port.empty(); ++i) {
    if (NameAt(candidates[i], false) == name) host_port = candidates[i];
  }
  for (size_t i = 0; i < candidates.size() && host_port.empty(); ++i) {
    if (NameAt(candidates[i], true) == name) host_port = candidates[i];
  }
  if (host_port.empty() || connected_.size() >= kMaxServers) return nullptr;

  auto server = std::make_unique<Server>();
  server->name = name;
  const std::string url = ServerUrl(host_port);
  const char* urls[] = {url.c_str()};
  natsOptions* options = nullptr;
  if (natsOptions_Create(&options) != NATS_OK) return nullptr;
  natsStatus s = natsOptions_SetServers(options, urls, 1);
  if (s == NATS_OK) s = natsOptions_SetNoRandomize(options, true);
  if (s == NATS_OK) s = natsOptions_SetIgnoreDiscoveredServers(options, true);
  if (s == NATS_OK) s = natsOptions_SetTimeout(options, std::min(timeout_, kAskWait).count());
  if (s == NATS_OK) s = natsOptions_SetName(options, kConnectionName);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(options, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(options, kReconnectWaitMs);
  if (s == NATS_OK) s = natsOptions_SetFailRequestsOnDisconnect(options, true);
  if (s == NATS_OK) s = natsConnection_Connect(&server->connection, options);
  natsOptions_Destroy(options);
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = timeout_.count();
  if (s == NATS_OK) s = natsConnection_JetStream(&server->sync, server->connection, &js_options);
  js_options.PublishAsync.AckHandler = handler_;
  js_options.PublishAsync.AckHandlerClosure = closure_;
  if (s == NATS_OK) s = natsConnection_JetStream(&server->async, server->connection, &js_options);
  if (s != NATS_OK) return nullptr;  // the main connection serves; asked again later
  Server* out = server.get();
  connected_[name] = std::move(server);
  return out;
}

std::string LeaderRoutes::ServerUrl(const std::string& host_port) const {
  std::string_view first = servers_.empty() ? std::string_view() : servers_.front();
  std::string credentials;
  if (const size_t scheme = first.find("://"); scheme != std::string_view::npos) {
    first.remove_prefix(scheme + 3);
    if (const size_t at = first.rfind('@'); at != std::string_view::npos) {
      credentials = std::string(first.substr(0, at + 1));
    }
  }
  return fmt::format("nats://{}{}", credentials, host_port);
}

}  // namespace idem::nats

#include "nats_test_support.h"

#include <boost/json.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace idem::natstest {

std::string FixtureDir(Fixture fixture) {
  if (fixture == Fixture::kPlain) return IDEM_NATS_PLAIN_FIXTURE_DIR;
  const char* variable =
      fixture == Fixture::kSingle ? "IDEM_NATS_FIXTURE_DIR" : "IDEM_NATS_CLUSTER_FIXTURE_DIR";
  const char* from_environment = std::getenv(variable);
  if (from_environment != nullptr && *from_environment != '\0') return from_environment;
  return fixture == Fixture::kSingle ? IDEM_NATS_FIXTURE_DIR : IDEM_NATS_CLUSTER_FIXTURE_DIR;
}

absl::StatusOr<std::string> ServerUrls(Fixture fixture) {
  const std::string path = FixtureDir(fixture) + "/url";
  std::ifstream in(path);
  std::string urls;
  if (!in || !std::getline(in, urls) || urls.empty()) {
    return absl::FailedPreconditionError(fmt::format(
        "{} is missing: the NATS fixture did not start (run the test through ctest, which runs "
        "the fixture's start test first, or scripts/nats-fixture.sh start {} {})",
        path, FixtureDir(fixture), fixture == Fixture::kCluster ? 3 : 1));
  }
  return urls;
}

absl::Status RunFixture(Fixture fixture, std::string_view command, int node) {
  std::string line =
      fmt::format("'{}' {} '{}'", IDEM_NATS_FIXTURE_SCRIPT, command, FixtureDir(fixture));
  if (node > 0) line += fmt::format(" {}", node);
  if (std::system(line.c_str()) != 0) {
    return absl::InternalError(fmt::format("'{}' failed", line));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> NodePid(Fixture fixture, int node) {
  const std::string line =
      fmt::format("'{}' pid '{}' {}", IDEM_NATS_FIXTURE_SCRIPT, FixtureDir(fixture), node);
  FILE* out = popen(line.c_str(), "r");
  if (out == nullptr) return absl::InternalError(fmt::format("'{}' could not run", line));
  int pid = 0;
  const int read = fscanf(out, "%d", &pid);
  const int status = pclose(out);
  if (read != 1 || status != 0 || pid <= 0) {
    return absl::InternalError(fmt::format("'{}' printed no process id", line));
  }
  return pid;
}

JetStream::~JetStream() {
  jsCtx_Destroy(js_);
  natsConnection_Destroy(connection_);
}

std::string Describe(natsStatus status) {
  const char* last = nats_GetLastError(nullptr);
  return fmt::format("{} ({})", natsStatus_GetText(status), last != nullptr ? last : "");
}

absl::StatusOr<std::unique_ptr<JetStream>> Connect(std::string_view urls) {
  natsConnection* connection = nullptr;
  const std::string list(urls);
  natsStatus status = natsConnection_ConnectTo(&connection, list.c_str());
  if (status != NATS_OK) {
    return absl::UnavailableError(fmt::format("connect to {}: {}", list, Describe(status)));
  }
  jsCtx* js = nullptr;
  status = natsConnection_JetStream(&js, connection, nullptr);
  if (status != NATS_OK) {
    natsConnection_Destroy(connection);
    return absl::UnavailableError(fmt::format("JetStream context: {}", Describe(status)));
  }
  return std::make_unique<JetStream>(connection, js);
}

absl::StatusOr<std::string> StoreUri(Fixture fixture, std::string_view parameters) {
  absl::StatusOr<std::string> urls = ServerUrls(fixture);
  if (!urls.ok()) return urls.status();
  return StoreUriOn(SplitUrls(*urls), parameters);
}

bool Eventually(const std::function<bool()>& attempt, std::chrono::seconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < deadline) {
    if (attempt()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return attempt();
}

std::vector<std::string> SplitUrls(const std::string& urls) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < urls.size()) {
    size_t comma = urls.find(',', start);
    if (comma == std::string::npos) comma = urls.size();
    out.push_back(urls.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string StoreUriOn(const std::vector<std::string>& nodes, std::string_view parameters) {
  std::string hosts;
  for (std::string_view node : nodes) {
    if (node.starts_with("nats://")) node.remove_prefix(7);
    if (!hosts.empty()) hosts += ',';
    hosts += node;
  }
  return fmt::format("nats://{}?{}", hosts, parameters);
}

int StreamLeader(jsCtx* js, const std::string& stream) {
  jsStreamInfo* info = nullptr;
  std::string leader;
  if (js_GetStreamInfo(&info, js, stream.c_str(), nullptr, nullptr) == NATS_OK &&
      info->Cluster != nullptr && info->Cluster->Leader != nullptr) {
    leader = info->Cluster->Leader;
  }
  jsStreamInfo_Destroy(info);
  if (!leader.starts_with("idem-n")) return 0;
  return std::atoi(leader.c_str() + 6);
}

std::string FreshBucket(std::string_view prefix) {
  static std::atomic<int> counter{0};
  return fmt::format("{}_{}_{}", prefix, getpid(), counter++);
}

namespace {

// GETs `url` with curl (the fixture needs it too). Errors: Unavailable.
absl::StatusOr<std::string> HttpGet(const std::string& url) {
  const std::string line = fmt::format("curl -sf --max-time 5 '{}'", url);
  FILE* out = popen(line.c_str(), "r");
  if (out == nullptr) return absl::UnavailableError(fmt::format("'{}' could not run", line));
  std::string body;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), out)) > 0) body.append(buffer, n);
  if (pclose(out) != 0) return absl::UnavailableError(fmt::format("'{}' failed", line));
  return body;
}

}  // namespace

absl::StatusOr<ConnectionMessages> MessagesFrom(Fixture fixture, std::string_view client_name) {
  std::ifstream in(FixtureDir(fixture) + "/monitor");
  ConnectionMessages out;
  for (std::string monitor; std::getline(in, monitor);) {
    absl::StatusOr<std::string> connz = HttpGet(monitor + "/connz?limit=4096");
    if (!connz.ok()) return connz.status();
    boost::system::error_code error;
    const boost::json::value page = boost::json::parse(*connz, error);
    const boost::json::value* connections =
        error || !page.is_object() ? nullptr : page.as_object().if_contains("connections");
    if (connections == nullptr || !connections->is_array()) {
      return absl::UnavailableError(fmt::format("{}/connz answered no connection list", monitor));
    }
    std::map<int64_t, int64_t>& node = out.emplace_back();
    for (const boost::json::value& connection : connections->as_array()) {
      const boost::json::object* c = connection.if_object();
      if (c == nullptr) continue;
      const boost::json::value* name = c->if_contains("name");
      const boost::json::value* cid = c->if_contains("cid");
      const boost::json::value* in_msgs = c->if_contains("in_msgs");
      if (name == nullptr || !name->is_string() || name->as_string() != client_name ||
          cid == nullptr || !cid->is_int64() || in_msgs == nullptr || !in_msgs->is_int64()) {
        continue;
      }
      node[cid->as_int64()] = in_msgs->as_int64();
    }
  }
  if (out.empty()) return absl::UnavailableError("the fixture's monitor file lists no server");
  return out;
}

std::vector<int64_t> Received(const ConnectionMessages& before, const ConnectionMessages& after) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < after.size(); ++i) {
    int64_t total = 0;
    for (const auto& [id, messages] : after[i]) {
      auto was = i < before.size() ? before[i].find(id) : after[i].end();
      total += messages - (i < before.size() && was != before[i].end() ? was->second : 0);
    }
    out.push_back(total);
  }
  return out;
}

absl::Status StepDown(natsConnection* connection, const std::string& stream) {
  const std::string subject = "$JS.API.STREAM.LEADER.STEPDOWN." + stream;
  natsMsg* reply = nullptr;
  const natsStatus status = natsConnection_Request(&reply, connection, subject.c_str(), "", 0, 5000);
  std::string body;
  if (reply != nullptr && natsMsg_GetData(reply) != nullptr) {
    body.assign(natsMsg_GetData(reply), static_cast<size_t>(natsMsg_GetDataLength(reply)));
  }
  natsMsg_Destroy(reply);
  if (status != NATS_OK || body.find("\"success\":true") == std::string::npos) {
    return absl::UnavailableError(
        fmt::format("step-down of {}: {} {}", stream, Describe(status), body));
  }
  return absl::OkStatus();
}

absl::Status ChangeBucketLeader(Fixture fixture, const std::string& bucket) {
  absl::StatusOr<std::string> urls = ServerUrls(fixture);
  if (!urls.ok()) return urls.status();
  absl::StatusOr<std::unique_ptr<JetStream>> admin = Connect(*urls);
  if (!admin.ok()) return admin.status();
  const std::string stream = "KV_" + bucket;
  const int before = StreamLeader((*admin)->js(), stream);
  if (absl::Status stepped = StepDown((*admin)->connection(), stream); !stepped.ok()) {
    return stepped;
  }
  int after = 0;
  if (!Eventually(
          [&] {
            after = StreamLeader((*admin)->js(), stream);
            return after != 0 && after != before;
          },
          std::chrono::seconds(10))) {
    return absl::DeadlineExceededError(fmt::format(
        "{}: no other server took the lead from node {} within 10 s (now {})", stream, before,
        after));
  }
  return absl::OkStatus();
}

}  // namespace idem::natstest

#include "store/nats/nats_client.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>

#include "store/nats/nats_leaders.h"

namespace idem::nats {
namespace {

std::string SubjectOf(const std::string& bucket, const std::string& key) {
  return fmt::format("$KV.{}.{}", bucket, key);
}

// The thread's last error text, when it belongs to `status`: libnats keeps the text of an earlier
// call's error, and a timeout after it would otherwise read as that call's (a store-fault storm
// logged "no JetStream server answered: wrong last sequence: 180" for a write with no answer).
std::string LastError(natsStatus status) {
  natsStatus last = NATS_OK;
  const char* text = nats_GetLastError(&last);
  if (last == status && text != nullptr && *text != '\0') return text;
  return natsStatus_GetText(status);
}

struct MsgCloser {
  void operator()(natsMsg* msg) const { natsMsg_Destroy(msg); }
};
using MsgPtr = std::unique_ptr<natsMsg, MsgCloser>;

// The key-value protocol's operation of an entry: a value, or a delete or purge marker.
bool IsValue(natsMsg* msg) {
  const char* operation = nullptr;
  if (natsMsgHeader_Get(msg, kOperationHeader, &operation) != NATS_OK) return true;
  return operation == nullptr || std::string_view(operation) == "PUT";
}

// The fence a marker of idem kept (its Idem-Fence header), 0 when it has none.
int64_t RemovedFence(natsMsg* msg) {
  const char* text = nullptr;
  if (natsMsgHeader_Get(msg, kRemovedFenceHeader, &text) != NATS_OK || text == nullptr) return 0;
  int64_t fence = 0;
  const std::string_view digits(text);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), fence);
  return error == std::errc() && end == digits.data() + digits.size() ? fence : 0;
}

}  // namespace

absl::Status TranslateNatsError(natsStatus status, int js_code, std::string_view what) {
  return TranslateJetStreamError(status, js_code, LastError(status), what);
}

absl::Status TranslateJetStreamError(natsStatus status, int js_code, std::string_view text,
                                     std::string_view what) {
  const std::string detail = text.empty() ? natsStatus_GetText(status) : std::string(text);
  if (status != NATS_OK && detail.find("not leader") != std::string::npos) {
    return absl::UnavailableError(fmt::format(
        "{}: the server answered that it is no longer the stream's leader (an election is under "
        "way); if this was a write, its outcome is unknown: {}",
        what, detail));
  }
  switch (status) {
    case NATS_OK:
      return absl::OkStatus();
    case NATS_TIMEOUT:
      return absl::UnavailableError(fmt::format(
          "{}: JetStream did not answer in time (servers down, or the bucket lost the quorum of "
          "its replicas); if this was a write, its outcome is unknown",
          what));
    case NATS_NO_SERVER:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_STALE_CONNECTION:
    case NATS_IO_ERROR:
    case NATS_NOT_YET_CONNECTED:
      return absl::UnavailableError(fmt::format("{}: no NATS server reachable: {}", what, detail));
    case NATS_NO_RESPONDERS:
      return absl::UnavailableError(fmt::format(
          "{}: no JetStream server answered (is JetStream enabled, and the stream's servers "
          "up?): {}",
          what, detail));
    case NATS_CONNECTION_AUTH_FAILED:
    case NATS_NOT_PERMITTED:
      return absl::PermissionDeniedError(fmt::format("{}: refused by NATS: {}", what, detail));
    case NATS_MAX_PAYLOAD:
      return absl::InvalidArgumentError(
          fmt::format("{}: the record is larger than the servers' max_payload: {}", what, detail));
    default:
      break;
  }
  switch (js_code) {
    case JSClusterNotAvailErr:
    case JSClusterNoPeersErr:
    case JSInsufficientResourcesErr:
      return absl::UnavailableError(fmt::format(
          "{}: JetStream cannot serve it now (a quorum of servers is not up): {}", what, detail));
    case JSStreamReplicasNotSupportedErr:
      return absl::FailedPreconditionError(fmt::format(
          "{}: these servers are not a cluster, so they cannot keep several replicas; write "
          "replicas=1 in the store URI for a single server (no failover): {}",
          what, detail));
    default:
      break;
  }
  return absl::InternalError(fmt::format("{}: {} (JetStream error {})", what, detail, js_code));
}

absl::StatusOr<std::unique_ptr<JetStreamClient>> JetStreamClient::Connect(const NatsUri& uri,
                                                                          Millis timeout) {
  natsOptions* options = nullptr;
  if (natsOptions_Create(&options) != NATS_OK) return absl::InternalError("natsOptions_Create");
  std::vector<const char*> servers;
  for (const std::string& server : uri.servers) servers.push_back(server.c_str());
  natsStatus s = natsOptions_SetServers(options, servers.data(), static_cast<int>(servers.size()));
  if (s == NATS_OK) s = natsOptions_SetTimeout(options, timeout.count());
  if (s == NATS_OK) s = natsOptions_SetName(options, kConnectionName);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(options, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(options, 100);
  if (s == NATS_OK) s = natsOptions_SetFailRequestsOnDisconnect(options, true);
  natsConnection* connection = nullptr;
  if (s == NATS_OK) s = natsConnection_Connect(&connection, options);
  natsOptions_Destroy(options);
  if (s != NATS_OK) return TranslateNatsError(s, 0, "connecting to NATS");
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = timeout.count();
  jsCtx* js = nullptr;
  s = natsConnection_JetStream(&js, connection, &js_options);
  if (s != NATS_OK) {
    natsConnection_Destroy(connection);
    return TranslateNatsError(s, 0, "opening a JetStream context");
  }
  std::unique_ptr<JetStreamClient> client(new JetStreamClient(connection, js, timeout));
  if (absl::Status opened = client->OpenAsync(uri.servers); !opened.ok()) return opened;
  jsAccountInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  s = js_GetAccountInfo(&info, js, nullptr, &code);
  jsAccountInfo_Destroy(info);
  if (s == NATS_NO_RESPONDERS || code == JSNotEnabledErr || code == JSNotEnabledForAccountErr) {
    return absl::FailedPreconditionError(
        "the NATS servers do not run JetStream (start nats-server with -js, or jetstream {} in "
        "its configuration): the key store needs JetStream key-value buckets");
  }
  if (s != NATS_OK) return TranslateNatsError(s, code, "asking JetStream for the account");
  return client;
}


absl::StatusOr<Entry> JetStreamClient::Read(const std::string& bucket, const std::string& key) {
  natsMsg* raw = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const std::string stream = StreamOf(bucket);
  const std::string subject = SubjectOf(bucket, key);
  // From the bucket's leader: the leader answers the request wherever it enters.
  const natsStatus s =
      js_GetLastMsg(&raw, routes_->For(bucket).sync, stream.c_str(), subject.c_str(), nullptr,
                    &code);
  MsgPtr msg(raw);
  if (s != NATS_OK && s != NATS_NOT_FOUND) routes_->Suspect(bucket);
  Entry entry;
  entry.key = key;
  if (s == NATS_NOT_FOUND && code != JSStreamNotFoundErr) return entry;
  if (s == NATS_NOT_FOUND) {
    return absl::FailedPreconditionError(
        fmt::format("bucket '{}' no longer exists (deleted while idem was using it)", bucket));
  }
  if (s != NATS_OK) return TranslateNatsError(s, code, fmt::format("reading bucket '{}'", bucket));
  entry.revision = natsMsg_GetSequence(msg.get());
  entry.present = IsValue(msg.get());
  if (!entry.present) entry.removed_fence = RemovedFence(msg.get());
  if (entry.present && natsMsg_GetDataLength(msg.get()) > 0) {
    entry.value.assign(natsMsg_GetData(msg.get()), natsMsg_GetDataLength(msg.get()));
  }
  return entry;
}

absl::StatusOr<std::optional<uint64_t>> JetStreamClient::Write(const std::string& bucket,
                                                               const std::string& key,
                                                               std::string_view value,
                                                               uint64_t expected) {
  std::vector<WriteResult> written =
      WriteMany({Publish{.bucket = bucket, .key = key, .value = std::string(value),
                         .expected = expected}});
  return std::move(written.front());
}

absl::StatusOr<bool> JetStreamClient::Delete(const std::string& bucket, const std::string& key,
                                             uint64_t expected, bool purge) {
  std::vector<WriteResult> written = WriteMany({Publish{
      .bucket = bucket, .key = key, .expected = expected, .marker = purge ? "PURGE" : "DEL"}});
  if (!written.front().ok()) return written.front().status();
  return written.front()->has_value();
}

std::string JetStreamClient::WriteServerOf(const std::string& bucket) {
  return routes_->ServerOf(bucket);
}

}  // namespace idem::nats

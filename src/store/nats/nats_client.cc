#include "store/nats/nats_client.h"

#include <fmt/format.h>

#include <chrono>

namespace idem::nats {
namespace {

constexpr char kExpectedSubjectSequence[] = "Nats-Expected-Last-Subject-Sequence";
constexpr char kOperationHeader[] = "KV-Operation";
constexpr char kRollupHeader[] = "Nats-Rollup";

std::string StreamOf(const std::string& bucket) { return "KV_" + bucket; }
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
  if (s == NATS_OK) s = natsOptions_SetName(options, "idem key store");
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

JetStreamClient::~JetStreamClient() {
  jsCtx_Destroy(js_);
  natsConnection_Destroy(connection_);
}

absl::StatusOr<Entry> JetStreamClient::Read(const std::string& bucket, const std::string& key) {
  natsMsg* raw = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const std::string stream = StreamOf(bucket);
  const std::string subject = SubjectOf(bucket, key);
  const natsStatus s = js_GetLastMsg(&raw, js_, stream.c_str(), subject.c_str(), nullptr, &code);
  MsgPtr msg(raw);
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
  if (entry.present && natsMsg_GetDataLength(msg.get()) > 0) {
    entry.value.assign(natsMsg_GetData(msg.get()), natsMsg_GetDataLength(msg.get()));
  }
  return entry;
}

absl::StatusOr<std::optional<uint64_t>> JetStreamClient::Publish(const std::string& bucket,
                                                                 const std::string& key,
                                                                 std::string_view value,
                                                                 uint64_t expected,
                                                                 const char* operation) {
  natsMsg* raw = nullptr;
  const std::string subject = SubjectOf(bucket, key);
  natsStatus s =
      natsMsg_Create(&raw, subject.c_str(), nullptr, value.data(), static_cast<int>(value.size()));
  MsgPtr msg(raw);
  const std::string revision = std::to_string(expected);
  if (s == NATS_OK) s = natsMsgHeader_Set(msg.get(), kExpectedSubjectSequence, revision.c_str());
  if (s == NATS_OK && operation != nullptr) {
    s = natsMsgHeader_Set(msg.get(), kOperationHeader, operation);
    if (s == NATS_OK && std::string_view(operation) == "PURGE") {
      s = natsMsgHeader_Set(msg.get(), kRollupHeader, "sub");
    }
  }
  if (s != NATS_OK) return TranslateNatsError(s, 0, "building a JetStream message");
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MaxWait = timeout_.count();
  // Every write that expects revision R of a key carries the message id "SUBJECT@R", so that of
  // two writers expecting the same R at once, the stream's duplicate check (staged by the leader
  // when it proposes a message) lets one through even where the expected-sequence check does
  // not: nats-server before 2.9.21 checks it before proposing, and two concurrent publishes
  // expecting R could both be stored (nats-server issue 4320; seen here on 2.9.10 with two
  // takeovers of one lapsed claim). The duplicate is answered as a lost race: nothing written.
  const std::string msg_id = fmt::format("{}@{}", subject, expected);
  if (expected > 0) options.MsgId = msg_id.c_str();
  jsPubAck* ack = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  s = js_PublishMsg(&ack, js_, msg.get(), &options, &code);
  const uint64_t written = ack != nullptr ? ack->Sequence : 0;
  const bool duplicate = ack != nullptr && ack->Duplicate;
  jsPubAck_Destroy(ack);
  if (s == NATS_OK && duplicate) return std::optional<uint64_t>();
  if (s == NATS_OK) return std::optional<uint64_t>(written);
  if (code == JSStreamWrongLastSequenceErr) return std::optional<uint64_t>();
  return TranslateNatsError(s, code, fmt::format("writing to bucket '{}'", bucket));
}

absl::StatusOr<std::optional<uint64_t>> JetStreamClient::Write(const std::string& bucket,
                                                               const std::string& key,
                                                               std::string_view value,
                                                               uint64_t expected) {
  return Publish(bucket, key, value, expected, nullptr);
}

absl::StatusOr<bool> JetStreamClient::Delete(const std::string& bucket, const std::string& key,
                                             uint64_t expected, bool purge) {
  absl::StatusOr<std::optional<uint64_t>> written =
      Publish(bucket, key, {}, expected, purge ? "PURGE" : "DEL");
  if (!written.ok()) return written.status();
  return written->has_value();
}

}  // namespace idem::nats

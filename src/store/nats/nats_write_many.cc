// JetStreamClient::WriteMany: conditional publishes sent asynchronously on one long-lived JetStream
// context; their acknowledgements come to one callback (on libnats' thread), which hands each to
// the call that sent it. At most kWindow writes await their acknowledgement at any time.
#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "store/nats/nats_client.h"
#include "store/nats/nats_leaders.h"

namespace idem::nats {
namespace {

constexpr char kExpectedSubjectSequence[] = "Nats-Expected-Last-Subject-Sequence";
constexpr char kRollupHeader[] = "Nats-Rollup";
// How long a call waits beyond the timeout libnats applies to each publish (which answers every
// write it sent, with a timeout at worst) before it gives a write up as unknown itself.
constexpr std::chrono::seconds kGrace(2);
// The same refusal as JSStreamWrongLastSequenceErr (10071), without the sequence in its text:
// what nats-server 2.15's clustered stream leader answered to writes that lost a race for one
// key (NatsClusterRace, many threads claiming one key at once), where 2.9 answers 10071. libnats
// 3.4 (Debian 12's) has no name for it.
constexpr int kWrongLastSequenceUnnumbered = 10164;

bool WrongLastSequence(const jsPubAckErr& error) {
  return error.ErrCode == JSStreamWrongLastSequenceErr ||
         static_cast<int>(error.ErrCode) == kWrongLastSequenceUnnumbered;
}

using WriteResult = JetStreamClient::WriteResult;
using Publish = JetStreamClient::Publish;

std::string What(const Publish& write) {
  return fmt::format("writing to bucket '{}'", write.bucket);
}

natsStatus BuildMessage(natsMsg** msg, const Publish& write) {
  const std::string subject = fmt::format("$KV.{}.{}", write.bucket, write.key);
  natsStatus s = natsMsg_Create(msg, subject.c_str(), nullptr, write.value.data(),
                                static_cast<int>(write.value.size()));
  const std::string revision = std::to_string(write.expected);
  if (s == NATS_OK) s = natsMsgHeader_Set(*msg, kExpectedSubjectSequence, revision.c_str());
  if (s == NATS_OK && write.marker != nullptr) {
    s = natsMsgHeader_Set(*msg, kOperationHeader, write.marker);
    if (s == NATS_OK && std::string_view(write.marker) == "PURGE") {
      s = natsMsgHeader_Set(*msg, kRollupHeader, "sub");
    }
    if (s == NATS_OK && write.removed_fence > 0) {
      s = natsMsgHeader_Set(*msg, kRemovedFenceHeader, std::to_string(write.removed_fence).c_str());
    }
  }
  return s;
}

WriteResult ResultOf(const jsPubAck* ack, const jsPubAckErr* error, const Publish& write) {
  if (ack != nullptr && ack->Duplicate) return std::optional<uint64_t>();  // lost the race
  if (ack != nullptr) return std::optional<uint64_t>(ack->Sequence);
  if (error != nullptr && WrongLastSequence(*error)) {
    return std::optional<uint64_t>();  // the key moved on: nothing written
  }
  return TranslateJetStreamError(
      error != nullptr ? error->Err : NATS_ERR, error != nullptr ? error->ErrCode : 0,
      error != nullptr && error->ErrText != nullptr ? error->ErrText : "", What(write));
}

// One WriteMany call's writes that await their acknowledgement.
struct Call {
  const std::vector<Publish>* writes;
  std::vector<WriteResult>* results;
  size_t unanswered = 0;
};

}  // namespace

struct PendingWrites {
  std::mutex mu;
  std::condition_variable changed;  // a write was answered or given up: a call or a slot is free
  std::unordered_map<natsMsg*, std::pair<Call*, size_t>> sent;  // message -> its call and index
};

namespace {

// The acknowledgement callback of every write of the client. Nothing escapes it: a write whose
// answer could not be recorded stays unanswered, and its call reports it as an unknown outcome.
void OnAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error, void* closure) {
  auto* pending = static_cast<PendingWrites*>(closure);
  try {
    std::lock_guard<std::mutex> lock(pending->mu);
    auto it = pending->sent.find(msg);
    if (it != pending->sent.end()) {  // absent: its call gave it up already
      auto [call, index] = it->second;
      (*call->results)[index] = ResultOf(ack, error, (*call->writes)[index]);
      --call->unanswered;
      pending->sent.erase(it);
      // Wakes the waiting calls only when one may go on: its last answer came, or the window was
      // full (a call may wait for a slot); not once per acknowledgement.
      if (call->unanswered == 0 || pending->sent.size() + 1 == JetStreamClient::kWindow) {
        pending->changed.notify_all();
      }
    }
  } catch (...) {
  }
  natsMsg_Destroy(msg);
}

}  // namespace

JetStreamClient::JetStreamClient(natsConnection* connection, jsCtx* js, Millis timeout)
    : connection_(connection),
      js_(js),
      timeout_(timeout),
      max_payload_(natsConnection_GetMaxPayload(connection)),
      pending_(new PendingWrites) {}

JetStreamClient::~JetStreamClient() {
  routes_.reset();  // its advisories' subscriptions are on connection_
  if (async_js_ != nullptr) {
    // Unanswered writes are taken back (no callback comes for them any more), then freed.
    natsMsgList unanswered{};
    if (published_ && js_PublishAsyncGetPendingList(&unanswered, async_js_) == NATS_OK) {
      natsMsgList_Destroy(&unanswered);
    }
    jsCtx_Destroy(async_js_);
  }
  jsCtx_Destroy(js_);
  natsConnection_Destroy(connection_);
}

absl::Status JetStreamClient::OpenAsync(std::vector<std::string> servers) {
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = timeout_.count();
  options.PublishAsync.AckHandler = &OnAck;
  options.PublishAsync.AckHandlerClosure = pending_.get();
  const natsStatus s = natsConnection_JetStream(&async_js_, connection_, &options);
  if (s != NATS_OK) return TranslateNatsError(s, 0, "opening a JetStream context");
  routes_ = std::make_unique<LeaderRoutes>(
      connection_, LeaderRoutes::Route{.async = async_js_, .sync = js_, .published = &published_},
      std::move(servers), timeout_, &OnAck, pending_.get());
  return absl::OkStatus();
}

std::vector<WriteResult> JetStreamClient::WriteMany(const std::vector<Publish>& writes) {
  std::vector<WriteResult> results(writes.size(), absl::UnavailableError("not sent"));
  Call call{.writes = &writes, .results = &results};
  std::vector<natsMsg*> sent(writes.size(), nullptr);
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MaxWait = timeout_.count();  // libnats answers a write with a timeout after this
  const auto slot_deadline = std::chrono::steady_clock::now() + timeout_;
  // One route per bucket for the whole call, so that a bucket's writes keep their order.
  std::map<std::string_view, LeaderRoutes::Route> routes;
  for (const Publish& write : writes) {
    if (!routes.contains(write.bucket)) routes.emplace(write.bucket, routes_->For(write.bucket));
  }
  for (size_t i = 0; i < writes.size(); ++i) {
    natsMsg* msg = nullptr;
    natsStatus s = BuildMessage(&msg, writes[i]);
    if (s != NATS_OK) {
      results[i] = TranslateNatsError(s, 0, "building a JetStream message");
      natsMsg_Destroy(msg);
      continue;
    }
    {
      std::unique_lock<std::mutex> lock(pending_->mu);
      if (!pending_->changed.wait_until(lock, slot_deadline,
                                        [&] { return pending_->sent.size() < kWindow; })) {
        results[i] = absl::UnavailableError(fmt::format(
            "{}: {} writes still await JetStream's acknowledgement; this one was not sent",
            What(writes[i]), kWindow));
        lock.unlock();
        natsMsg_Destroy(msg);
        continue;
      }
      pending_->sent.emplace(msg, std::make_pair(&call, i));
      ++call.unanswered;
    }
    // Every write that expects revision R of a key carries the message id "SUBJECT@R", so that of
    // two writers expecting the same R at once, the stream's duplicate check (staged by the leader
    // when it proposes a message) lets one through even where the expected-sequence check does
    // not: nats-server before 2.9.21 checks it before proposing, and two concurrent publishes
    // expecting R could both be stored (nats-server issue 4320; seen here on 2.9.10 with two
    // takeovers of one lapsed claim). The duplicate is answered as a lost race: nothing written.
    const std::string msg_id =
        fmt::format("$KV.{}.{}@{}", writes[i].bucket, writes[i].key, writes[i].expected);
    options.MsgId = writes[i].expected > 0 ? msg_id.c_str() : nullptr;
    natsMsg* const owned = msg;
    const LeaderRoutes::Route& route = routes.at(writes[i].bucket);
    *route.published = true;
    s = js_PublishMsgAsync(route.async, &msg, &options);
    if (s == NATS_OK) {
      sent[i] = owned;
    } else {  // not sent: the library did not take it, no callback comes for it
      std::lock_guard<std::mutex> lock(pending_->mu);
      pending_->sent.erase(owned);
      --call.unanswered;
      results[i] = TranslateNatsError(s, 0, What(writes[i]));
      pending_->changed.notify_all();
    }
    natsMsg_Destroy(msg);  // null when the library took it
  }
  std::unique_lock<std::mutex> lock(pending_->mu);
  const auto deadline = std::chrono::steady_clock::now() + timeout_ + kGrace;
  pending_->changed.wait_until(lock, deadline, [&] { return call.unanswered == 0; });
  for (size_t i = 0; i < writes.size() && call.unanswered > 0; ++i) {
    auto it = sent[i] != nullptr ? pending_->sent.find(sent[i]) : pending_->sent.end();
    if (it == pending_->sent.end() || it->second != std::make_pair(&call, i)) continue;
    pending_->sent.erase(it);  // a late answer finds nothing and is dropped
    --call.unanswered;
    results[i] = TranslateNatsError(NATS_TIMEOUT, 0, What(writes[i]));
  }
  pending_->changed.notify_all();
  lock.unlock();
  for (size_t i = 0; i < writes.size(); ++i) {
    if (!results[i].ok()) routes_->Suspect(writes[i].bucket);  // the leader may have moved
  }
  return results;
}

}  // namespace idem::nats

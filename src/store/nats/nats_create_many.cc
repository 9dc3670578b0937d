// JetStreamClient::CreateMany: conditional publishes sent back to back on a JetStream context of
// their own, acknowledged asynchronously, so a batch of claims costs one round trip.
#include <fmt/format.h>

#include <mutex>
#include <unordered_map>

#include "store/nats/nats_client.h"

namespace idem::nats {
namespace {

using Result = absl::StatusOr<std::optional<uint64_t>>;

// What the acknowledgement handler fills in; it runs on libnats' delivery thread.
struct Pending {
  std::mutex mu;
  std::unordered_map<natsMsg*, size_t> index;  // message sent -> position in the batch
  std::vector<Result>* results = nullptr;
  std::vector<bool>* answered = nullptr;
};

void OnAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error, void* closure) {
  auto* pending = static_cast<Pending*>(closure);
  {
    std::lock_guard<std::mutex> lock(pending->mu);
    auto it = pending->index.find(msg);
    if (it != pending->index.end()) {
      Result& result = (*pending->results)[it->second];
      if (ack != nullptr) {
        result = std::optional<uint64_t>(ack->Sequence);
      } else if (error != nullptr && error->ErrCode == JSStreamWrongLastSequenceErr) {
        result = std::optional<uint64_t>();
      } else {
        result = TranslateJetStreamError(
            error != nullptr ? error->Err : NATS_ERR, error != nullptr ? error->ErrCode : 0,
            error != nullptr && error->ErrText != nullptr ? error->ErrText : "", "claiming a key");
      }
      (*pending->answered)[it->second] = true;
      pending->index.erase(it);
    }
  }
  natsMsg_Destroy(msg);
}

}  // namespace

absl::StatusOr<std::vector<Result>> JetStreamClient::CreateMany(
    const std::vector<Create>& creates) {
  std::vector<Result> results(creates.size(), absl::UnavailableError("not sent"));
  std::vector<bool> answered(creates.size(), false);
  std::vector<bool> sent(creates.size(), false);
  Pending pending{.results = &results, .answered = &answered};
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = timeout_.count();
  options.PublishAsync.AckHandler = &OnAck;
  options.PublishAsync.AckHandlerClosure = &pending;
  jsCtx* js = nullptr;
  natsStatus s = natsConnection_JetStream(&js, connection_, &options);
  if (s != NATS_OK) return TranslateNatsError(s, 0, "opening a JetStream context");
  for (size_t i = 0; i < creates.size() && s == NATS_OK; ++i) {
    natsMsg* msg = nullptr;
    const std::string subject = fmt::format("$KV.{}.{}", creates[i].bucket, creates[i].key);
    s = natsMsg_Create(&msg, subject.c_str(), nullptr, creates[i].value.data(),
                       static_cast<int>(creates[i].value.size()));
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Nats-Expected-Last-Subject-Sequence", "0");
    natsMsg* const owned = msg;
    if (s == NATS_OK) {
      std::lock_guard<std::mutex> lock(pending.mu);
      pending.index[owned] = i;
    }
    if (s == NATS_OK) s = js_PublishMsgAsync(js, &msg, nullptr);
    if (s == NATS_OK) {
      sent[i] = true;
    } else {
      std::lock_guard<std::mutex> lock(pending.mu);
      pending.index.erase(owned);
      results[i] = TranslateNatsError(s, 0, "claiming a key");
    }
    natsMsg_Destroy(msg);  // null when the library took it
  }
  jsPubOptions wait;
  jsPubOptions_Init(&wait);
  wait.MaxWait = timeout_.count();
  const natsStatus completed = js_PublishAsyncComplete(js, &wait);
  if (completed != NATS_OK) {
    natsMsgList unanswered{};
    if (js_PublishAsyncGetPendingList(&unanswered, js) == NATS_OK) {
      natsMsgList_Destroy(&unanswered);  // ours again: never acknowledged
    }
    js_PublishAsyncComplete(js, &wait);  // lets a handler already running finish
  }
  jsCtx_Destroy(js);
  std::lock_guard<std::mutex> lock(pending.mu);
  for (size_t i = 0; i < creates.size(); ++i) {
    if (sent[i] && !answered[i]) results[i] = TranslateNatsError(NATS_TIMEOUT, 0, "claiming a key");
  }
  return results;
}

}  // namespace idem::nats

#include "relay/nats_sink.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>

namespace idem::relay {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A subject (or part of one) NATS accepts for publishing: dot-separated tokens, none empty, no
// wildcard, no whitespace or control character.
bool IsPlainSubject(std::string_view s) {
  if (s.empty() || s.front() == '.' || s.back() == '.' || s.find("..") != s.npos) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c > ' ' && c != 0x7f && c != '*' && c != '>'; });
}

std::string StatusText(natsStatus s) {
  const char* last = nats_GetLastError(nullptr);
  return last != nullptr && *last != '\0' ? fmt::format("{} ({})", natsStatus_GetText(s), last)
                                          : std::string(natsStatus_GetText(s));
}

// NATS_CONN_STATUS_* as a word, for messages.
const char* ConnectionState(natsConnStatus status) {
  switch (status) {
    case NATS_CONN_STATUS_CONNECTING:
      return "connecting";
    case NATS_CONN_STATUS_RECONNECTING:
      return "reconnecting";
    case NATS_CONN_STATUS_CLOSED:
      return "closed";
    default:
      return "disconnected";
  }
}

// One server of --url's list, "HOST:PORT" (or "HOST", port 4222), with "nats://" before it or
// not: true when it names a host and, if any, a port from 1 to 65535.
bool IsServer(std::string_view server) {
  if (server.starts_with("nats://")) server.remove_prefix(7);
  if (!server.empty() && server.back() == '/') server.remove_suffix(1);
  const size_t colon = server.rfind(':');
  const std::string_view host = server.substr(0, colon);
  if (host.empty() || std::any_of(host.begin(), host.end(), [](char c) { return c <= ' '; })) {
    return false;
  }
  if (colon == std::string_view::npos) return true;
  int port = 0;
  const std::string_view digits = server.substr(colon + 1);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  return error == std::errc() && end == digits.data() + digits.size() && port >= 1 && port <= 65535;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> NatsServers(const std::string& url) {
  const auto refused = [&] {
    return absl::InvalidArgumentError(fmt::format(
        "--url '{}': the NATS sink needs nats://HOST:PORT, or a list of servers as the key store "
        "takes it: nats://HOST:PORT,HOST:PORT",
        url));
  };
  if (!url.starts_with("nats://") || url.find('?') != std::string::npos) return refused();
  std::string_view rest = std::string_view(url).substr(7);
  std::string_view credentials;  // "user:password@", put before each server
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    credentials = rest.substr(0, at + 1);
    rest.remove_prefix(at + 1);
  }
  std::vector<std::string> servers;
  while (true) {
    const size_t comma = rest.find(',');
    std::string_view server = rest.substr(0, comma);
    if (!IsServer(server)) return refused();
    if (server.starts_with("nats://")) server.remove_prefix(7);
    servers.push_back(fmt::format("nats://{}{}", credentials, server));
    if (comma == std::string_view::npos) return servers;
    rest.remove_prefix(comma + 1);
  }
}

absl::StatusOr<std::unique_ptr<NatsSink>> NatsSink::Create(const NatsSinkOptions& options) {
  absl::StatusOr<std::vector<std::string>> servers = NatsServers(options.url);
  if (!servers.ok()) return servers.status();
  if (!IsPlainSubject(options.subject_prefix)) {
    return absl::InvalidArgumentError(fmt::format(
        "--subject-prefix '{}': write a NATS subject without wildcards or spaces, e.g. idem.events",
        options.subject_prefix));
  }
  if (options.max_pending < 1) {
    return absl::InvalidArgumentError(
        "the number of outstanding acknowledgements must be 1 or more");
  }
  std::unique_ptr<NatsSink> sink(new NatsSink(options));
  if (absl::Status connected = sink->Connect(*servers); !connected.ok()) return connected;
  return sink;
}

absl::Status NatsSink::Connect(const std::vector<std::string>& servers) {
  std::vector<const char*> list;
  for (const std::string& server : servers) list.push_back(server.c_str());
  natsStatus s = natsOptions_Create(&nats_options_);
  if (s == NATS_OK) {
    s = natsOptions_SetServers(nats_options_, list.data(), static_cast<int>(list.size()));
  }
  if (s != NATS_OK) {
    return absl::InvalidArgumentError(fmt::format("--url '{}': {}", options_.url, StatusText(s)));
  }
  natsOptions_SetTimeout(nats_options_, std::min<int64_t>(options_.timeout.count(), 5'000));
  natsOptions_SetMaxReconnect(nats_options_, -1);  // for ever; attempts fail meanwhile
  natsOptions_SetReconnectWait(nats_options_, 500);
  // With a callback, a server that is down does not block Connect: it keeps trying meanwhile.
  natsOptions_SetRetryOnFailedConnect(
      nats_options_, true, [](natsConnection*, void*) {}, nullptr);
  s = natsConnection_Connect(&conn_, nats_options_);
  if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) {
    return absl::InvalidArgumentError(
        fmt::format("--url '{}': cannot connect: {}", options_.url, StatusText(s)));
  }
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.PublishAsync.MaxPending = options_.max_pending;
  js_options.PublishAsync.AckHandler = &NatsSink::OnAck;
  js_options.PublishAsync.AckHandlerClosure = this;
  js_options.PublishAsync.StallWait = options_.timeout.count();
  s = natsConnection_JetStream(&js_, conn_, &js_options);
  if (s != NATS_OK) {
    return absl::InternalError(fmt::format("cannot make a JetStream context: {}", StatusText(s)));
  }
  return absl::OkStatus();
}

NatsSink::~NatsSink() {
  jsCtx_Destroy(js_);
  natsConnection_Destroy(conn_);
  natsOptions_Destroy(nats_options_);
}

natsMsg* NatsSink::Build(const OutboxRecord& message, Delivery& failed) {
  if (!IsPlainSubject(message.topic)) {
    failed = {.kind = Delivery::Kind::kRejected,
              .error = fmt::format("topic '{}' cannot be part of a NATS subject (empty tokens, "
                                   "wildcards and spaces are not allowed)",
                                   message.topic)};
    return nullptr;
  }
  size_t size = message.payload.size() + message.id.size() + 64;  // with the header block
  for (const Header& h : message.headers) size += h.name.size() + h.value.size() + 4;
  const int64_t max_payload = natsConnection_GetMaxPayload(conn_);
  if (max_payload > 0 && static_cast<int64_t>(size) > max_payload) {
    failed = {.kind = Delivery::Kind::kRetry,
              .error = fmt::format("the message is about {} bytes with its headers, over the NATS "
                                   "server's max_payload of {} bytes",
                                   size, max_payload)};
    return nullptr;
  }
  const std::string subject = fmt::format("{}.{}", options_.subject_prefix, message.topic);
  natsMsg* msg = nullptr;
  natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, message.payload.data(),
                                static_cast<int>(message.payload.size()));
  for (const Header& h : message.headers) {
    if (s == NATS_OK) s = natsMsgHeader_Add(msg, h.name.c_str(), h.value.c_str());
  }
  if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Nats-Msg-Id", message.id.c_str());
  if (s != NATS_OK) {
    natsMsg_Destroy(msg);
    failed = {.kind = Delivery::Kind::kRejected,
              .error = fmt::format("NATS cannot carry this message: {}", StatusText(s))};
    return nullptr;
  }
  return msg;
}

void NatsSink::Settle(size_t index, Delivery delivery) {
  if (index >= settled_.size() || settled_[index]) return;
  settled_[index] = true;
  results_[index] = std::move(delivery);
}

void NatsSink::OnAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr* err, void* closure) {
  auto* self = static_cast<NatsSink*>(closure);
  const char* id = nullptr;
  if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) == NATS_OK && id != nullptr) {
    std::lock_guard<std::mutex> lock(self->mu_);
    auto it = self->waiting_.find(id);
    if (it != self->waiting_.end()) {
      if (ack != nullptr) {
        self->Settle(it->second, {.kind = Delivery::Kind::kDelivered});
      } else {
        std::string why =
            err != nullptr && err->ErrText != nullptr
                ? std::string(err->ErrText)
                : std::string(natsStatus_GetText(err != nullptr ? err->Err : NATS_ERR));
        if (err != nullptr && err->Err == NATS_NO_RESPONDERS) {
          why = fmt::format("no JetStream stream captures subject '{}'", natsMsg_GetSubject(msg));
        }
        self->Settle(it->second, {.kind = Delivery::Kind::kRetry, .error = "JetStream: " + why});
      }
    }
  }
  natsMsg_Destroy(msg);
}

Delivery NatsSink::Publish(const OutboxRecord& message) {
  const OutboxRecord* one[] = {&message};
  return PublishEach(one).front();
}

std::vector<Delivery> NatsSink::PublishEach(std::span<const OutboxRecord* const> messages) {
  const SteadyClock::time_point deadline = SteadyClock::now() + options_.timeout;
  const natsConnStatus state = natsConnection_Status(conn_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string unacknowledged =
        fmt::format("no acknowledgement from JetStream at {} within {} ms", options_.url,
                    options_.timeout.count());
    results_.assign(messages.size(), {.kind = Delivery::Kind::kRetry, .error = unacknowledged});
    settled_.assign(messages.size(), false);
    waiting_.clear();
    if (state != NATS_CONN_STATUS_CONNECTED) {
      for (size_t i = 0; i < messages.size(); ++i) {
        Settle(i, {.kind = Delivery::Kind::kRetry,
                   .error = fmt::format("not connected to NATS at {} ({})", options_.url,
                                        ConnectionState(state))});
      }
      return results_;
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    Delivery failed;
    natsMsg* msg = Build(*messages[i], failed);
    std::unique_lock<std::mutex> lock(mu_);
    if (msg == nullptr) {
      Settle(i, std::move(failed));
      continue;
    }
    waiting_[messages[i]->id] = i;
    lock.unlock();  // the acknowledgement handler takes mu_, and a stalled publish waits for it
    const natsStatus s = js_PublishMsgAsync(js_, &msg, nullptr);
    natsMsg_Destroy(msg);  // null when the library took it
    if (s != NATS_OK) {
      lock.lock();
      Settle(i, {.kind = Delivery::Kind::kRetry,
                 .error = fmt::format("publishing to NATS failed: {}", StatusText(s))});
    }
  }
  jsPubOptions wait;
  jsPubOptions_Init(&wait);
  wait.MaxWait =
      std::max<int64_t>(1, std::chrono::ceil<Millis>(deadline - SteadyClock::now()).count());
  js_PublishAsyncComplete(js_, &wait);
  natsMsgList unacknowledged;  // taken back: a late acknowledgement of these is dropped
  if (js_PublishAsyncGetPendingList(&unacknowledged, js_) == NATS_OK) {
    natsMsgList_Destroy(&unacknowledged);
  }
  std::lock_guard<std::mutex> lock(mu_);
  waiting_.clear();
  return results_;
}

}  // namespace idem::relay

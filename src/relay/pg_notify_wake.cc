#include "relay/pg_notify_wake.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace idem::relay {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr Millis kFirstReconnectWait{250};
constexpr Millis kLongestReconnectWait{30'000};

// libpq's message without its trailing newline.
std::string LibpqError(const PGconn* conn) {
  std::string message = conn != nullptr ? PQerrorMessage(conn) : "out of memory";
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
    message.pop_back();
  }
  return message;
}

// A killed connection's "FATAL: terminating connection ..." would reach stderr through libpq's
// default notice processor; the loss is handled (a reconnect) and needs no raw server text.
void IgnoreNotice(void*, const char*) {}

}  // namespace

absl::StatusOr<std::unique_ptr<PgNotifyWake>> PgNotifyWake::Create(PgNotifyWakeOptions options) {
  const int event_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd < 0) {
    return absl::InternalError(fmt::format("cannot make an eventfd: {}", std::strerror(errno)));
  }
  std::unique_ptr<PgNotifyWake> wake(new PgNotifyWake(std::move(options), event_fd));
  if (absl::Status connected = wake->Connect(); !connected.ok()) return connected;
  return wake;
}

PgNotifyWake::~PgNotifyWake() {
  Disconnect();
  ::close(event_fd_);
}

absl::Status PgNotifyWake::Connect() {
  // dbname comes last: what the conninfo sets itself overrides the two defaults before it.
  const std::string timeout = std::to_string(options_.connect_timeout_s);
  const char* const keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* const values[] = {timeout.c_str(), options_.application_name.c_str(),
                                options_.conninfo.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    absl::Status failed = absl::UnavailableError(
        fmt::format("cannot connect to LISTEN for new messages: {}", LibpqError(conn)));
    PQfinish(conn);
    return failed;
  }
  PQsetNoticeProcessor(conn, &IgnoreNotice, nullptr);
  char* channel = PQescapeIdentifier(conn, options_.channel.data(), options_.channel.size());
  if (channel == nullptr) {
    absl::Status failed = absl::UnavailableError(LibpqError(conn));
    PQfinish(conn);
    return failed;
  }
  PGresult* result = PQexec(conn, fmt::format("LISTEN {}", channel).c_str());
  PQfreemem(channel);
  const bool ok = PQresultStatus(result) == PGRES_COMMAND_OK;
  PQclear(result);
  if (!ok) {
    absl::Status failed = absl::UnavailableError(
        fmt::format("LISTEN {} failed: {}", options_.channel, LibpqError(conn)));
    PQfinish(conn);
    return failed;
  }
  conn_ = conn;
  reconnect_backoff_ = kFirstReconnectWait;
  return absl::OkStatus();
}

void PgNotifyWake::Disconnect() {
  if (conn_ == nullptr) return;
  PQfinish(conn_);
  conn_ = nullptr;
  next_connect_ = SteadyClock::now();  // the first attempt to come back is not delayed
}

bool PgNotifyWake::DrainNotifications() {
  if (conn_ == nullptr) return false;
  if (PQconsumeInput(conn_) == 0 || PQstatus(conn_) != CONNECTION_OK) {
    Disconnect();
    return false;
  }
  bool any = false;
  while (PGnotify* notify = PQnotifies(conn_)) {
    any = true;
    PQfreemem(notify);
  }
  return any;
}

bool PgNotifyWake::PollOnce(int timeout_ms, bool* socket_ready) {
  pollfd fds[2] = {{.fd = event_fd_, .events = POLLIN, .revents = 0},
                   {.fd = conn_ != nullptr ? PQsocket(conn_) : -1, .events = POLLIN, .revents = 0}};
  const nfds_t count = fds[1].fd >= 0 ? 2 : 1;
  if (::poll(fds, count, timeout_ms) <= 0) return false;  // timed out, or a signal (EINTR)
  if ((fds[0].revents & POLLIN) != 0) {
    uint64_t counter = 0;
    [[maybe_unused]] const ssize_t read = ::read(event_fd_, &counter, sizeof(counter));
    return true;
  }
  *socket_ready = count == 2 && fds[1].revents != 0;
  return false;
}

void PgNotifyWake::Wait(Millis wait) {
  const SteadyClock::time_point deadline = SteadyClock::now() + wait;
  if (conn_ == nullptr && SteadyClock::now() >= next_connect_) {
    if (Connect().ok()) {
      ++reconnects_;
      return;  // what was committed while the connection was down was never notified: look now
    }
    next_connect_ = SteadyClock::now() + reconnect_backoff_;
    reconnect_backoff_ = std::min(reconnect_backoff_ * 2, kLongestReconnectWait);
  }
  if (DrainNotifications()) return;  // notified since the last Wait
  for (;;) {
    const auto left = std::chrono::ceil<Millis>(deadline - SteadyClock::now());
    if (left <= Millis(0)) return;
    bool socket_ready = false;
    const bool had_connection = conn_ != nullptr;
    if (PollOnce(static_cast<int>(std::min<int64_t>(left.count(), 60'000)), &socket_ready)) {
      return;
    }
    if (!socket_ready) continue;
    if (DrainNotifications()) return;
    if (had_connection && conn_ == nullptr) return;  // lost: look once; reconnect next time
  }
}

void PgNotifyWake::Interrupt() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(event_fd_, &one, sizeof(one));
}

}  // namespace idem::relay

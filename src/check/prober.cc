#include "check/prober.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <exception>
#include <utility>

#include "http/tls.h"

namespace idem::check {
namespace {

namespace bhttp = boost::beast::http;
using SteadyClock = std::chrono::steady_clock;

Millis Since(SteadyClock::time_point start) {
  return std::chrono::duration_cast<Millis>(SteadyClock::now() - start);
}

Answer Failed(const absl::Status& status, bool sent) {
  Answer a;
  a.sent = sent;
  a.code = status.code();
  a.error = std::string(status.message());
  return a;
}

Answer FromResponse(http::Response& res) {
  Answer a;
  a.sent = true;
  a.status = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    a.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  a.body = std::move(res.body());
  return a;
}

void SetHost(const http::Url& url, http::Request& request) {
  if (request.find(bhttp::field::host) == request.end()) {
    request.set(bhttp::field::host, url.authority);
  }
}

}  // namespace

std::string Answer::Header(std::string_view name) const {
  for (const auto& [field, value] : headers) {
    if (field.size() == name.size() &&
        std::equal(field.begin(), field.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return value;
    }
  }
  return "";
}

absl::StatusOr<std::unique_ptr<Prober>> Prober::Create(ProberOptions options) {
  if (!options.cacert.empty()) {
    absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> checked =
        http::MakeClientTlsContext({.ca_file = options.cacert, .system_store = false});
    if (!checked.ok()) return checked.status();
  }
  options.max_together = std::max(options.max_together, 1);
  return std::unique_ptr<Prober>(new Prober(std::move(options)));
}

Prober::~Prober() {
  for (auto& [name, pool] : pools_) pool->Shutdown();
}

absl::StatusOr<std::shared_ptr<http::ConnectionPool>> Prober::PoolFor(const http::Origin& origin) {
  const std::string name = origin.ToString();
  if (auto it = pools_.find(name); it != pools_.end()) return it->second;
  if (origin.tls() && tls_ == nullptr) {
    absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> tls =
        http::MakeClientTlsContext({.ca_file = options_.cacert});
    if (!tls.ok()) return tls.status();
    tls_ = std::move(*tls);
  }
  // No idle connection is ever kept: each request has a connection of its own, so none is
  // re-sent because a kept-alive connection turned out closed.
  absl::StatusOr<std::shared_ptr<http::ConnectionPool>> pool =
      http::ConnectionPool::Create(ioc_.get_executor(), origin,
                                   {.max_open = static_cast<size_t>(options_.max_together) + 1,
                                    .max_idle = 0,
                                    .tls = tls_,
                                    .single_threaded = true});
  if (pool.ok()) pools_.emplace(name, *pool);
  return pool;
}

http::SteadyTime Prober::RequestDeadline() const {
  const http::SteadyTime now = SteadyClock::now();
  if (run_deadline_ <= now) return now;
  return run_deadline_ - now < options_.timeout ? run_deadline_ : now + options_.timeout;
}

void Prober::RunUntil(const size_t& pending) {
  // run_one, not run: a pool's timers would keep run() waiting.
  ioc_.restart();
  while (pending > 0 && ioc_.run_one() > 0) {
  }
}

std::vector<http::PooledConnection> Prober::Connect(
    const std::shared_ptr<http::ConnectionPool>& pool, size_t n,
    std::vector<absl::Status>& failed) {
  std::vector<http::PooledConnection> connections(n);
  failed.assign(n, absl::OkStatus());
  size_t pending = n;
  const http::SteadyTime deadline = RequestDeadline();
  for (size_t i = 0; i < n; ++i) {
    pool->AsyncAcquire(deadline, [&, i](http::AcquireResult r) {
      if (r.ok()) {
        connections[i] = std::move(*r);
      } else {
        failed[i] = r.status();
      }
      --pending;
    });
  }
  RunUntil(pending);
  return connections;
}

absl::Status Prober::Reach(const http::Url& url) {
  try {
    absl::StatusOr<std::shared_ptr<http::ConnectionPool>> pool = PoolFor(url.origin);
    if (!pool.ok()) return pool.status();
    std::vector<absl::Status> failed;
    Connect(*pool, 1, failed);  // the connection is closed as it goes out of scope
    return failed[0];
  } catch (const std::exception& e) {
    return absl::InternalError(fmt::format("connecting failed: {}", e.what()));
  }
}

Answer Prober::Send(const http::Url& url, http::Request request) {
  std::vector<http::Request> one;
  one.push_back(std::move(request));
  return std::move(SendTogether(url, std::move(one))[0]);
}

std::vector<Answer> Prober::SendTogether(const http::Url& url,
                                         std::vector<http::Request> requests) {
  const size_t n = requests.size();
  requests_sent_ += static_cast<int>(n);
  std::vector<Answer> answers(n);
  try {
    absl::StatusOr<std::shared_ptr<http::ConnectionPool>> pool = PoolFor(url.origin);
    if (!pool.ok()) return std::vector<Answer>(n, Failed(pool.status(), false));
    std::vector<absl::Status> failed;
    std::vector<http::PooledConnection> connections = Connect(*pool, n, failed);
    size_t pending = 0;
    const http::SteadyTime deadline = RequestDeadline();
    const SteadyClock::time_point start = SteadyClock::now();
    for (size_t i = 0; i < n; ++i) {
      if (!connections[i].valid()) {
        answers[i] = Failed(failed[i], false);
        continue;
      }
      SetHost(url, requests[i]);
      connections[i].stream().tcp().expires_at(deadline);
      ++pending;
      http::AsyncExchange(connections[i].stream(), requests[i], options_.limits,
                          [&, i](boost::system::error_code ec, http::ExchangeReply reply) {
                            answers[i] =
                                ec ? Failed(http::InterpretExchangeError(ec, options_.limits,
                                                                         url.origin.ToString()),
                                            reply.any_written)
                                   : FromResponse(reply.response);
                            answers[i].took = Since(start);
                            --pending;
                          });
    }
    RunUntil(pending);
  } catch (const std::exception& e) {
    return std::vector<Answer>(
        n, Failed(absl::InternalError(fmt::format("HTTP exchange failed: {}", e.what())), true));
  }
  return answers;
}

Answer Prober::SendAndHangUp(const http::Url& url, http::Request request) {
  ++requests_sent_;
  try {
    absl::StatusOr<std::shared_ptr<http::ConnectionPool>> pool = PoolFor(url.origin);
    if (!pool.ok()) return Failed(pool.status(), false);
    std::vector<absl::Status> failed;
    std::vector<http::PooledConnection> connections = Connect(*pool, 1, failed);
    if (!connections[0].valid()) return Failed(failed[0], false);
    SetHost(url, request);
    http::Stream& stream = connections[0].stream();
    stream.tcp().expires_at(RequestDeadline());
    const SteadyClock::time_point start = SteadyClock::now();
    Answer answer;
    size_t pending = 1;
    bhttp::async_write(stream, request, [&](boost::system::error_code ec, std::size_t written) {
      answer.sent = !ec || written > 0;
      if (ec) answer.error = fmt::format("writing the request failed: {}", ec.message());
      --pending;
    });
    RunUntil(pending);
    stream.Close();  // before a byte of the answer is read
    answer.took = Since(start);
    return answer;
  } catch (const std::exception& e) {
    return Failed(absl::InternalError(fmt::format("HTTP exchange failed: {}", e.what())), true);
  }
}

}  // namespace idem::check

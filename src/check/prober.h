// Prober: the HTTP side of `idem check`. Every request goes on a connection of its own (never a
// kept-alive one, so that no request is ever re-sent by the client: a request is written once or
// not at all), within a time bound, and its answer is read whole. Requests may be sent together
// (connections opened first, then every request written at once) or sent and hung up on before
// any answer is read.
//
// Thread-safety: one Prober per thread; its calls must not run concurrently (it runs its own
// io_context on the calling thread).
#ifndef IDEM_CHECK_PROBER_H_
#define IDEM_CHECK_PROBER_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#pragma GCC diagnostic pop

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "check/check_plan.h"
#include "http/connection_pool.h"
#include "http/exchange.h"
#include "http/url.h"
#include "idem/clock.h"

namespace idem::check {

// What came back for one request.
struct Answer {
  int status = 0;     // 0: no answer (see error)
  bool sent = false;  // some bytes of the request may have reached the server
  std::string error;  // why there is no answer, for a person
  absl::StatusCode code = absl::StatusCode::kOk;  // of the failure, when status is 0
  HeaderList headers;                             // every header of the answer, in order
  std::string body;
  Millis took{0};

  // The value of header `name` (any letter case), "" when absent.
  std::string Header(std::string_view name) const;
};

struct ProberOptions {
  Millis timeout{10'000};  // per request: connect, write, read the whole answer
  std::string cacert;      // extra CA file for https (checked by Create)
  int max_together = 8;    // the most requests SendTogether takes
  http::Limits limits{.max_body = uint64_t{16} << 20};
};

class Prober final {
 public:
  // Returns a prober, or InvalidArgument when options.cacert cannot be read.
  static absl::StatusOr<std::unique_ptr<Prober>> Create(ProberOptions options);
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;
  ~Prober();

  // Opens a connection to `url`'s origin (TLS handshake included) and closes it, sending
  // nothing. Returns OK, or the pool's error (NotFound, Unavailable, Unauthenticated,
  // DeadlineExceeded) worded for a person.
  absl::Status Reach(const http::Url& url);

  // Sends `request` to `url`'s origin and reads its answer. Never throws.
  Answer Send(const http::Url& url, http::Request request);

  // Opens one connection per request, then writes every request at once and reads every
  // answer; answers are in the order of `requests`. REQUIRES: requests.size() <= max_together.
  std::vector<Answer> SendTogether(const http::Url& url, std::vector<http::Request> requests);

  // Writes `request` whole, then closes the connection before any answer is read. The Answer
  // has status 0; `sent` says whether the request was written (error says why not).
  Answer SendAndHangUp(const http::Url& url, http::Request request);

  int requests_sent() const { return requests_sent_; }

  // No request runs past `deadline` (the whole run's, --deadline), whatever its timeout.
  void set_deadline(http::SteadyTime deadline) { run_deadline_ = deadline; }

 private:
  explicit Prober(ProberOptions options) : options_(std::move(options)) {}
  absl::StatusOr<std::shared_ptr<http::ConnectionPool>> PoolFor(const http::Origin& origin);
  // Acquires `n` fresh connections; a failed one is left invalid with its status in `failed`.
  std::vector<http::PooledConnection> Connect(const std::shared_ptr<http::ConnectionPool>& pool,
                                              size_t n, std::vector<absl::Status>& failed);
  void RunUntil(const size_t& pending);
  // Now plus the timeout, never after the run's deadline.
  http::SteadyTime RequestDeadline() const;

  ProberOptions options_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  boost::asio::io_context ioc_;
  std::map<std::string, std::shared_ptr<http::ConnectionPool>> pools_;
  int requests_sent_ = 0;
  http::SteadyTime run_deadline_ = http::SteadyTime::max();
};

}  // namespace idem::check

#endif  // IDEM_CHECK_PROBER_H_

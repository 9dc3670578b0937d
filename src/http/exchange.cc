#include "http/exchange.h"

#include <fmt/format.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#pragma GCC diagnostic pop

#include "absl/status/status.h"

namespace idem::http {

absl::Status InterpretExchangeError(const boost::system::error_code& ec, const Limits& limits,
                                    std::string_view origin) {
  namespace beast = boost::beast;
  namespace bhttp = beast::http;
  if (ec == beast::error::timeout) {
    return absl::DeadlineExceededError(
        fmt::format("no complete answer from {} before the deadline", origin));
  }
  if (ec == boost::asio::error::operation_aborted) {
    return absl::CancelledError(fmt::format("the request to {} was cancelled", origin));
  }
  if (ec == bhttp::error::body_limit) {
    return absl::ResourceExhaustedError(
        fmt::format("the answer from {} has a body larger than the limit of {} bytes", origin,
                    limits.max_body));
  }
  if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
    return absl::ResourceExhaustedError(fmt::format(
        "the answer from {} has a status line and headers larger than the limit of {} bytes",
        origin, limits.max_header));
  }
  if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
      ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset ||
      ec == boost::asio::error::broken_pipe || ec == boost::asio::ssl::error::stream_truncated) {
    return absl::UnavailableError(fmt::format(
        "the connection to {} closed before a complete answer arrived ({})", origin, ec.message()));
  }
  if (ec == bhttp::error::bad_status) {
    return absl::DataLossError(fmt::format(
        "the answer from {} is not valid HTTP/1.1: more than {} interim (1xx) answers, a "
        "switch to another protocol (101) or a malformed status",
        origin, limits.max_interim));
  }
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category()) {
    return absl::DataLossError(
        fmt::format("the answer from {} is not valid HTTP/1.1 ({})", origin, ec.message()));
  }
  return absl::UnavailableError(
      fmt::format("the exchange with {} failed: {}", origin, ec.message()));
}

bool IsTransient(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

namespace detail {
namespace {

namespace asio = boost::asio;
using error_code = boost::system::error_code;

// Whether a request some bytes of which may have reached the server is sent again after a
// kept-alive connection turned out dead, as `resend` allows (see Resend).
bool MayResendWritten(const Request& request, Resend resend) {
  using boost::beast::http::verb;
  if (resend == Resend::kUnwritten) return false;
  switch (request.method()) {
    case verb::get:
    case verb::head:
    case verb::options:
    case verb::trace:
    case verb::put:
    case verb::delete_:
      return true;
    default:
      return resend == Resend::kIdempotentOrKeyed &&
             request.find("Idempotency-Key") != request.end();
  }
}

std::string HostHeader(const Origin& o) {
  const bool default_port = o.port == (o.tls() ? 443 : 80);
  const bool v6 = o.host.find(':') != std::string::npos;
  std::string host = v6 ? fmt::format("[{}]", o.host) : o.host;
  return default_port ? host : fmt::format("{}:{}", host, o.port);
}

class SendOp final : public std::enable_shared_from_this<SendOp> {
 public:
  SendOp(std::shared_ptr<ConnectionPool> pool, Request request, SendOptions options, SendDone done)
      : pool_(std::move(pool)),
        executor_(pool_->OperationExecutor()),
        request_(std::move(request)),
        options_(options),
        done_(std::move(done)) {
    if (request_.find(boost::beast::http::field::host) == request_.end()) {
      request_.set(boost::beast::http::field::host, HostHeader(pool_->origin()));
    }
  }

  void Run() {
    // On a single-threaded pool this already runs on the executor the send belongs to, so an
    // idle connection at hand is used at once rather than after a round trip through the
    // executor (the exchange's own completion is never inline: no handler runs from here).
    if (pool_->single_threaded()) {
      if (PooledConnection idle = pool_->TryAcquireIdle(); idle.valid())
        return OnAcquired(std::move(idle));
    }
    pool_->AsyncAcquire(
        options_.deadline,
        asio::bind_executor(executor_, [self = shared_from_this()](AcquireResult r) mutable {
          self->OnAcquired(std::move(r));
        }));
  }

  void Cancel() {
    asio::dispatch(executor_, [self = shared_from_this()] {
      if (self->finished_) return;
      self->cancelled_ = true;
      if (self->conn_.valid()) {
        self->conn_.stream().tcp().cancel();  // the exchange completes with operation_aborted
      } else {
        self->Finish(absl::CancelledError("the request was cancelled"), false);
      }
    });
  }

 private:
  void OnAcquired(AcquireResult r) {
    if (finished_) {  // cancelled while acquiring: the unused connection goes back as it is
      if (r.ok()) r->Release(true);
      return;
    }
    if (!r.ok()) return Finish(r.status(), false);
    conn_ = std::move(*r);
    result_.connection_reused = conn_.reused();
    conn_.stream().tcp().expires_at(options_.deadline);
    AsyncExchange(conn_.stream(), request_, options_.limits,
                  asio::bind_executor(
                      executor_, [self = shared_from_this()](error_code ec, ExchangeReply reply) {
                        self->OnExchanged(ec, std::move(reply));
                      }));
  }

  void OnExchanged(error_code ec, ExchangeReply reply) {
    if (!ec) {
      conn_.stream().tcp().expires_never();
      conn_.Release(reply.keep_alive);
      result_.response = std::move(reply.response);
      result_.request_sent = true;
      return Complete();
    }
    // A kept-alive connection the server closed meanwhile fails at once, before any answer.
    const bool dead_on_arrival = conn_.reused() && !reply.answer_started &&
                                 ec != boost::beast::error::timeout &&
                                 ec != asio::error::operation_aborted;
    conn_ = PooledConnection();  // closes it: its state is unknown
    result_.answer_head_received = reply.head_received;
    result_.answer_head_status = reply.head_status;
    if (cancelled_) return Finish(absl::CancelledError("the request was cancelled"), true);
    // Only a request none of whose bytes left is surely unseen by the server: one it read and
    // dropped unanswered may have had its effect, and is sent again only as options_.resend says.
    if (dead_on_arrival && !resent_ &&
        (!reply.any_written || MayResendWritten(request_, options_.resend))) {
      resent_ = true;  // the server closed a kept-alive connection: once more on a fresh one
      return Run();
    }
    Finish(InterpretExchangeError(ec, options_.limits, pool_->origin().ToString()),
           reply.any_written);
  }

  void Finish(absl::Status status, bool maybe_sent) {
    result_.response = std::move(status);
    result_.request_sent = maybe_sent;
    Complete();
  }

  void Complete() {
    if (finished_) return;
    finished_ = true;
    std::move(done_)(std::move(result_));
  }

  std::shared_ptr<ConnectionPool> pool_;
  // A strand of the pool's executor, or the executor itself for a single-threaded pool.
  asio::any_io_executor executor_;
  Request request_;
  const SendOptions options_;
  SendDone done_;
  PooledConnection conn_;
  SendResult result_;
  bool resent_ = false;
  bool cancelled_ = false;
  bool finished_ = false;
};

}  // namespace

std::shared_ptr<void> MakeSend(std::shared_ptr<ConnectionPool> pool, Request request,
                               SendOptions options, SendDone done) {
  return std::make_shared<SendOp>(std::move(pool), std::move(request), options, std::move(done));
}

void RunSend(const std::shared_ptr<void>& handle) { static_cast<SendOp*>(handle.get())->Run(); }

void CancelSend(const std::shared_ptr<void>& handle) {
  static_cast<SendOp*>(handle.get())->Cancel();
}

}  // namespace detail
}  // namespace idem::http

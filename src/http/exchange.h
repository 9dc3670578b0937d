// One buffered HTTP/1.1 request and its answer.
//   AsyncExchange: on a connected Stream, writes the request and reads the final response,
//     reading past 1xx interim responses (100 Continue, 103 Early Hints), within size limits; a
//     101 Switching Protocols is an error (bad_status). A server that answers before reading
//     the whole request and closes (a 413 from the head alone) has its answer read all the same.
//   AsyncSend: the same through a ConnectionPool: acquires a connection by the deadline, runs the
//     exchange, gives the connection back (kept alive when the exchange allows), and resends once
//     on a fresh connection when a reused one turns out closed by the server before any byte of
//     the answer arrived: always when no byte of the request was written, otherwise as
//     SendOptions::resend allows (by default only idempotent methods; never for kUnwritten).
//
// Thread-safety: AsyncSend may be started from any thread, any number at once (each runs on its
// own strand), except on a single-threaded pool (PoolOptions::single_threaded: started from the
// pool's thread, run on its executor); its handler runs on the handler's associated executor (e.g. the caller's strand),
// otherwise on the pool's executor. AsyncSend honours Asio per-operation cancellation (bind a
// cancellation slot to the handler; any cancellation type ends it with Cancelled).
// AsyncExchange has Stream's rules: one exchange per Stream at a time.
//
// Any Asio completion token works (a callback, boost::asio::use_awaitable, deferred). From a
// C++20 coroutine, e.g. a proxy's upstream side (one pool per upstream, shared by all requests):
//
//   auto tls = MakeClientTlsContext({});                       // for https upstreams
//   auto pool = ConnectionPool::Create(ex, upstream_url.origin,
//                                      {.max_open = 256, .max_idle = 64, .tls = *tls});
//   ...
//   Request req{boost::beast::http::verb::post, target, 11};  // Host is filled in if absent
//   req.body() = body;
//   req.prepare_payload();
//   SendResult r = co_await AsyncSend(*pool, std::move(req),
//                                     {.deadline = std::chrono::steady_clock::now() + 10s},
//                                     boost::asio::use_awaitable);
//   if (!r.response.ok()) ...  // DeadlineExceeded: too slow; Unavailable etc.: unreachable
//
// The response is the final one (1xx interim answers are consumed). Cancelling the awaiting
// operation (a cancellation slot, e.g. through awaitable_operators' `||` with a timer) ends the
// send with Cancelled and closes its connection.
#ifndef IDEM_HTTP_EXCHANGE_H_
#define IDEM_HTTP_EXCHANGE_H_

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/compose.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#pragma GCC diagnostic pop
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "http/connection_pool.h"
#include "http/stream.h"

namespace idem::http {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

struct Limits {
  uint64_t max_body = uint64_t{256} << 20;  // bytes of response body (default 256 MiB)
  uint32_t max_header = 64 * 1024;          // bytes of status line and headers (default 64 KiB)
  int max_interim = 16;                     // 1xx responses skipped before the final one
};

// What AsyncExchange produced.
struct ExchangeReply {
  Response response;             // the final (non-1xx) response, when no error
  bool keep_alive = false;       // the connection may carry another request
  bool request_written = false;  // the whole request was written
  // Some bytes of the request may have reached the server: false only when the first write
  // failed before the kernel took any byte (a TLS write that failed counts as written: TLS does
  // not say how far it got).
  bool any_written = false;
  bool answer_started = false;  // some bytes of an answer arrived (even on error)
  bool head_received = false;   // the head of the final (non-1xx) answer arrived (even on error)
  int head_status = 0;          // that head's status, when it arrived
};

// Writes `request` (sent as is: set Host and Content-Length first, e.g. prepare_payload()) and
// reads the final response. Deadline: the caller's stream.tcp().expires_at(). Completes with
// (error_code, ExchangeReply): Beast's and Asio's codes; InterpretExchangeError words them.
// REQUIRES: `stream` and `request` outlive the operation.
template <class Token>
auto AsyncExchange(Stream& stream, const Request& request, const Limits& limits, Token&& token);

// Turns an AsyncExchange error into a Status, worded for a person about `origin`:
// DeadlineExceeded (the stream's deadline passed), Cancelled, ResourceExhausted (the answer
// exceeded a limit: never retry), DataLoss (the answer is not valid HTTP: never retry),
// Unavailable (connection closed or reset, answer cut short: transient).
absl::Status InterpretExchangeError(const boost::system::error_code& ec, const Limits& limits,
                                    std::string_view origin);

// Whether a failure is worth a retry: Unavailable and DeadlineExceeded.
bool IsTransient(const absl::Status& status);

// Whether AsyncSend sends a request once more, on a fresh connection, when a kept-alive
// connection fails before any byte of the answer arrived (the server may have closed it while
// idle, or may have read the request, run it and dropped the connection: the client cannot tell).
enum class Resend {
  // Only a request none of whose bytes can have reached the server (its first write failed).
  // For a caller that must never be the one to run a request twice (idem serve's guarded
  // forwards: the client owns the key and decides whether to retry).
  kUnwritten,
  // Also a request with an idempotent method (RFC 9110 9.2.2: GET, HEAD, OPTIONS, TRACE, PUT,
  // DELETE), which a client may repeat by itself.
  kIdempotent,
  // Also a request carrying an Idempotency-Key: for the key's owner, which would send the same
  // key again anyway and relies on the server to recognise it (idem call, the relay's webhooks).
  kIdempotentOrKeyed,
};

struct SendOptions {
  SteadyTime deadline = SteadyTime::max();  // for acquiring, writing and reading everything
  Limits limits;
  Resend resend = Resend::kIdempotent;  // see Resend; at most one resend either way
};

struct SendResult {
  // The final response, or: the pool's errors (see ConnectionPool::AsyncAcquire), or
  // InterpretExchangeError's.
  absl::StatusOr<Response> response;
  // False when the request certainly did not reach the server (no connection, or not written),
  // so that even an unsafe request may be retried.
  bool request_sent = false;
  bool connection_reused = false;  // the final attempt used a kept-alive connection
  // On an error: the head of the final (non-1xx) answer had arrived before it (the server ran
  // the request; its body was too large, cut off or too slow).
  bool answer_head_received = false;
  // That head's status (0 when none arrived): a status URL's 200 whose body was too large still
  // says the effect happened.
  int answer_head_status = 0;
};

// Sends `request` through `pool`. Sets Host (from the pool's origin) when the request has none.
// Completes with (SendResult).
template <class Token>
auto AsyncSend(std::shared_ptr<ConnectionPool> pool, Request request, SendOptions options,
               Token&& token);

// ---------------------------------------------------------------------------------------------
// Implementation details below.
namespace detail {

class ExchangeOp {
 public:
  ExchangeOp(Stream& stream, const Request& request, const Limits& limits)
      : stream_(stream), request_(request), st_(std::make_unique<State>(limits)) {}

  template <class Self>
  void operator()(Self& self, boost::system::error_code ec = {}, std::size_t written = 0) {
    switch (st_->step) {
      case Step::kStart:
        st_->step = Step::kWrite;
        return boost::beast::http::async_write(stream_, request_, std::move(self));
      case Step::kWrite:
        st_->any_written = !ec || written > 0 || stream_.tls() != nullptr;
        if (ec == boost::asio::error::broken_pipe || ec == boost::asio::error::connection_reset) {
          // The server stopped reading and closed: it may have answered before the whole
          // request arrived (a 413 from the head alone). That answer is the outcome, if any.
          st_->write_cut = true;
          return Read(self);
        }
        if (ec) return Complete(self, ec);
        st_->written = true;
        return Read(self);
      case Step::kRead:
        if (ec) return Complete(self, ec);
        if (st_->parser->get().result_int() / 100 != 1) return Complete(self, ec);
        // 101 Switching Protocols is no interim answer: what follows it is another protocol,
        // which this client does not speak.
        if (st_->parser->get().result_int() == 101 || ++st_->interim > st_->limits.max_interim) {
          return Complete(self, boost::beast::http::error::bad_status);
        }
        return Read(self);  // an interim answer: the final one follows
    }
  }

 private:
  enum class Step { kStart, kWrite, kRead };
  struct State {
    explicit State(const Limits& l) : limits(l) {}
    Limits limits;
    Step step = Step::kStart;
    int interim = 0;
    bool written = false;
    bool any_written = false;  // see ExchangeReply::any_written
    bool write_cut = false;    // the server closed before the whole request was written
    boost::beast::flat_buffer buffer;
    std::optional<boost::beast::http::response_parser<boost::beast::http::string_body>> parser;
  };

  template <class Self>
  void Read(Self& self) {
    st_->step = Step::kRead;
    st_->parser.emplace();
    st_->parser->body_limit(st_->limits.max_body);
    st_->parser->header_limit(st_->limits.max_header);
    if (request_.method() == boost::beast::http::verb::head) st_->parser->skip(true);
    boost::beast::http::async_read(stream_, st_->buffer, *st_->parser, std::move(self));
  }

  template <class Self>
  void Complete(Self& self, boost::system::error_code ec) {
    ExchangeReply reply;
    reply.request_written = st_->written;
    reply.any_written = st_->any_written;
    reply.answer_started =
        st_->interim > 0 || st_->buffer.size() > 0 || (st_->parser && st_->parser->got_some());
    reply.head_received = st_->parser && st_->parser->is_header_done() &&
                          st_->parser->get().result_int() / 100 != 1;
    if (reply.head_received) reply.head_status = static_cast<int>(st_->parser->get().result_int());
    if (!ec) {
      reply.keep_alive = st_->parser->keep_alive() && request_.keep_alive() &&
                         st_->buffer.size() == 0 && !st_->write_cut;
      reply.response = st_->parser->release();
    }
    self.complete(ec, std::move(reply));
  }

  Stream& stream_;
  const Request& request_;
  std::unique_ptr<State> st_;
};

using SendDone = absl::AnyInvocable<void(SendResult)>;
// A send prepared by MakeSend does nothing until RunSend; CancelSend ends it with Cancelled.
std::shared_ptr<void> MakeSend(std::shared_ptr<ConnectionPool> pool, Request request,
                               SendOptions options, SendDone done);
void RunSend(const std::shared_ptr<void>& handle);
void CancelSend(const std::shared_ptr<void>& handle);

}  // namespace detail

template <class Token>
auto AsyncExchange(Stream& stream, const Request& request, const Limits& limits, Token&& token) {
  return boost::asio::async_compose<Token, void(boost::system::error_code, ExchangeReply)>(
      detail::ExchangeOp(stream, request, limits), token, stream.get_executor());
}

template <class Token>
auto AsyncSend(std::shared_ptr<ConnectionPool> pool, Request request, SendOptions options,
               Token&& token) {
  return boost::asio::async_initiate<Token, void(SendResult)>(
      [](auto handler, std::shared_ptr<ConnectionPool> p, Request r, SendOptions o) {
        auto ex = boost::asio::get_associated_executor(handler, p->get_executor());
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        std::shared_ptr<void> op = detail::MakeSend(
            std::move(p), std::move(r), o,
            [h = std::move(handler), ex, slot](SendResult result) mutable {
              boost::asio::post(ex, [h = std::move(h), slot, res = std::move(result)]() mutable {
                if (slot.is_connected()) slot.clear();
                std::move(h)(std::move(res));
              });
            });
        if (slot.is_connected()) {
          slot.assign([weak = std::weak_ptr<void>(op)](boost::asio::cancellation_type) {
            if (auto live = weak.lock()) detail::CancelSend(live);
          });
        }
        detail::RunSend(op);
      },
      token, std::move(pool), std::move(request), std::move(options));
}

}  // namespace idem::http

#endif  // IDEM_HTTP_EXCHANGE_H_

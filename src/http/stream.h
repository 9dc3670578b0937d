// Stream: one client connection's byte stream, either plain TCP (beast::tcp_stream) or TLS over
// TCP (beast::ssl_stream<beast::tcp_stream>). It models Asio's AsyncReadStream and
// AsyncWriteStream, so beast::http::async_read/async_write take it unchanged, and exposes the
// underlying tcp_stream for timeouts (tcp().expires_at) and closing.
//
// Thread-safety: like any Asio I/O object: one operation of each direction at a time, and no
// concurrent calls on one Stream; distinct Streams are independent.
#ifndef IDEM_HTTP_STREAM_H_
#define IDEM_HTTP_STREAM_H_

// GCC 12 at -O2 reports false "potential null pointer dereference" warnings inside Asio,
// which -Werror would turn into a failed release build.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/async_result.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#pragma GCC diagnostic pop
#include <utility>
#include <variant>

namespace idem::http {

// Not final: Asio's executor detection (used by Beast's composed operations) derives from it.
class Stream {
 public:
  using executor_type = boost::asio::any_io_executor;
  using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

  // A plain TCP stream, not yet connected.
  explicit Stream(executor_type ex) : s_(std::in_place_type<boost::beast::tcp_stream>, ex) {}
  // A TLS stream over TCP, not yet connected; `tls` must outlive the Stream.
  Stream(executor_type ex, boost::asio::ssl::context& tls)
      : s_(std::in_place_type<TlsStream>, ex, tls) {}
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  executor_type get_executor() noexcept { return tcp().get_executor(); }

  // The TCP layer: for connect, expires_at/expires_never, cancel, close and socket().
  boost::beast::tcp_stream& tcp() noexcept {
    if (auto* t = std::get_if<TlsStream>(&s_)) return t->next_layer();
    return std::get<boost::beast::tcp_stream>(s_);
  }
  // The TLS layer, or nullptr for a plain stream.
  TlsStream* tls() noexcept { return std::get_if<TlsStream>(&s_); }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& b) {
          std::visit([&](auto& s) { s.async_read_some(b, std::move(handler)); }, s_);
        },
        token, buffers);
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& b) {
          std::visit([&](auto& s) { s.async_write_some(b, std::move(handler)); }, s_);
        },
        token, buffers);
  }

  // Closes the socket at once (no TLS close_notify); pending operations complete with an error.
  void Close() noexcept {
    boost::system::error_code ignored;
    tcp().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    tcp().close();
  }

 private:
  std::variant<boost::beast::tcp_stream, TlsStream> s_;
};

}  // namespace idem::http

#endif  // IDEM_HTTP_STREAM_H_

// Stream: one connection's byte stream, either plain TCP (beast::tcp_stream) or TLS over
// TCP (beast::ssl_stream<beast::tcp_stream>). It models Asio's AsyncReadStream and
// AsyncWriteStream, so beast::http::async_read/async_write take it unchanged, and exposes the
// underlying tcp_stream for timeouts (tcp().expires_at) and closing.
//
// Thread-safety: like any Asio I/O object: one operation of each direction at a time, and no
// concurrent calls on one Stream; distinct Streams are independent.
//
// async_read_some/async_write_some hand the TCP and TLS layers a type-erased completion handler
// (Handler: the caller's executor and cancellation slot kept) through two functions compiled
// once in stream.cc: a read gets the first non-empty buffer of its sequence, a write at most
// kMaxBuffers buffers. Beast's composed HTTP operations therefore do not instantiate the TCP
// and TLS operations again for each calling operation in every file that reads or writes a
// Stream, which made those files the slowest of the build to compile (the TLS path alone was
// 40% of forward.cc's time). The cost is one small allocation per read or write. The gateway's
// client connections are Streams too, for the same reason.
#ifndef IDEM_HTTP_STREAM_H_
#define IDEM_HTTP_STREAM_H_

// GCC 12 at -O2 reports false "potential null pointer dereference" warnings inside Asio,
// which -Werror would turn into a failed release build.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#pragma GCC diagnostic pop
#include <array>
#include <cstddef>
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
  // A plain TCP stream over a connected socket (a server's accepted connection).
  explicit Stream(boost::asio::ip::tcp::socket socket)
      : s_(std::in_place_type<boost::beast::tcp_stream>, std::move(socket)) {}
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

  // The first non-empty buffer of a sequence, or an empty buffer when it has none (a read of
  // nothing then completes at once with 0 bytes, as for the whole sequence).
  template <class Sequence>
  static boost::asio::mutable_buffer FirstNonEmpty(const Sequence& sequence) {
    for (auto it = boost::asio::buffer_sequence_begin(sequence);
         it != boost::asio::buffer_sequence_end(sequence); ++it) {
      boost::asio::mutable_buffer b(*it);
      if (b.size() > 0) return b;
    }
    return {};
  }

  // The first kMaxBuffers buffers of a sequence (Asio's own limit for one scatter/gather system
  // call): a write "some" may transfer less than all of its buffers.
  static constexpr std::size_t kMaxBuffers = 64;
  template <class Buffer>
  class Buffers {
   public:
    template <class Sequence>
    explicit Buffers(const Sequence& sequence) {
      for (auto it = boost::asio::buffer_sequence_begin(sequence);
           it != boost::asio::buffer_sequence_end(sequence) && count_ < kMaxBuffers; ++it) {
        Buffer b(*it);
        if (b.size() > 0) buffers_[count_++] = b;
      }
    }
    const Buffer* begin() const noexcept { return buffers_.data(); }
    const Buffer* end() const noexcept { return buffers_.data() + count_; }

   private:
    std::array<Buffer, kMaxBuffers> buffers_{};
    std::size_t count_ = 0;
  };
  // A type-erased handler with the caller's executor as an any_io_executor (Boost 1.81's
  // any_completion_executor lacks what Beast's TCP stream requires of an executor) and the
  // caller's cancellation slot.
  class Handler {
   public:
    using executor_type = boost::asio::any_io_executor;
    using cancellation_slot_type = boost::asio::cancellation_slot;
    using Erased =
        boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;

    template <class H>
    Handler(H&& handler, const executor_type& fallback)
        : executor_(boost::asio::get_associated_executor(handler, fallback)),
          erased_(std::forward<H>(handler)) {}

    executor_type get_executor() const noexcept { return executor_; }
    cancellation_slot_type get_cancellation_slot() const noexcept {
      return erased_.get_cancellation_slot();
    }
    void operator()(boost::system::error_code ec, std::size_t n) { std::move(erased_)(ec, n); }

   private:
    executor_type executor_;
    Erased erased_;
  };

  // Reads into the first non-empty buffer of `buffers` only (a read "some" may fill less than
  // all of them; Beast's flat_buffer offers one anyway). A read waits for as long as the peer is
  // quiet, which for an idle keep-alive connection is most of its life, and the TCP layer keeps
  // two copies of the sequence it was given in the pending operation: a kMaxBuffers array
  // there cost ~1.7 KiB per idle connection (bench/RESULTS.md, memory rows).
  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& b) {
          ReadSome(FirstNonEmpty(b), Handler(std::move(handler), get_executor()));
        },
        token, buffers);
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& b) {
          WriteSome(Buffers<boost::asio::const_buffer>(b),
                    Handler(std::move(handler), get_executor()));
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
  void ReadSome(boost::asio::mutable_buffer buffer, Handler handler);
  void WriteSome(const Buffers<boost::asio::const_buffer>& buffers, Handler handler);

  std::variant<boost::beast::tcp_stream, TlsStream> s_;
};

}  // namespace idem::http

#endif  // IDEM_HTTP_STREAM_H_

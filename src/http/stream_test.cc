// Stream's reads over a real loopback connection: what a read of several buffers fills, and that
// Beast's HTTP reads over a Stream still see whole messages.
#include "http/stream.h"

#include <gtest/gtest.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/multi_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#pragma GCC diagnostic pop

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace idem::http {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;

// A connected pair on loopback: `peer` writes, `stream` (the accepted side) reads.
struct Connected {
  asio::io_context ioc;
  tcp::socket peer{ioc};
  std::optional<Stream> stream;

  Connected() {
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    peer.connect(acceptor.local_endpoint());
    stream.emplace(acceptor.accept());
  }
  void Send(std::string_view bytes) { asio::write(peer, asio::buffer(bytes)); }
};

struct ReadResult {
  bool done = false;
  boost::system::error_code ec;
  std::size_t n = 0;
};

// Reads once into `buffers` and runs until the read completes (at most 10 s).
template <class Buffers>
ReadResult ReadOnce(Connected& c, const Buffers& buffers) {
  ReadResult r;
  c.stream->async_read_some(buffers, [&r](boost::system::error_code ec, std::size_t n) {
    r = {.done = true, .ec = ec, .n = n};
  });
  c.ioc.restart();
  c.ioc.run_for(std::chrono::seconds(10));
  return r;
}

TEST(HttpStream, ReadFillsOnlyTheFirstNonEmptyBufferAndTheNextReadContinues) {
  Connected c;
  c.Send("abcdefgh");
  std::array<char, 3> first{};
  std::array<char, 10> second{};
  const std::array<asio::mutable_buffer, 3> buffers{asio::mutable_buffer(), asio::buffer(first),
                                                    asio::buffer(second)};

  const ReadResult r = ReadOnce(c, buffers);
  ASSERT_TRUE(r.done);
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.n, 3u);
  EXPECT_EQ(std::string_view(first.data(), 3), "abc");
  EXPECT_EQ(second, (std::array<char, 10>{}));  // untouched

  std::string rest;
  while (rest.size() < 5) {
    const ReadResult more = ReadOnce(c, asio::buffer(second));
    ASSERT_TRUE(more.done);
    ASSERT_FALSE(more.ec) << more.ec.message();
    rest.append(second.data(), more.n);
  }
  EXPECT_EQ(rest, "defgh");
}

TEST(HttpStream, ReadOfOnlyEmptyBuffersCompletesAtOnceWithNothing) {
  Connected c;  // the peer sends nothing: a read that waited would not complete
  const std::array<asio::mutable_buffer, 2> empty{};
  const ReadResult r = ReadOnce(c, empty);
  ASSERT_TRUE(r.done);
  EXPECT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.n, 0u);
}

TEST(HttpStream, BeastReadsAWholeRequestIntoABufferOfManyPieces) {
  Connected c;
  const std::string body(5000, 'x');
  c.Send("POST /charges HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n" + body);
  boost::beast::multi_buffer buffer(64 * 1024);  // hands reads a sequence of several buffers
  bhttp::request<bhttp::string_body> request;
  bool done = false;
  boost::system::error_code error;
  bhttp::async_read(*c.stream, buffer, request, [&](boost::system::error_code ec, std::size_t) {
    done = true;
    error = ec;
  });
  c.ioc.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(done);
  ASSERT_FALSE(error) << error.message();
  EXPECT_EQ(request.target(), "/charges");
  EXPECT_EQ(request.body(), body);
}

}  // namespace
}  // namespace idem::http

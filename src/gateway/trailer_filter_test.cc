#include "gateway/trailer_filter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace idem::gateway {
namespace {

// Parses `bytes`, one whole request, with a TrailerFilter watching; returns its fields after
// Drop as "name: value" in order.
std::vector<std::string> FieldsAfterDrop(const std::string& bytes) {
  http::request_parser<http::string_body> parser;
  TrailerFilter trailer;
  trailer.Watch(parser);
  beast::error_code ec;
  parser.eager(true);
  parser.put(asio::buffer(bytes), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(parser.is_done());
  trailer.Drop();
  std::vector<std::string> out;
  for (const auto& f : parser.get())
    out.push_back(std::string(f.name_string()) + ": " + std::string(f.value()));
  return out;
}

const std::string kHead =
    "POST /c HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer mine\r\nTransfer-Encoding: chunked\r\n"
    "\r\n";

TEST(TrailerFilter, DropsTheTrailersFieldsAndKeepsTheHeads) {
  const std::vector<std::string> head = {"Host: x", "Authorization: Bearer mine",
                                         "Transfer-Encoding: chunked"};
  EXPECT_EQ(FieldsAfterDrop(kHead + "2\r\n{}\r\n0\r\nX-Tenant: acme\r\n"
                                    "Authorization: Bearer forged\r\nauthorization: x\r\n\r\n"),
            head);
  EXPECT_EQ(FieldsAfterDrop(kHead + "0\r\nX-Tenant: acme\r\n\r\n"), head);
  EXPECT_EQ(FieldsAfterDrop(kHead + "2\r\n{}\r\n0\r\n\r\n"), head);
}

TEST(TrailerFilter, LeavesABodyWithoutChunksAlone) {
  EXPECT_EQ(FieldsAfterDrop("POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"),
            (std::vector<std::string>{"Host: x", "Content-Length: 2"}));
}

}  // namespace
}  // namespace idem::gateway

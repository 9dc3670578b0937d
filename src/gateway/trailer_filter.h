// Internal: keeps a chunked body's trailer fields (RFC 9112 §7.1.2) out of the message they end.
// Beast's parser adds them to the message's header fields as if the head had carried them: there
// they would choose the tenant or the key, and be forwarded as header fields, although a proxy in
// front of idem that checks the head never saw them (a trailer `Authorization` would reach the
// upstream as the request's credential). idem drops them: they are neither decided on nor
// forwarded, guarded or passed through, on requests and answers alike.
//
// Thread-safety: a TrailerFilter belongs to the coroutine reading its parser.
#ifndef IDEM_GATEWAY_TRAILER_FILTER_H_
#define IDEM_GATEWAY_TRAILER_FILTER_H_

#include <cstdint>
#include <vector>

#include "gateway/asio_includes.h"

namespace idem::gateway {

class TrailerFilter final {
 public:
  TrailerFilter() = default;
  TrailerFilter(const TrailerFilter&) = delete;
  TrailerFilter& operator=(const TrailerFilter&) = delete;

  // Watches the chunks `parser` reads, to note the head's fields when the last chunk begins.
  // REQUIRES: this filter outlives the parser's reads; `parser` is not moved after.
  template <bool isRequest, class Body>
  void Watch(http::parser<isRequest, Body>& parser) {
    fields_ = &static_cast<http::fields&>(parser.get());
    parser.on_chunk_header(*this);
  }

  // Removes from the watched message every field its trailer added; nothing when the body is not
  // chunked or its last chunk has not begun. Call before the message's header is written or read
  // for a decision.
  void Drop();

  // Called by the parser at each chunk's header; a size of 0 is the last chunk, whose trailer
  // fields the parser reads next.
  void operator()(std::uint64_t size, beast::string_view extensions, beast::error_code& ec);

 private:
  http::fields* fields_ = nullptr;
  std::vector<const void*> head_;  // the head's fields, when the last chunk began
  bool last_chunk_ = false;
};

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_TRAILER_FILTER_H_

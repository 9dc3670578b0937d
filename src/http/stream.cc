#include "http/stream.h"

namespace idem::http {

// The one place where the TCP and TLS layers' read and write operations are instantiated (for
// the type-erased handler; see stream.h).
void Stream::ReadSome(boost::asio::mutable_buffer buffer, Handler handler) {
  std::visit([&](auto& s) { s.async_read_some(buffer, std::move(handler)); }, s_);
}

void Stream::WriteSome(const Buffers<boost::asio::const_buffer>& buffers, Handler handler) {
  std::visit([&](auto& s) { s.async_write_some(buffers, std::move(handler)); }, s_);
}

}  // namespace idem::http

#include "http/stream.h"

namespace idem::http {

// The one place where the TCP and TLS layers' read and write operations are instantiated (for
// the type-erased handler; see stream.h).
void Stream::ReadSome(const Buffers<boost::asio::mutable_buffer>& buffers, Handler handler) {
  std::visit([&](auto& s) { s.async_read_some(buffers, std::move(handler)); }, s_);
}

void Stream::WriteSome(const Buffers<boost::asio::const_buffer>& buffers, Handler handler) {
  std::visit([&](auto& s) { s.async_write_some(buffers, std::move(handler)); }, s_);
}

}  // namespace idem::http

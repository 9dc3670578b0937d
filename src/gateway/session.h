// Internal: one client connection of `idem serve`: HTTP/1.1 requests read one after another
// (keep-alive) within the header and body timeouts, each guarded (DESIGN §3), refused, or relayed
// upstream untouched, and the answer written back.
//
// Thread-safety: runs on one io thread; `pool` belongs to that thread.
#ifndef IDEM_GATEWAY_SESSION_H_
#define IDEM_GATEWAY_SESSION_H_

#include "gateway/asio_includes.h"
#include "gateway/forward.h"
#include "gateway/gateway_context.h"

namespace idem::gateway {

// The client connections one io thread serves, so that a drain stops reading new requests on all
// of them at once: a connection waiting for its next request's head has that read cancelled and
// is closed (a request already read is still answered). An intrusive list: joining it costs a
// connection no allocation.
//
// Thread-safety: used only on its io thread.
class ClientConnections final {
 public:
  struct Entry {
    Entry* prev = nullptr;
    Entry* next = nullptr;
    idem::http::Stream* stream = nullptr;
    bool reading_head = false;  // waiting for (or reading) the head of its next request
  };
  ClientConnections() { end_.prev = end_.next = &end_; }
  ClientConnections(const ClientConnections&) = delete;
  ClientConnections& operator=(const ClientConnections&) = delete;

  void Add(Entry& entry);
  void Remove(Entry& entry);
  // Cancels the head read of every connection waiting for its next request.
  void StopReadingHeads();

 private:
  Entry end_;  // the list's sentinel
};

// Serves `socket` until the client closes it, a timeout passes, an error makes the connection
// unusable, or the gateway drains (ctx.draining, then connections.StopReadingHeads()).
// REQUIRES: `connections` belongs to this io thread and outlives the connection.
asio::awaitable<void> ServeConnection(GatewayContext& ctx, UpstreamPool& pool,
                                      ClientConnections& connections, tcp::socket socket);

// Writes `response`, then, unless `keep_alive`, shuts the connection down gently: the rest of the
// client's request is read and dropped for a short while so that the answer is not lost to a
// reset. Returns true when the connection may carry another request.
asio::awaitable<bool> Answer(idem::http::Stream& stream, StoredResponse response,
                             unsigned version, bool keep_alive, Millis timeout);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_SESSION_H_

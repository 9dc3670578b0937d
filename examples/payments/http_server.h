// A small HTTP/1.1 JSON server (Boost.Beast) for the payments example's two programs.
//
// One io thread accepts connections and reads and writes HTTP; it never touches the database.
// Each request is handed to a pool of worker threads, where the handler runs (and blocks on the
// store as long as it needs); the connection's coroutine waits for the reply without holding the
// io thread, then writes it. A handler that throws answers 500; no exception leaves a thread.
//
// Thread-safety: the handler is called from several worker threads at once.
#ifndef IDEM_EXAMPLES_PAYMENTS_HTTP_SERVER_H_
#define IDEM_EXAMPLES_PAYMENTS_HTTP_SERVER_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "problem.h"

namespace idem::payments {

using Handler = std::function<Reply(const Request&)>;

struct ServerOptions {
  std::string listen;                // HOST:PORT (an IP address; [::1]:PORT for IPv6)
  std::string name;                  // for log lines, e.g. "idem-payments"
  int workers = 8;                   // threads running the handler (the store's connections: 8)
  std::size_t max_body = 64 * 1024;  // a larger body is answered 413
};

// Serves `handler` on options.listen until SIGTERM or SIGINT, then returns OK after the requests
// under way are answered. Errors: InvalidArgument for a malformed address; Unavailable when it
// cannot listen there.
absl::Status Serve(const ServerOptions& options, const Handler& handler);

}  // namespace idem::payments

#endif  // IDEM_EXAMPLES_PAYMENTS_HTTP_SERVER_H_

// One HTTP/1.1 exchange for `idem call`: resolve, connect, send, read the whole answer, all
// bounded by one timeout so that nothing (a silent DNS server, a response that never ends) can
// hold the program past it. Plain http:// only.
//
// Thread-safety: SendHttp uses its own io_context; calls on different threads are independent.
#ifndef IDEM_CLI_CALL_HTTP_H_
#define IDEM_CLI_CALL_HTTP_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/retry/retry_policy.h"

namespace idem::cli {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpTarget {
  std::string host;       // name or address, without brackets
  std::string port;       // "80" when the URL names none
  std::string target;     // path and query, "/" at least
  std::string authority;  // for the Host header: host[:port] as written in the URL
};

// Returns the parts of an http:// URL, or InvalidArgument: not a URL, another scheme (https is
// named as unsupported), no host, user info, or a fragment-only quirk.
absl::StatusOr<HttpTarget> ParseHttpUrl(const std::string& url);

struct HttpRequest {
  std::string method;
  HttpTarget target;
  HeaderList headers;  // sent as given, after Host, User-Agent and Connection
  std::string body;
  bool has_body = false;
};

struct HttpResponse {
  int status = 0;
  std::string reason;
  HeaderList headers;
  std::string body;

  // Returns the first value of header `name` (any case), or nullptr.
  const std::string* Find(std::string_view name) const;
};

struct HttpExchange {
  retry::AttemptResult::Kind kind = retry::AttemptResult::Kind::kBroken;
  HttpResponse response;  // meaningful when kind is kResponse
  std::string error;      // what went wrong otherwise, for a person
};

// Sends `request` and reads the answer, giving up after `timeout` (0 = no limit).
// Never throws; every failure is reported in the result.
HttpExchange SendHttp(const HttpRequest& request, Millis timeout);

}  // namespace idem::cli

#endif  // IDEM_CLI_CALL_HTTP_H_

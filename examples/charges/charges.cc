// charges: a small, deliberately naive payments API to put `idem serve` in front of. Every POST
// creates a new charge, so a retried POST charges twice; behind idem serve it charges once.
//
//   POST /charges              creates a charge: 201 {"id":"ch_N",...}, Location /charges/ch_N,
//                              X-Charge-Id ch_N (any POST path but /release/ does the same)
//   GET  /stats                {"calls":C,"charges":N,"held":H,"keys":[...],"charge_keys":[...]}:
//                              POSTs received, charges created, requests held now, each POST's
//                              Idempotency-Key, and each charge's (ch_N's is the Nth)
//   POST /release/NAME         answers every request held under NAME
//   GET  /charges/by-key/KEY   200 with the charge made under Idempotency-Key KEY (percent-
//                              encoded), 404 when none was: a status URL for idem serve's
//                              `recover = "status"`
//
// With --dedupe-keys, a POST whose Idempotency-Key already made a charge answers that charge again
// (201, same body) and makes none: an upstream that deduplicates by key, for `recover = "resend"`.
//
// Knobs a test or a curious person sends as request headers on a POST:
//   X-Charges-Delay-Ms: N      answer after N milliseconds
//   X-Charges-Status: S        answer status S instead of creating a charge (e.g. 503)
//   X-Charges-Hold: NAME       answer only once POST /release/NAME arrives
//   X-Charges-Break: close     send the head and part of the body of an answer, then close
//   X-Charges-Break: garbage   answer bytes that are not HTTP, then close
//                              (both count as a call and create no charge)
//
// Usage: charges [--listen 127.0.0.1:9000] [--dedupe-keys]. One thread; stops on SIGTERM or
// SIGINT.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#pragma GCC diagnostic pop

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

struct Ledger {
  int64_t calls = 0;
  int64_t charges = 0;
  int64_t held = 0;
  json::array keys;
  json::array charge_keys;  // the Idempotency-Key of each charge, in the order they were created
  std::map<std::string, std::vector<std::shared_ptr<asio::steady_timer>>> holds;
  bool dedupe_keys = false;
  std::map<std::string, Response> by_key;  // the answer of each key's charge
};

Response Json(const Request& req, http::status status, const json::value& body) {
  Response res{status, req.version()};
  res.set(http::field::content_type, "application/json");
  res.body() = json::serialize(body);
  return res;
}

std::string HeaderOr(const Request& req, std::string_view name, std::string fallback) {
  auto it = req.find(name);
  return it == req.end() ? fallback : std::string(it->value());
}

// Waits as the knobs say before a POST is answered.
asio::awaitable<void> Delay(Ledger& ledger, const Request& req) {
  auto executor = co_await asio::this_coro::executor;
  const std::string hold = HeaderOr(req, "X-Charges-Hold", "");
  if (!hold.empty()) {
    auto timer =
        std::make_shared<asio::steady_timer>(executor, asio::steady_timer::time_point::max());
    ledger.holds[hold].push_back(timer);
    ++ledger.held;
    co_await timer->async_wait(kTuple);
    --ledger.held;
  }
  const long delay_ms = std::atol(HeaderOr(req, "X-Charges-Delay-Ms", "0").c_str());
  if (delay_ms > 0) {
    asio::steady_timer timer(executor, std::chrono::milliseconds(delay_ms));
    co_await timer.async_wait(kTuple);
  }
}

// The key a request carries, without the quotes of a Structured Fields string.
std::string KeyOf(const Request& req) {
  std::string key = HeaderOr(req, "Idempotency-Key", "");
  if (key.size() >= 2 && key.front() == '"' && key.back() == '"')
    key = key.substr(1, key.size() - 2);
  return key;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 && HexDigit(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// The charge already made under the request's key, when keys are deduplicated.
std::optional<Response> Charged(const Ledger& ledger, const Request& req) {
  if (!ledger.dedupe_keys) return std::nullopt;
  auto it = ledger.by_key.find(KeyOf(req));
  if (KeyOf(req).empty() || it == ledger.by_key.end()) return std::nullopt;
  Response res = it->second;
  res.version(req.version());
  return res;
}

asio::awaitable<Response> Handle(Ledger& ledger, const Request& req) {
  const std::string target(req.target());
  if (req.method() == http::verb::get && target.rfind("/charges/by-key/", 0) == 0) {
    auto it = ledger.by_key.find(PercentDecode(target.substr(16)));
    if (it == ledger.by_key.end())
      co_return Json(req, http::status::not_found, {{"error", "no charge under this key"}});
    Response res = it->second;
    res.result(http::status::ok);
    res.version(req.version());
    co_return res;
  }
  if (req.method() == http::verb::get && target == "/stats") {
    co_return Json(req, http::status::ok,
                   {{"calls", ledger.calls},
                    {"charges", ledger.charges},
                    {"held", ledger.held},
                    {"keys", ledger.keys},
                    {"charge_keys", ledger.charge_keys}});
  }
  if (req.method() == http::verb::post && target.rfind("/release/", 0) == 0) {
    auto it = ledger.holds.find(target.substr(9));
    size_t released = 0;
    if (it != ledger.holds.end()) {
      for (auto& timer : it->second) timer->cancel();
      released = it->second.size();
      ledger.holds.erase(it);
    }
    co_return Json(req, http::status::ok, {{"released", released}});
  }
  if (req.method() != http::verb::post)
    co_return Json(req, http::status::not_found, {{"error", "POST /charges, GET /stats"}});
  ++ledger.calls;
  ledger.keys.emplace_back(HeaderOr(req, "Idempotency-Key", ""));
  co_await Delay(ledger, req);  // the knobs apply to a repeated key too
  if (std::optional<Response> again = Charged(ledger, req)) co_return *std::move(again);
  if (!HeaderOr(req, "X-Charges-Break", "").empty()) co_return Response{};  // Serve breaks it
  const int status = std::atoi(HeaderOr(req, "X-Charges-Status", "0").c_str());
  if (status >= 100 && status <= 599)
    co_return Json(req, static_cast<http::status>(status), {{"error", "as asked"}});
  const int64_t n = ++ledger.charges;
  ledger.charge_keys.emplace_back(HeaderOr(req, "Idempotency-Key", ""));
  Response res = Json(
      req, http::status::created,
      {{"id", "ch_" + std::to_string(n)}, {"charge", n}, {"request_bytes", req.body().size()}});
  res.set(http::field::location, "/charges/ch_" + std::to_string(n));
  res.set("X-Charge-Id", "ch_" + std::to_string(n));
  if (const std::string key = KeyOf(req); !key.empty()) ledger.by_key.emplace(key, res);
  co_return res;
}

// Sends a broken answer as X-Charges-Break asks (the caller closes the connection after it).
asio::awaitable<void> Break(beast::tcp_stream& stream, const std::string& how) {
  const std::string bytes = how == "garbage"
                                ? std::string("this is not HTTP at all\r\n\r\n")
                                : std::string(
                                      "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                                      "Content-Length: 100\r\n\r\n{\"id\":\"ch_");
  co_await asio::async_write(stream, asio::buffer(bytes), kTuple);
}

asio::awaitable<void> Serve(Ledger& ledger, tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    Request req;
    auto [ec, n] = co_await http::async_read(stream, buffer, req, kTuple);
    if (ec) break;
    Response res = co_await Handle(ledger, req);
    const std::string broken = HeaderOr(req, "X-Charges-Break", "");
    if (!broken.empty() && req.method() == http::verb::post) {
      co_await Break(stream, broken);
      break;
    }
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    auto [wec, wn] = co_await http::async_write(stream, res, kTuple);
    if (wec || !req.keep_alive()) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

asio::awaitable<void> Accept(Ledger& ledger, tcp::acceptor& acceptor) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kTuple);
    if (ec) co_return;
    asio::co_spawn(acceptor.get_executor(), Serve(ledger, std::move(socket)), asio::detached);
  }
}

int Run(const std::string& listen, bool dedupe_keys) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "charges: --listen wants HOST:PORT, got '%s'\n", listen.c_str());
    return 2;
  }
  asio::io_context ioc{1};
  beast::error_code ec;
  const auto address = asio::ip::make_address(listen.substr(0, colon), ec);
  tcp::acceptor acceptor(ioc);
  const tcp::endpoint endpoint(address,
                               static_cast<unsigned short>(std::atoi(listen.c_str() + colon + 1)));
  if (!ec) acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::fprintf(stderr, "charges: cannot listen on %s: %s\n", listen.c_str(),
                 ec.message().c_str());
    return 1;
  }
  Ledger ledger;
  ledger.dedupe_keys = dedupe_keys;
  asio::signal_set signals(ioc, SIGTERM, SIGINT);
  signals.async_wait([&](auto, int) { ioc.stop(); });
  asio::co_spawn(ioc, Accept(ledger, acceptor), asio::detached);
  std::fprintf(stderr, "charges: listening on %s\n", listen.c_str());
  ioc.run();
  return 0;
}

}  // namespace

constexpr const char* kUsage = R"(usage: charges [--listen HOST:PORT] [--dedupe-keys]
                                  (default 127.0.0.1:9000)

A deliberately naive payments API: every POST creates a new charge.
  POST /charges          201 {"id":"ch_N",...}, Location and X-Charge-Id headers
  GET  /charges/by-key/K 200 with the charge made under Idempotency-Key K, else 404
  --dedupe-keys          a POST whose key made a charge answers it again, making none
  GET  /stats            {"calls":C,"charges":N,"held":H,"keys":[each POST's Idempotency-Key],
                          "charge_keys":[each charge's Idempotency-Key: ch_N's is the Nth]}
  POST /release/NAME     answers the requests held under NAME
Request headers that change a POST's answer:
  X-Charges-Delay-Ms: N       answer after N milliseconds
  X-Charges-Status: S         answer status S instead of creating a charge
  X-Charges-Hold: NAME        answer only once POST /release/NAME arrives
  X-Charges-Break: close      send part of an answer, then close the connection
  X-Charges-Break: garbage    answer bytes that are not HTTP, then close
)";

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:9000";
  bool dedupe_keys = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--listen" && i + 1 < argc) {
      listen = argv[++i];
    } else if (arg == "--dedupe-keys") {
      dedupe_keys = true;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fputs(kUsage, stderr);
      return 2;
    }
  }
  try {
    return Run(listen, dedupe_keys);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "charges: %s\n", e.what());
    return 1;
  }
}

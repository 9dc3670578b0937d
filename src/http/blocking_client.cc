#include "http/blocking_client.h"

#include <fmt/format.h>

#include <exception>
#include <optional>

#include "absl/status/status.h"

namespace idem::http {

absl::StatusOr<std::unique_ptr<BlockingClient>> BlockingClient::Create(
    BlockingClientOptions options) {
  // Check an extra CA file now (a usage error belongs at the start), but load the system store
  // only when an https URL needs it: parsing it costs more than a plain http exchange.
  if (!options.tls.ca_file.empty()) {
    TlsOptions only_file = options.tls;
    only_file.system_store = false;
    absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> checked =
        MakeClientTlsContext(only_file);
    if (!checked.ok()) return checked.status();
  }
  return std::unique_ptr<BlockingClient>(new BlockingClient(std::move(options)));
}

BlockingClient::~BlockingClient() {
  for (auto& [name, pool] : pools_) pool->Shutdown();
}

absl::StatusOr<std::shared_ptr<ConnectionPool>> BlockingClient::PoolFor(const Origin& origin) {
  const std::string name = origin.ToString();
  if (auto it = pools_.find(name); it != pools_.end()) return it->second;
  if (origin.tls() && options_.pool.tls == nullptr) {
    absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> tls =
        MakeClientTlsContext(options_.tls);
    if (!tls.ok()) return tls.status();
    options_.pool.tls = std::move(*tls);
  }
  // Send runs the io_context on its caller's thread, one Send at a time.
  options_.pool.single_threaded = true;
  absl::StatusOr<std::shared_ptr<ConnectionPool>> pool =
      ConnectionPool::Create(ioc_.get_executor(), origin, options_.pool);
  if (pool.ok()) pools_.emplace(name, *pool);
  return pool;
}

SendResult BlockingClient::Send(const Url& url, Request request, const SendOptions& options) {
  SendResult failed;
  try {
    absl::StatusOr<std::shared_ptr<ConnectionPool>> pool = PoolFor(url.origin);
    if (!pool.ok()) {
      failed.response = pool.status();
      return failed;
    }
    std::optional<SendResult> result;
    AsyncSend(*pool, std::move(request), options,
              [&result](SendResult r) { result = std::move(r); });
    // run_one, not run: an idle connection's timer would keep run() waiting.
    ioc_.restart();
    while (!result && ioc_.run_one() > 0) {
    }
    if (result) return std::move(*result);
    failed.response = absl::InternalError("the HTTP exchange ended without a result");
  } catch (const std::exception& e) {
    failed.response = absl::InternalError(fmt::format("HTTP exchange failed: {}", e.what()));
  }
  return failed;
}

}  // namespace idem::http

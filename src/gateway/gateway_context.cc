#include "gateway/gateway_context.h"

#include <utility>

namespace idem::gateway {

asio::awaitable<KeyOpResult> AwaitKeyOp(GatewayContext& ctx, KeyOp op) {
  const auto start = std::chrono::steady_clock::now();
  const bool write = op.kind != KeyOp::Kind::kGet;
  auto executor = co_await asio::this_coro::executor;
  KeyOpResult result =
      co_await asio::async_initiate<decltype(asio::use_awaitable), void(KeyOpResult)>(
          [&ctx, executor](auto handler, KeyOp pending) {
            ctx.keys.Submit(
                std::move(pending), executor,
                [h = std::move(handler)](KeyOpResult r) mutable { std::move(h)(std::move(r)); });
          },
          asio::use_awaitable, std::move(op));
  ctx.metrics.store_seconds.Observe(std::chrono::steady_clock::now() - start);
  if (write) NoteStoreStatus(ctx, result.status);
  co_return result;
}

}  // namespace idem::gateway

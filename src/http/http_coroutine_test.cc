// The asynchronous client from C++20 coroutines (boost::asio::use_awaitable), the way the
// gateway's upstream side uses it: concurrent sends through one bounded pool.
#include <gtest/gtest.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#pragma GCC diagnostic pop
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "http/exchange.h"
#include "http/test_server.h"

namespace idem::http {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using testing::ScriptedReply;
using testing::ScriptedServer;
using testing::SeenRequest;

Request Post(const std::string& target, const std::string& key) {
  Request r{bhttp::verb::post, target, 11};
  r.set("Idempotency-Key", key);
  r.body() = "{}";
  r.prepare_payload();
  return r;
}

// Sends request `i`; the last one to finish shuts the pool down, which ends ioc.run().
asio::awaitable<void> SendOne(std::shared_ptr<ConnectionPool> pool, int i,
                              std::vector<int>& statuses, int& finished) {
  SendOptions options;
  options.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  SendResult r = co_await AsyncSend(pool, Post("/charge", "k" + std::to_string(i)), options,
                                    asio::use_awaitable);
  statuses[i] = r.response.ok() ? static_cast<int>(r.response->result_int()) : -1;
  if (++finished == static_cast<int>(statuses.size())) pool->Shutdown();
}

// 20 sends at once through a pool of 3 connections on one io_context thread.
void ExpectConcurrentSendsWithinThePoolBound(bool single_threaded) {
  ScriptedServer server([](const SeenRequest& s) {
    return ScriptedReply{"HTTP/1.1 103 Early Hints\r\n\r\n" +
                         fmt::format("HTTP/1.1 201 Created\r\nContent-Length: {}\r\n\r\n{}",
                                     s.idempotency_key.size(), s.idempotency_key)};
  });
  asio::io_context ioc;
  auto pool = *ConnectionPool::Create(ioc.get_executor(), ParseUrl(server.Url("/"))->origin,
                                      PoolOptions{.max_open = 3, .max_idle = 3, .single_threaded = single_threaded});
  std::vector<int> statuses(20, 0);
  int finished = 0;
  for (int i = 0; i < 20; ++i) {
    asio::co_spawn(ioc, SendOne(pool, i, statuses, finished), asio::detached);
  }
  ioc.run_for(std::chrono::seconds(20));
  for (int s : statuses) EXPECT_EQ(s, 201);
  EXPECT_EQ(server.requests().size(), 20u);
  EXPECT_LE(server.max_concurrent(), 3);
  EXPECT_LE(pool->stats().open, 3u);
}

TEST(HttpCoroutines, ConcurrentSendsAwaitTheirOwnAnswersWithinThePoolBound) {
  ExpectConcurrentSendsWithinThePoolBound(/*single_threaded=*/false);
}

// Without strands: every send and connection runs on the io_context's executor itself.
TEST(HttpCoroutines, SingleThreadedPoolServesConcurrentSendsWithinItsBound) {
  ExpectConcurrentSendsWithinThePoolBound(/*single_threaded=*/true);
}

asio::awaitable<void> AcquireTwice(std::shared_ptr<ConnectionPool> pool, bool& reused) {
  const SteadyTime deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  AcquireResult first = co_await pool->AsyncAcquire(deadline, asio::use_awaitable);
  if (!first.ok()) co_return;
  first->Release(true);
  AcquireResult second = co_await pool->AsyncAcquire(deadline, asio::use_awaitable);
  reused = second.ok() && second->reused();
  pool->Shutdown();
}

TEST(HttpCoroutines, ReleasedConnectionIsReusedByTheNextAcquire) {
  ScriptedServer server([](const SeenRequest&) { return ScriptedReply{testing::Ok("ok")}; });
  asio::io_context ioc;
  auto pool = *ConnectionPool::Create(ioc.get_executor(), ParseUrl(server.Url("/"))->origin, {});
  bool reused = false;
  asio::co_spawn(ioc, AcquireTwice(pool, reused), asio::detached);
  ioc.run_for(std::chrono::seconds(10));
  EXPECT_TRUE(reused);
  EXPECT_EQ(pool->stats().created, 1u);
}

}  // namespace
}  // namespace idem::http

// The fixture of `idem relay`'s end-to-end tests: a store (SQLite in a fresh folder, or with
// IDEM_E2E_STORE=postgres a fresh schema on the "postgres" CTest fixture's server) filled through
// the library, a real HTTP receiver (ScriptedServer) that records when each request arrived, and
// the arguments that point the real idem binary at both.
#ifndef IDEM_TESTS_RELAY_RELAY_FIXTURE_H_
#define IDEM_TESTS_RELAY_RELAY_FIXTURE_H_

#include <gtest/gtest.h>
#include <strings.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "e2e_store.h"
#include "http/test_server.h"
#include "idem/outbox.h"
#include "idem/outbox_admin.h"
#include "idem/store.h"
#ifdef IDEM_TEST_WITH_POSTGRES
#include "pg_test_support.h"
#endif

namespace idem::testing {

using http::testing::ScriptedReply;
using http::testing::SeenRequest;

inline constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

inline std::string Header(const SeenRequest& r, const std::string& name) {
  for (const auto& [n, v] : r.headers) {
    if (strcasecmp(n.c_str(), name.c_str()) == 0) return v;
  }
  return "";
}

class RelayE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<E2eStore> on = E2eStoreFromEnvironment();
    ASSERT_TRUE(on.ok()) << on.status();
    on_ = *on;
    ASSERT_NO_FATAL_FAILURE(ChooseUri());
    auto store = OpenStore(uri_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    server_ = std::make_unique<http::testing::ScriptedServer>([this](const SeenRequest& r) {
      std::unique_lock<std::mutex> lock(mu_);
      ++seen_;
      seen_at_.push_back(std::chrono::steady_clock::now());
      cv_.notify_all();
      return answer_ ? answer_(r) : ScriptedReply{http::testing::Ok("{}")};
    });
  }
  // uri_: a fresh schema on the "postgres" fixture's server, or a file in a fresh folder (dir_).
  void ChooseUri() {
    if (on_ == E2eStore::kPostgres) {
#ifdef IDEM_TEST_WITH_POSTGRES
      auto fresh = pgtest::CreateFreshSchemaUri();
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      uri_ = fresh->uri;
#else
      FAIL() << "IDEM_E2E_STORE=postgres, but this test binary was built without PostgreSQL";
#endif
      return;
    }
    ASSERT_EQ(on_, E2eStore::kSqlite) << "no outbox on " << E2eStoreName(on_);
    dir_ = std::filesystem::temp_directory_path() /
           ("idem-relay-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    uri_ = "sqlite:" + (dir_ / "outbox.db").string();
  }

  void TearDown() override {
    server_.reset();
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Adds (aggregate, payload) messages in one committed transaction; returns their ids.
  std::vector<std::string> Add(const std::vector<std::pair<std::string, std::string>>& messages) {
    std::vector<std::string> ids;
    auto tx = store_->Begin();
    EXPECT_TRUE(tx.ok()) << tx.status();
    for (const auto& [aggregate, payload] : messages) {
      auto id = AddOutboxMessage(**tx, {.topic = "order.created",
                                        .aggregate_key = aggregate,
                                        .headers = {{"x-tenant", "acme"}},
                                        .payload = payload});
      EXPECT_TRUE(id.ok()) << id.status();
      ids.push_back(id.ok() ? *id : "");
    }
    EXPECT_TRUE((*tx)->Commit().ok());
    return ids;
  }

  std::vector<std::string> RelayArgs(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"relay",
                                     "--store",
                                     uri_,
                                     "--sink",
                                     "http",
                                     "--url",
                                     server_->Url("/hooks"),
                                     "--secret",
                                     kSecret,
                                     "--backoff-base",
                                     "0s"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  void SetAnswer(std::function<ScriptedReply(const SeenRequest&)> answer) {
    std::lock_guard<std::mutex> lock(mu_);
    answer_ = std::move(answer);
  }
  void WaitForRequests(int n) { ASSERT_TRUE(SeenWithin(n, std::chrono::seconds(60))); }
  // true once `n` requests arrived, false if they did not within `limit`.
  bool SeenWithin(int n, std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return seen_ >= n; });
  }
  std::chrono::steady_clock::time_point SeenAt(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_at_.at(n - 1);
  }

  OutboxState StateOf(const std::string& id) {
    auto m = GetOutboxMessage(*store_, id);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? m->state : OutboxState::kPending;
  }

  E2eStore on_ = E2eStore::kSqlite;
  std::filesystem::path dir_;
  std::string uri_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<http::testing::ScriptedServer> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  int seen_ = 0;
  std::vector<std::chrono::steady_clock::time_point> seen_at_;
  std::function<ScriptedReply(const SeenRequest&)> answer_;
};

}  // namespace idem::testing

#endif  // IDEM_TESTS_RELAY_RELAY_FIXTURE_H_

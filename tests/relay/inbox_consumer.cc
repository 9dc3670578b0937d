#include "inbox_consumer.h"

#include <gtest/gtest.h>
#include <strings.h>

#include "idem/inbox.h"

namespace idem::testing {
namespace {

std::string HeaderOf(const http::testing::SeenRequest& r, const char* name) {
  for (const auto& [n, v] : r.headers) {
    if (strcasecmp(n.c_str(), name) == 0) return v;
  }
  return "";
}

int64_t CountOf(Store& store, std::string_view sql) {
  auto tx = store.Begin();
  if (!tx.ok()) return -1;
  auto rows = (*tx)->Query(sql);
  if (!rows.ok() || rows->size() != 1 || rows->front().size() != 1) return -1;
  const int64_t* n = std::get_if<int64_t>(&rows->front().front());
  return n != nullptr ? *n : -1;
}

}  // namespace

InboxConsumer::InboxConsumer(const std::string& path) {
  auto store = OpenStore("sqlite:" + path + "?synchronous=normal");
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return;
  auto tx = (*store)->Begin();
  EXPECT_TRUE(tx.ok()) << tx.status();
  if (!tx.ok()) return;
  absl::Status made = (*tx)
                          ->Execute(
                              "CREATE TABLE consumer_effects (id TEXT NOT NULL, aggregate TEXT "
                              "NOT NULL, n INTEGER NOT NULL)")
                          .status();
  if (made.ok()) made = (*tx)->Commit();
  EXPECT_TRUE(made.ok()) << made;
  if (made.ok()) store_ = std::move(*store);  // a consumer without a store refuses deliveries
}

http::testing::ScriptedReply InboxConsumer::Receive(const http::testing::SeenRequest& request) {
  const std::string id = HeaderOf(request, "webhook-id");
  const size_t slash = request.body.rfind('/');
  std::unique_lock<std::mutex> lock(mu_);
  if (store_ == nullptr || id.empty() || slash == std::string::npos) {
    problems_.push_back("bad delivery: " + request.body);
    return {http::testing::Ok("{}")};
  }
  const std::string aggregate = request.body.substr(0, slash);
  const int64_t n = std::stoll(request.body.substr(slash + 1));
  auto failed = [&](const absl::Status& status) {
    problems_.push_back("consumer store: " + status.ToString());
    return http::testing::ScriptedReply{
        "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"};
  };
  auto tx = store_->Begin();
  if (!tx.ok()) return failed(tx.status());
  auto first = ConsumeOnce(**tx, "relay-scale-test", id);
  if (!first.ok()) return failed(first.status());
  if (*first) {
    const SqlValue params[] = {id, aggregate, n};
    auto effect = (*tx)->Execute(
        "INSERT INTO consumer_effects (id, aggregate, n) VALUES ($1, $2, $3)", params);
    if (!effect.ok()) return failed(effect.status());
  }
  if (absl::Status committed = (*tx)->Commit(); !committed.ok()) return failed(committed);
  if (!*first) {
    ++redelivered_;
  } else {
    int64_t& last = last_n_[aggregate];
    if (n != last + 1) {
      problems_.push_back(aggregate + ": applied " + std::to_string(n) + " after " +
                          std::to_string(last));
    }
    last = n;
    ++applied_;
    cv_.notify_all();
  }
  return {http::testing::Ok("{}")};
}

bool InboxConsumer::WaitApplied(int64_t n, std::chrono::seconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, limit, [&] { return applied_ >= n; });
}

int64_t InboxConsumer::applied() const {
  std::lock_guard<std::mutex> lock(mu_);
  return applied_;
}

int64_t InboxConsumer::redelivered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return redelivered_;
}

std::vector<std::string> InboxConsumer::problems() const {
  std::lock_guard<std::mutex> lock(mu_);
  return problems_;
}

int64_t InboxConsumer::EffectRows() {
  std::lock_guard<std::mutex> lock(mu_);
  return CountOf(*store_, "SELECT count(*) FROM consumer_effects");
}

int64_t InboxConsumer::DistinctEffectIds() {
  std::lock_guard<std::mutex> lock(mu_);
  return CountOf(*store_, "SELECT count(DISTINCT id) FROM consumer_effects");
}

}  // namespace idem::testing

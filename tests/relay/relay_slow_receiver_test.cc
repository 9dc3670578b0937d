// `idem relay` against a slow receiver, end to end: the real binary, a receiver that takes 250 ms
// per webhook, batches that run out of lease before they are published whole, a retry due at
// once, and (PostgreSQL) a second relay taking over from a relay paused with SIGSTOP. Every
// message must be delivered, in order per aggregate, in bounded time: on PostgreSQL a relay
// claiming its next batch ahead used to stall for ever here (issue 23, item 7).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e_support.h"
#include "relay_fixture.h"
#include "relay_process.h"
namespace idem::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

class RelaySlowReceiver : public RelayE2e {
 protected:
  // Each webhook takes `delay` and is answered 200, except the `fail_first` first ones: 503 with
  // Retry-After: 0. Records every delivery's arrival, id and target.
  void SlowReceiver(milliseconds delay, int fail_first = 0) {
    SetAnswer([this, delay, fail_first](const SeenRequest& r) {  // runs under mu_
      at_.push_back(steady_clock::now());
      std::this_thread::sleep_for(delay);  // the receiver's own work, not a synchronisation
      ids_.push_back(Header(r, "webhook-id"));
      targets_.push_back(r.target);
      if (static_cast<int>(ids_.size()) <= fail_first) {
        return ScriptedReply{
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 4\r\n\r\ndown"};
      }
      return ScriptedReply{http::testing::Ok("{}")};
    });
  }

  // `per_aggregate` messages for each of `aggregates` aggregates, committed in rounds (the first
  // message of every aggregate, then the second of each, ...), as an application would.
  std::vector<std::string> AddRounds(int aggregates, int per_aggregate) {
    std::vector<std::pair<std::string, std::string>> messages;
    for (int n = 0; n < per_aggregate; ++n) {
      for (int a = 0; a < aggregates; ++a) {
        messages.push_back({"agg-" + std::to_string(a), "{\"n\":" + std::to_string(n) + "}"});
      }
    }
    const std::vector<std::string> ids = Add(messages);
    for (size_t i = 0; i < ids.size(); ++i) aggregate_of_[ids[i]] = messages[i].first;
    order_ = ids;
    return ids;
  }

  // true once every id of `ids` was delivered at least once, false if not within `limit`.
  bool AllDeliveredWithin(const std::vector<std::string>& ids, std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] {
      const std::set<std::string> seen(ids_.begin(), ids_.end());
      for (const std::string& id : ids) {
        if (!seen.contains(id)) return false;
      }
      return true;
    });
  }
  int Distinct() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(std::set<std::string>(ids_.begin(), ids_.end()).size());
  }

  // Within each aggregate, a message is first delivered only after every earlier one was (a
  // redelivery of a message already delivered is at least once, and allowed).
  void ExpectFirstDeliveriesInOrderPerAggregate() {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, std::vector<std::string>> got, expected;
    std::set<std::string> seen;
    for (const std::string& id : ids_) {
      if (seen.insert(id).second) got[aggregate_of_[id]].push_back(id);
    }
    for (const std::string& id : order_) expected[aggregate_of_[id]].push_back(id);
    EXPECT_EQ(got, expected);
  }

  void ExpectAllSent(const std::vector<std::string>& ids) {
    EXPECT_TRUE(e2e::Eventually([&] {
      for (const std::string& id : ids) {
        if (StateOf(id) != OutboxState::kSent) return false;
      }
      return true;
    }));
  }

  // Guarded by mu_ (the receiver's answer runs under it).
  std::vector<std::string> ids_, targets_;
  std::vector<steady_clock::time_point> at_;
  std::map<std::string, std::string> aggregate_of_;
  std::vector<std::string> order_;
};

using RelaySlowReceiverOnPostgres = OnlyOn<RelaySlowReceiver, E2eStore::kPostgres>;

// The run (150 messages over 50 aggregates, 250 ms per webhook, every flag at its
// default: a batch's 20 s publishing budget ends after 80 messages) scaled down with the same
// shape: 15 messages over 5 aggregates, --batch 10, --lease 3s and --timeout 1s (a budget of 2 s,
// about 8 messages). The first batch leaves an aggregate unsent while the next batch, claimed
// ahead, holds that aggregate's later messages: the two used to hold each other back for ever.
TEST_F(RelaySlowReceiver, BatchOutOfLeaseBudgetLeavesNothingStuck) {
  const std::vector<std::string> ids = AddRounds(5, 3);
  SlowReceiver(milliseconds(250));
  Background relay(RelayArgs({"--batch", "10", "--lease", "3s", "--timeout", "1s"}));
  ASSERT_TRUE(AllDeliveredWithin(ids, std::chrono::seconds(30)))
      << Distinct() << " of " << ids.size() << " delivered in 30 s: " << relay.err();
  ExpectFirstDeliveriesInOrderPerAggregate();
  ExpectAllSent(ids);
  relay.Signal(SIGTERM);
  EXPECT_EQ(relay.Wait(), 0) << relay.err();
}

// One aggregate of 8 messages, --batch 2, the first attempt answered 503 with Retry-After: 0:
// the retry is due at once, while the batch claimed ahead holds the aggregate's next two.
TEST_F(RelaySlowReceiver, RetryDueAtOnceWithBatch2LeavesNothingStuck) {
  const std::vector<std::string> ids = AddRounds(1, 8);
  SlowReceiver(milliseconds(250), /*fail_first=*/1);
  Background relay(RelayArgs({"--batch", "2"}));
  ASSERT_TRUE(AllDeliveredWithin(ids, std::chrono::seconds(30)))
      << Distinct() << " of " << ids.size() << " delivered in 30 s: " << relay.err();
  ExpectFirstDeliveriesInOrderPerAggregate();
  ExpectAllSent(ids);
  relay.Signal(SIGTERM);
  EXPECT_EQ(relay.Wait(), 0) << relay.err();
}

// Relay A is paused (SIGSTOP) while it holds every aggregate; relay B, running beside it, gets
// its first aggregate within one lease (3 s) of the pause, and delivers the rest; A, resumed,
// sends nothing out of order.
TEST_F(RelaySlowReceiverOnPostgres, SecondRelayTakesOverFromAPausedRelayWithinOneLease) {
  const std::vector<std::string> ids = AddRounds(4, 5);
  SlowReceiver(milliseconds(250));
  const std::vector<std::string> timing = {"--batch", "10", "--lease", "3s", "--timeout", "1s"};
  std::vector<std::string> args_a = RelayArgs(timing), args_b = RelayArgs(timing);
  args_a.at(6) = server_->Url("/hooks/a");
  args_b.at(6) = server_->Url("/hooks/b");
  args_b.insert(args_b.end(), {"--poll", "100ms"});
  Background a(args_a);
  ASSERT_TRUE(SeenWithin(1, std::chrono::seconds(30))) << a.err();  // A leased all four by then
  Background b(args_b);
  ASSERT_TRUE(SeenWithin(3, std::chrono::seconds(30))) << a.err();
  a.Signal(SIGSTOP);
  const steady_clock::time_point paused = steady_clock::now();
  const bool all = AllDeliveredWithin(ids, std::chrono::seconds(30));
  a.Signal(SIGCONT);
  ASSERT_TRUE(all) << Distinct() << " of " << ids.size() << " delivered: " << a.err() << b.err();
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t first_b = 0;
    while (first_b < targets_.size() && targets_[first_b] != "/hooks/b") ++first_b;
    ASSERT_LT(first_b, targets_.size());
    const auto after = std::chrono::duration_cast<milliseconds>(at_[first_b] - paused);
    std::printf("relay B's first delivery came %lld ms after relay A was paused\n",
                static_cast<long long>(after.count()));
    // One lease (3 s), B's poll (100 ms) and claim, and the webhook A was sending when paused.
    EXPECT_LT(after, milliseconds(3'000 + 1'000));
  }
  ExpectFirstDeliveriesInOrderPerAggregate();
  ExpectAllSent(ids);
  a.Signal(SIGTERM);
  b.Signal(SIGTERM);
  EXPECT_EQ(a.Wait(), 0) << a.err();
  EXPECT_EQ(b.Wait(), 0) << b.err();
}

}  // namespace
}  // namespace idem::testing

// The relay's loop on SQLite with a scripted sink: order per aggregate, retries with backoff and
// Retry-After, dead messages, 410, stopping, retention.
#include "relay/relay_loop.h"

#include "relay/relay_test_support.h"

namespace idem::relay {
namespace {

class RelayLoopTest : public RelayFixture {
 protected:
  Relay::Pass Pass(Sink& sink, RelayOptions options = {}) {
    options.seed = 7;
    Relay relay(*relay_store_, sink, clock_, options, metrics_);
    auto pass = relay.RunOnce();
    EXPECT_TRUE(pass.ok()) << pass.status();
    return pass.ok() ? *pass : Relay::Pass{};
  }
  RelayMetrics metrics_;
};

Delivery Retry(std::string error = "HTTP 503") {
  return {.kind = Delivery::Kind::kRetry, .error = std::move(error)};
}

TEST_F(RelayLoopTest, PublishesEveryMessageInOrderAndRecordsItSent) {
  Add({{"a", "a1"}, {"b", "b1"}, {"a", "a2"}});
  ScriptSink sink;
  EXPECT_EQ(Pass(sink).attempted, 3);
  EXPECT_EQ(sink.published, (std::vector<std::string>{"a1", "b1", "a2"}));
  for (const OutboxRecord& r : All()) EXPECT_EQ(r.state, OutboxState::kSent) << r.payload;
  EXPECT_EQ(metrics_.sent.load(), 3);
  EXPECT_EQ(Pass(sink).attempted, 0);  // nothing is sent twice
}

TEST_F(RelayLoopTest, FailureStopsItsAggregateForTheBatchButNotOthers) {
  Add({{"a", "a1"}, {"a", "a2"}, {"b", "b1"}});
  ScriptSink sink([](const OutboxRecord& m) { return m.payload == "a1" ? Retry() : Delivery{}; });
  Pass(sink);
  EXPECT_EQ(sink.published, (std::vector<std::string>{"a1", "b1"}));
  EXPECT_EQ(ByPayload("a2").state, OutboxState::kPending);
  EXPECT_EQ(ByPayload("a2").attempts, 0);
  EXPECT_EQ(ByPayload("a1").last_error, "HTTP 503");
  EXPECT_EQ(metrics_.retried.load(), 1);
}

TEST_F(RelayLoopTest, ConcurrentSinkGetsWavesOfDistinctAggregatesInOrder) {
  Add({{"a", "a1"}, {"b", "b1"}, {"a", "a2"}, {"c", "c1"}, {"a", "a3"}, {"b", "b2"}});
  ScriptSink sink({}, /*concurrent=*/true);
  EXPECT_EQ(Pass(sink).attempted, 6);
  EXPECT_EQ(sink.waves,
            (std::vector<std::vector<std::string>>{{"a1", "b1", "c1"}, {"a2", "b2"}, {"a3"}}));
  for (const OutboxRecord& r : All()) EXPECT_EQ(r.state, OutboxState::kSent) << r.payload;
}

TEST_F(RelayLoopTest, ConcurrentSinkFailureKeepsItsAggregatesFollowersOutOfLaterWaves) {
  Add({{"a", "a1"}, {"b", "b1"}, {"a", "a2"}, {"b", "b2"}});
  ScriptSink sink([](const OutboxRecord& m) { return m.payload == "b1" ? Retry() : Delivery{}; },
                  /*concurrent=*/true);
  EXPECT_EQ(Pass(sink).attempted, 3);
  EXPECT_EQ(sink.waves, (std::vector<std::vector<std::string>>{{"a1", "b1"}, {"a2"}}));
  EXPECT_EQ(ByPayload("b2").state, OutboxState::kPending);
  EXPECT_EQ(ByPayload("b2").attempts, 0);
  EXPECT_EQ(ByPayload("a2").state, OutboxState::kSent);
}

TEST_F(RelayLoopTest, RetryIsDueAfterAJitteredBackoffWithinItsWindow) {
  Add({{"a", "a1"}});
  ScriptSink sink([](const OutboxRecord&) { return Retry(); });
  RelayOptions options;
  options.backoff = {.jitter = retry::Jitter::kFull, .base = Millis(1000), .cap = Millis(60'000)};
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int64_t before = clock_.NowMillis();
    Pass(sink, options);
    const OutboxRecord a = ByPayload("a1");
    EXPECT_EQ(a.attempts, attempt + 1);
    EXPECT_GE(a.next_attempt_ms, before);
    EXPECT_LE(a.next_attempt_ms, before + (1000 << attempt));
    clock_.Set(a.next_attempt_ms);
  }
}

// No notification announces a retry falling due: the relay's wait between passes ends then,
// not only at the end of the poll interval.
TEST_F(RelayLoopTest, WaitBetweenPassesEndsWhenARetryFallsDue) {
  Add({{"a", "a1"}});
  int attempts = 0;
  ScriptSink sink([&](const OutboxRecord&) {
    if (++attempts > 1) return Delivery{};
    return Delivery{
        .kind = Delivery::Kind::kRetry, .error = "HTTP 503", .retry_after = Millis(300)};
  });
  Relay relay(*relay_store_, sink, clock_, {.poll_interval = Millis(1'000), .seed = 7}, metrics_);
  std::vector<Millis> waits;
  relay.SetWaiter([&](Millis wait) {
    waits.push_back(wait);
    clock_.Advance(wait);
    if (waits.size() == 2) relay.RequestStop();
  });
  ASSERT_TRUE(relay.Run().ok());
  // a1 failed; the next claim found nothing due and waited 300 ms, not 1 s; then a1 went out,
  // and with no retry left the wait is the poll interval again.
  EXPECT_EQ(waits, (std::vector<Millis>{Millis(300), Millis(1'000)}));
  EXPECT_EQ(sink.published, (std::vector<std::string>{"a1", "a1"}));
  EXPECT_EQ(ByPayload("a1").state, OutboxState::kSent);
}

TEST_F(RelayLoopTest, RetryAfterSetsTheNextAttemptAndIsCapped) {
  Add({{"a", "a1"}, {"b", "b1"}});
  ScriptSink sink([](const OutboxRecord& m) {
    Delivery d = Retry("HTTP 429");
    d.retry_after = m.payload == "a1" ? Millis(7'000) : Millis(86'400'000);
    return d;
  });
  Pass(sink);
  EXPECT_EQ(ByPayload("a1").next_attempt_ms, clock_.NowMillis() + 7'000);
  EXPECT_EQ(ByPayload("b1").next_attempt_ms, clock_.NowMillis() + 3'600'000);
}

TEST_F(RelayLoopTest, MessageIsDeadAfterMaxAttemptsAndHoldsBackItsFollowers) {
  Add({{"a", "poison"}, {"a", "a2"}});
  ScriptSink sink(
      [](const OutboxRecord& m) { return m.payload == "poison" ? Retry() : Delivery{}; });
  RelayOptions options;
  options.max_attempts = 3;
  for (int i = 0; i < 3; ++i) {
    Pass(sink, options);
    clock_.Advance(Millis(3'600'000));
  }
  EXPECT_EQ(ByPayload("poison").state, OutboxState::kDead);
  EXPECT_EQ(ByPayload("poison").attempts, 3);
  EXPECT_EQ(metrics_.dead.load(), 1);
  Pass(sink, options);
  EXPECT_EQ(ByPayload("a2").state, OutboxState::kPending);
  options.let_dead_pass = true;
  Pass(sink, options);
  EXPECT_EQ(ByPayload("a2").state, OutboxState::kSent);
  EXPECT_EQ(sink.published, (std::vector<std::string>{"poison", "poison", "poison", "a2"}));
}

TEST_F(RelayLoopTest, RejectedMessageIsDeadAtOnce) {
  Add({{"a", "huge"}});
  ScriptSink sink([](const OutboxRecord&) {
    return Delivery{.kind = Delivery::Kind::kRejected, .error = "over the limit"};
  });
  Pass(sink);
  EXPECT_EQ(ByPayload("huge").state, OutboxState::kDead);
  EXPECT_EQ(ByPayload("huge").last_error, "over the limit");
}

TEST_F(RelayLoopTest, GoneEndpointStopsTheRunAndKeepsMessagesPending) {
  Add({{"a", "a1"}, {"b", "b1"}});
  ScriptSink sink([](const OutboxRecord&) {
    return Delivery{.kind = Delivery::Kind::kGone, .error = "HTTP 410 from http://x"};
  });
  Relay relay(*relay_store_, sink, clock_, {}, metrics_);
  absl::Status status = relay.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("410"), std::string_view::npos) << status;
  EXPECT_EQ(sink.published, (std::vector<std::string>{"a1"}));
  EXPECT_EQ(ByPayload("a1").state, OutboxState::kPending);
  EXPECT_EQ(ByPayload("b1").state, OutboxState::kPending);
}

TEST_F(RelayLoopTest, StopRequestedMidBatchFinishesAndRecordsTheBatch) {
  Add({{"a", "a1"}, {"b", "b1"}, {"c", "c1"}});
  Relay* running = nullptr;
  ScriptSink sink([&](const OutboxRecord&) {
    running->RequestStop();
    return Delivery{};
  });
  Relay relay(*relay_store_, sink, clock_, {}, metrics_);
  running = &relay;
  EXPECT_TRUE(relay.Run().ok());
  EXPECT_EQ(sink.published.size(), 3u);
  for (const OutboxRecord& r : All()) EXPECT_EQ(r.state, OutboxState::kSent);
}

TEST_F(RelayLoopTest, SentMessagesAreDeletedAfterRetention) {
  Add({{"a", "a1"}});
  RelayOptions options;
  options.retention = Millis(1000);
  Relay* running = nullptr;
  int pass = 0;
  ScriptSink sink;
  Relay relay(*relay_store_, sink, clock_, options, metrics_);
  running = &relay;
  relay.SetWaiter([&](Millis) {
    // Between passes: move past retention once, then stop.
    if (++pass == 1) {
      clock_.Advance(Millis(120'000));
    } else {
      running->RequestStop();
    }
  });
  EXPECT_TRUE(relay.Run().ok());
  EXPECT_TRUE(All().empty());
  EXPECT_EQ(metrics_.pending.load(), 0);
}

TEST(RelayOptions, OutOfRangeOptionsAreInvalidArgument) {
  RelayOptions o;
  o.batch_size = 0;
  EXPECT_EQ(ValidateRelayOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.send_timeout = o.lease;
  EXPECT_EQ(ValidateRelayOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.max_attempts = 0;
  EXPECT_EQ(ValidateRelayOptions(o).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateRelayOptions({}).ok());
}

}  // namespace
}  // namespace idem::relay

// The outbox's write side on every store: a message exists exactly when its transaction
// committed, a replay adds none, bad messages are refused and write nothing.
#include "idem/guard.h"
#include "idem/uuid.h"
#include "outbox/testing/outbox_suite.h"

namespace idem::testing {
namespace {

// An effect that records `key` in effects, adds a message, and answers `status`.
Effect WriteAndPublish(std::string key, int status, const Clock& clock) {
  return [key, status, &clock](Transaction& tx) -> absl::StatusOr<StoredResponse> {
    const SqlValue params[] = {key};
    auto inserted = tx.Execute("INSERT INTO effects (k) VALUES ($1)", params);
    if (!inserted.ok()) return inserted.status();
    auto id = AddOutboxMessage(tx, SampleMessage(key, "{\"k\":\"" + key + "\"}"), clock);
    if (!id.ok()) return id.status();
    return StoredResponse{.status = status, .body = *id};
  };
}

const Scope kScope{.tenant = "t", .key = "key-1"};

TEST_P(OutboxTest, MessageOfACommittedEffectIsPendingWithEveryField) {
  Guard guard(*store_);
  auto result = guard.Run(kScope, "fp", WriteAndPublish("a", 201, clock_));
  ASSERT_TRUE(result.ok()) << result.status();
  auto message = GetOutboxMessage(*store_, result->response.body);
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->id, result->response.body);
  EXPECT_EQ(message->topic, "order.created");
  EXPECT_EQ(message->aggregate_key, "a");
  EXPECT_EQ(message->headers, (std::vector<Header>{{"x-tenant", "acme"}}));
  EXPECT_EQ(message->payload, "{\"k\":\"a\"}");
  EXPECT_EQ(message->state, OutboxState::kPending);
  EXPECT_EQ(message->attempts, 0);
  EXPECT_EQ(message->created_ms, clock_.NowMillis());
  EXPECT_EQ(message->next_attempt_ms, clock_.NowMillis());
  EXPECT_EQ(message->sent_ms, 0);
  EXPECT_EQ(message->last_error, "");
}

TEST_P(OutboxTest, MessageIdIsAUuidVersion7) {
  const std::string id = AddCommitted(SampleMessage());
  auto uuid = ParseUuid(id);
  ASSERT_TRUE(uuid.ok()) << uuid.status();
  EXPECT_EQ(uuid->version(), 7);
  EXPECT_EQ(uuid->variant_bits(), 0b10);
}

TEST_P(OutboxTest, ReplayedKeyAddsNoMessage) {
  Guard guard(*store_);
  ASSERT_TRUE(guard.Run(kScope, "fp", WriteAndPublish("a", 201, clock_)).ok());
  auto replay = guard.Run(kScope, "fp", WriteAndPublish("a", 201, clock_));
  ASSERT_TRUE(replay.ok()) << replay.status();
  EXPECT_TRUE(replay->replayed);
  EXPECT_EQ(All().size(), 1u);
}

TEST_P(OutboxTest, EffectErrorLeavesNoMessage) {
  Guard guard(*store_);
  auto result = guard.Run(kScope, "fp", [&](Transaction& tx) -> absl::StatusOr<StoredResponse> {
    EXPECT_TRUE(AddOutboxMessage(tx, SampleMessage(), clock_).ok());
    return absl::AbortedError("business rule");
  });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(All().empty());
}

TEST_P(OutboxTest, DeterministicFailureLeavesNoMessage) {
  Guard guard(*store_);
  auto result = guard.Run(kScope, "fp", WriteAndPublish("a", 422, clock_));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->state, KeyState::kFailedFinal);
  EXPECT_TRUE(All().empty());
}

TEST_P(OutboxTest, TransientOutcomeLeavesNoMessage) {
  Guard guard(*store_);
  auto result = guard.Run(kScope, "fp", WriteAndPublish("a", 503, clock_));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->state, KeyState::kInProgress);
  EXPECT_TRUE(All().empty());
}

TEST_P(OutboxTest, RolledBackTransactionLeavesNoMessage) {
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(AddOutboxMessage(**tx, SampleMessage(), clock_).ok());
  ASSERT_TRUE((*tx)->Rollback().ok());
  EXPECT_TRUE(All().empty());
}

TEST_P(OutboxTest, MessagesOfOneTransactionAreOrderedAsAdded) {
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto id = AddOutboxMessage(**tx, SampleMessage("agg", std::to_string(i)), clock_);
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  ASSERT_TRUE((*tx)->Commit().ok());
  std::vector<std::string> listed;
  for (const OutboxRecord& record : All()) listed.push_back(record.id);
  EXPECT_EQ(listed, ids);
}

TEST_P(OutboxTest, BinaryPayloadAndHeadersRoundTripByteForByte) {
  OutboxMessage message = SampleMessage();
  message.payload = std::string("\0\x01\xff{\"a\":1}\n", 11);
  message.headers = {{"X-B", "two words\tand tab"}, {"x-a", "\"quoted\""}};
  auto read = GetOutboxMessage(*store_, AddCommitted(message));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->payload, message.payload);
  EXPECT_EQ(read->headers, message.headers);
}

TEST_P(OutboxTest, MalformedMessagesAreInvalidArgumentAndWriteNothing) {
  std::vector<OutboxMessage> bad;
  auto with = [](auto change) {
    OutboxMessage message = SampleMessage();
    change(message);
    return message;
  };
  bad.push_back(with([](OutboxMessage& m) { m.topic = ""; }));
  bad.push_back(with([](OutboxMessage& m) { m.topic = std::string(256, 'a'); }));
  bad.push_back(with([](OutboxMessage& m) { m.topic = "order..created"; }));
  bad.push_back(with([](OutboxMessage& m) { m.topic = "order.*"; }));
  bad.push_back(with([](OutboxMessage& m) { m.topic = "order created"; }));
  bad.push_back(with([](OutboxMessage& m) { m.aggregate_key = ""; }));
  bad.push_back(with([](OutboxMessage& m) { m.aggregate_key = "has space"; }));
  bad.push_back(with([](OutboxMessage& m) { m.aggregate_key = std::string(256, 'k'); }));
  bad.push_back(with([](OutboxMessage& m) { m.headers = {{"", "v"}}; }));
  bad.push_back(with([](OutboxMessage& m) { m.headers = {{"bad name", "v"}}; }));
  bad.push_back(with([](OutboxMessage& m) { m.headers = {{"x", "a\r\nb"}}; }));
  bad.push_back(with([](OutboxMessage& m) { m.headers = {{"Webhook-Id", "v"}}; }));
  bad.push_back(with([](OutboxMessage& m) { m.headers = {{"Idempotency-Key", "v"}}; }));
  bad.push_back(with([](OutboxMessage& m) { m.headers = {{"content-type", "text/plain"}}; }));
  bad.push_back(with([](OutboxMessage& m) { m.headers = {{"Nats-Msg-Id", "v"}}; }));
  bad.push_back(with([](OutboxMessage& m) {
    m.headers.assign(kMaxOutboxHeaders + 1, Header{"x", "y"});
  }));
  bad.push_back(with([](OutboxMessage& m) { m.payload.assign(kMaxOutboxPayloadBytes + 1, 'p'); }));
  for (const OutboxMessage& message : bad) {
    auto tx = store_->Begin();
    ASSERT_TRUE(tx.ok());
    auto id = AddOutboxMessage(**tx, message, clock_);
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument)
        << message.topic << " " << message.aggregate_key;
    ASSERT_TRUE((*tx)->Commit().ok());
  }
  EXPECT_TRUE(All().empty());
}

TEST_P(OutboxTest, MessageAtEveryLimitIsAccepted) {
  OutboxMessage message = SampleMessage(std::string(kMaxOutboxAggregateKeyLength, 'k'));
  message.topic = std::string(kMaxOutboxTopicLength, 't');
  message.headers.assign(kMaxOutboxHeaders, Header{"x", "y"});
  message.payload.assign(kMaxOutboxPayloadBytes, 'p');
  auto read = GetOutboxMessage(*store_, AddCommitted(message));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->payload.size(), kMaxOutboxPayloadBytes);
}

}  // namespace
}  // namespace idem::testing

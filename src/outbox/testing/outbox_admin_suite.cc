// The outbox for operators on every store: list filters and paging, show, re-drive, purge, count.
#include "outbox/testing/outbox_suite.h"

namespace idem::testing {
namespace {

using ::absl::StatusCode;

std::vector<std::string> Ids(const absl::StatusOr<std::vector<OutboxRecord>>& records) {
  std::vector<std::string> ids;
  if (records.ok()) {
    for (const OutboxRecord& record : *records) ids.push_back(record.id);
  }
  return ids;
}

TEST_P(OutboxTest, ListFiltersByStateAggregateAndTopicAndPagesBySeq) {
  const std::string a1 = AddCommitted(SampleMessage("a"));
  const std::string b1 = AddCommitted(SampleMessage("b"));
  OutboxMessage other = SampleMessage("a");
  other.topic = "order.shipped";
  const std::string a2 = AddCommitted(other);
  Exec("UPDATE idem_outbox SET state = 'dead' WHERE id = $1", {b1});

  EXPECT_EQ(Ids(ListOutbox(*store_, {.aggregate_key = "a"})), (std::vector{a1, a2}));
  EXPECT_EQ(Ids(ListOutbox(*store_, {.state = OutboxState::kDead})), (std::vector{b1}));
  EXPECT_EQ(Ids(ListOutbox(*store_, {.topic = "order.shipped"})), (std::vector{a2}));
  auto first_page = ListOutbox(*store_, {.limit = 2});
  ASSERT_TRUE(first_page.ok()) << first_page.status();
  EXPECT_EQ(Ids(first_page), (std::vector{a1, b1}));
  EXPECT_EQ(Ids(ListOutbox(*store_, {.after_seq = first_page->back().seq, .limit = 2})),
            (std::vector{a2}));
}

TEST_P(OutboxTest, ListLeavesPayloadsOutAndShowHasThem) {
  const std::string id = AddCommitted(SampleMessage("a", "{\"big\":true}"));
  auto listed = ListOutbox(*store_, {});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].payload, "");
  EXPECT_EQ(GetOutboxMessage(*store_, id)->payload, "{\"big\":true}");
}

TEST_P(OutboxTest, ListLimitOutsideRangeIsInvalidArgument) {
  EXPECT_EQ(ListOutbox(*store_, {.limit = 0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ListOutbox(*store_, {.limit = 10001}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ListOutbox(*store_, {.after_seq = -1}).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(OutboxTest, ShowOfUnknownIdIsNotFoundAndOfMalformedIdInvalidArgument) {
  EXPECT_EQ(GetOutboxMessage(*store_, "017f22e2-79b0-7cc3-98c4-dc0c0c07398f").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(GetOutboxMessage(*store_, "not-a-uuid").status().code(), StatusCode::kInvalidArgument);
}

TEST_P(OutboxTest, RedriveMakesADeadMessagePendingWithAttemptsReset) {
  const std::string id = AddCommitted(SampleMessage());
  Exec(
      "UPDATE idem_outbox SET state = 'dead', attempts = 8, last_error = 'HTTP 500' "
      "WHERE id = $1",
      {id});
  auto changed = RedriveOutbox(*store_, {.id = id}, clock_.NowMillis() + 5);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(*changed, 1);
  auto message = GetOutboxMessage(*store_, id);
  ASSERT_TRUE(message.ok());
  EXPECT_EQ(message->state, OutboxState::kPending);
  EXPECT_EQ(message->attempts, 0);
  EXPECT_EQ(message->last_error, "");
  EXPECT_EQ(message->next_attempt_ms, clock_.NowMillis() + 5);
}

TEST_P(OutboxTest, RedriveOfEveryDeadMessageOfAnAggregateLeavesOthersAlone) {
  const std::string a = AddCommitted(SampleMessage("a"));
  const std::string b = AddCommitted(SampleMessage("b"));
  Exec("UPDATE idem_outbox SET state = 'dead'");
  auto changed = RedriveOutbox(*store_, {.state = OutboxState::kDead, .aggregate_key = "a"}, 0);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(*changed, 1);
  EXPECT_EQ(GetOutboxMessage(*store_, a)->state, OutboxState::kPending);
  EXPECT_EQ(GetOutboxMessage(*store_, b)->state, OutboxState::kDead);
}

TEST_P(OutboxTest, RedriveOfAMessageThatIsNotDeadIsFailedPreconditionAndChangesNothing) {
  const std::string id = AddCommitted(SampleMessage());
  Exec("UPDATE idem_outbox SET attempts = 3 WHERE id = $1", {id});
  EXPECT_EQ(RedriveOutbox(*store_, {.id = id}, 0).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(GetOutboxMessage(*store_, id)->attempts, 3);
}

TEST_P(OutboxTest, RedriveSelectionErrors) {
  EXPECT_EQ(RedriveOutbox(*store_, {}, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RedriveOutbox(*store_, {.state = OutboxState::kSent}, 0).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(RedriveOutbox(*store_, {.id = "x"}, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      RedriveOutbox(*store_, {.id = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f"}, 0).status().code(),
      StatusCode::kNotFound);
}

TEST_P(OutboxTest, PurgeDeletesOneMessageOrEveryMessageOfAState) {
  const std::string a = AddCommitted(SampleMessage("a"));
  const std::string b = AddCommitted(SampleMessage("b"));
  const std::string c = AddCommitted(SampleMessage("c"));
  Exec("UPDATE idem_outbox SET state = 'dead' WHERE id <> $1", {a});
  EXPECT_EQ(*PurgeOutbox(*store_, {.id = a}), 1);
  EXPECT_EQ(Ids(ListOutbox(*store_, {})), (std::vector{b, c}));
  EXPECT_EQ(*PurgeOutbox(*store_, {.state = OutboxState::kDead}), 2);
  EXPECT_TRUE(All().empty());
}

TEST_P(OutboxTest, PurgeSelectionErrors) {
  const std::string id = AddCommitted(SampleMessage());
  EXPECT_EQ(PurgeOutbox(*store_, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PurgeOutbox(*store_, {.id = id, .state = OutboxState::kPending}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PurgeOutbox(*store_, {.id = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f"}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(All().size(), 1u);
}

TEST_P(OutboxTest, CountOutboxCountsEachState) {
  AddCommitted(SampleMessage("a"));
  const std::string b = AddCommitted(SampleMessage("b"));
  const std::string c = AddCommitted(SampleMessage("c"));
  Exec("UPDATE idem_outbox SET state = 'dead' WHERE id = $1", {b});
  Exec("UPDATE idem_outbox SET state = 'sent' WHERE id = $1", {c});
  auto counts = CountOutbox(*store_);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->pending, 1);
  EXPECT_EQ(counts->dead, 1);
  EXPECT_EQ(counts->sent, 1);
}

}  // namespace
}  // namespace idem::testing

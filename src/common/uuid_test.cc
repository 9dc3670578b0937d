#include "idem/uuid.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <thread>
#include <vector>

namespace idem {

class UuidV7GeneratorTestPeer {
 public:
  // Makes the generator's next id in the same millisecond the last one its counter can hold.
  static void SetCounterBeforeOverflow(UuidV7Generator& generator) {
    std::lock_guard<std::mutex> lock(generator.mu_);
    generator.counter_ = (std::uint64_t{1} << UuidV7Generator::kCounterBits) - 2;
  }
};

namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

constexpr std::int64_t kRfcExampleMillis = 0x017F22E279B0;  // RFC 9562 Appendix A.6

TEST(Uuid, ReadsTheFieldsOfTheRfc9562Example) {
  absl::StatusOr<Uuid> uuid = ParseUuid("017F22E2-79B0-7CC3-98C4-DC0C0C07398F");
  ASSERT_TRUE(uuid.ok()) << uuid.status();
  EXPECT_EQ(uuid->unix_millis(), kRfcExampleMillis);
  EXPECT_EQ(uuid->version(), 7);
  EXPECT_EQ(uuid->variant_bits(), 0b10);
  EXPECT_EQ(uuid->ToString(), "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
}

TEST(UuidV7Generator, PlacesTimestampVersionAndVariantAsRfc9562) {
  ManualClock clock(kRfcExampleMillis);
  UuidV7Generator generator(clock, 1);
  const Uuid uuid = generator.Next();
  const std::uint8_t timestamp[] = {0x01, 0x7F, 0x22, 0xE2, 0x79, 0xB0};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(uuid.bytes[i], timestamp[i]) << i;
  EXPECT_EQ(uuid.bytes[6] >> 4, 7);
  EXPECT_EQ(uuid.bytes[8] >> 6, 0b10);
  EXPECT_EQ(uuid.unix_millis(), kRfcExampleMillis);
  const std::string text = uuid.ToString();
  EXPECT_EQ(text.substr(0, 15), "017f22e2-79b0-7");
  EXPECT_THAT(std::string("89ab"), HasSubstr(text.substr(19, 1)));
  EXPECT_EQ(text, ParseUuid(text)->ToString());
}

TEST(UuidV7Generator, WritesLowercase8_4_4_4_12Text) {
  ManualClock clock;
  UuidV7Generator generator(clock, 2);
  const std::string text = generator.Next().ToString();
  ASSERT_EQ(text.size(), 36u);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      EXPECT_EQ(text[i], '-');
    } else {
      EXPECT_NE(std::string_view("0123456789abcdef").find(text[i]), std::string_view::npos);
    }
  }
}

TEST(UuidV7Generator, Issues100000StrictlyIncreasingIdsWithinOneMillisecond) {
  ManualClock clock(kRfcExampleMillis);
  UuidV7Generator generator(clock, 3);
  Uuid previous = generator.Next();
  for (int i = 0; i < 100'000; ++i) {
    const Uuid next = generator.Next();
    ASSERT_LT(previous, next) << "at " << i;
    ASSERT_LT(previous.ToString(), next.ToString()) << "text order, at " << i;
    ASSERT_EQ(next.unix_millis(), kRfcExampleMillis);
    ASSERT_EQ(next.version(), 7);
    ASSERT_EQ(next.variant_bits(), 0b10);
    previous = next;
  }
}

TEST(UuidV7Generator, FollowsTheClockIntoTheNextMillisecond) {
  ManualClock clock(1000);
  UuidV7Generator generator(clock, 4);
  const Uuid first = generator.Next();
  clock.Advance(Millis(5));
  const Uuid second = generator.Next();
  EXPECT_EQ(first.unix_millis(), 1000);
  EXPECT_EQ(second.unix_millis(), 1005);
  EXPECT_LT(first, second);
}

TEST(UuidV7Generator, KeepsIncreasingWhenTheClockStepsBack) {
  ManualClock clock(5000);
  UuidV7Generator generator(clock, 5);
  const Uuid before = generator.Next();
  clock.Set(4000);
  const Uuid after = generator.Next();
  EXPECT_LT(before, after);
  EXPECT_EQ(after.unix_millis(), 5000);
}

TEST(UuidV7Generator, AdvancesTheTimestampWhenTheCounterOverflows) {
  ManualClock clock(7000);
  UuidV7Generator generator(clock, 6);
  generator.Next();
  UuidV7GeneratorTestPeer::SetCounterBeforeOverflow(generator);
  const Uuid last_in_millisecond = generator.Next();
  const Uuid borrowed = generator.Next();
  EXPECT_EQ(last_in_millisecond.unix_millis(), 7000);
  EXPECT_EQ(borrowed.unix_millis(), 7001);
  EXPECT_LT(last_in_millisecond, borrowed);
  // When the clock catches up, ids stay ahead of the borrowed millisecond.
  clock.Set(7001);
  const Uuid caught_up = generator.Next();
  EXPECT_LT(borrowed, caught_up);
  EXPECT_EQ(caught_up.unix_millis(), 7001);
}

TEST(UuidV7Generator, SameSeedAndClockGiveSameIds) {
  ManualClock clock(1234);
  UuidV7Generator a(clock, 42);
  UuidV7Generator b(clock, 42);
  UuidV7Generator c(clock, 43);
  const Uuid from_a = a.Next();
  EXPECT_EQ(from_a, b.Next());
  EXPECT_NE(from_a, c.Next());
}

// Issue 12: the random bits came from mt19937_64, whose output is predictable from a few samples.
// Generators without a seed draw from the operating system: two of them on the same clock share
// no random bits, and each still counts up.
TEST(UuidV7Generator, UnseededGeneratorsDrawIndependentBitsFromTheOs) {
  ManualClock clock(kRfcExampleMillis);
  UuidV7Generator a(clock);
  UuidV7Generator b(clock);
  std::set<Uuid> seen;
  Uuid last_a;
  for (int i = 0; i < 1000; ++i) {
    const Uuid from_a = a.Next();
    const Uuid from_b = b.Next();
    EXPECT_TRUE(seen.insert(from_a).second);
    EXPECT_TRUE(seen.insert(from_b).second);
    if (i > 0) {
      EXPECT_LT(last_a, from_a);
    }
    last_a = from_a;
    EXPECT_EQ(from_a.version(), 7);
    EXPECT_EQ(from_a.unix_millis(), kRfcExampleMillis);
  }
}

TEST(UuidV7Generator, GivesUniqueIncreasingIdsAcrossThreads) {
  ManualClock clock(kRfcExampleMillis);
  UuidV7Generator generator(clock, 7);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 5000;
  std::vector<std::vector<Uuid>> made(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&generator, &ids = made[t]] {
      for (int i = 0; i < kPerThread; ++i) ids.push_back(generator.Next());
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<Uuid> all;
  for (const std::vector<Uuid>& ids : made) {
    for (std::size_t i = 1; i < ids.size(); ++i) ASSERT_LT(ids[i - 1], ids[i]);
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), std::size_t{kThreads * kPerThread});
}

TEST(NewUuidV7, GivesUniqueVersion7IdsAcrossThreadsWithTheSystemTime) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  const std::int64_t start = SystemClock().NowMillis();
  std::vector<std::vector<std::string>> made(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ids = made[t]] {
      for (int i = 0; i < kPerThread; ++i) ids.push_back(NewUuidV7());
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::int64_t end = SystemClock().NowMillis();
  std::set<std::string> all;
  for (const std::vector<std::string>& ids : made) {
    for (const std::string& text : ids) {
      absl::StatusOr<Uuid> uuid = ParseUuid(text);
      ASSERT_TRUE(uuid.ok()) << text;
      ASSERT_EQ(uuid->version(), 7);
      ASSERT_GE(uuid->unix_millis(), start);
      ASSERT_LE(uuid->unix_millis(), end + 1);
    }
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), std::size_t{kThreads * kPerThread});
}

TEST(ParseUuid, RejectsWrongLengthHyphensAndNonHex) {
  EXPECT_EQ(ParseUuid("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ParseUuid("017f22e2-79b0-7cc3-98c4-dc0c0c07398").status().message(),
              HasSubstr("has 35 characters"));
  EXPECT_THAT(ParseUuid("017f22e2x79b0-7cc3-98c4-dc0c0c07398f").status().message(),
              HasSubstr("needs '-' at position 8"));
  EXPECT_THAT(ParseUuid("017f22e2-79b0-7cc3-98c4-dc0c0c07398g").status().message(),
              HasSubstr("non-hex character 'g' at position 35"));
  EXPECT_EQ(ParseUuid("017f22e279b07cc398c4dc0c0c07398f").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ClaimNonce, ThirtyTwoHexDigitsNeverRepeatedInAThreadOrAcrossThreads) {
  std::vector<std::vector<std::string>> drawn(4);
  std::vector<std::thread> threads;
  for (auto& mine : drawn) {
    threads.emplace_back([&mine] {
      for (int i = 0; i < 1000; ++i) mine.push_back(NewClaimNonce());
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<std::string> seen;
  for (const auto& mine : drawn) {
    for (const std::string& nonce : mine) {
      ASSERT_THAT(nonce, MatchesRegex("[0-9a-f]{32}"));
      EXPECT_TRUE(seen.insert(nonce).second) << nonce << " drawn twice";
    }
  }
  EXPECT_EQ(seen.size(), 4000u);
}

TEST(ClaimNonce, AForkedChildDrawsItsOwnNotTheParentsNext) {
  const std::string before = NewClaimNonce();
  int pipe_ends[2];
  ASSERT_EQ(pipe(pipe_ends), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string nonce = NewClaimNonce();
    const ssize_t wrote = write(pipe_ends[1], nonce.data(), nonce.size());
    _exit(wrote == static_cast<ssize_t>(nonce.size()) ? 0 : 1);
  }
  close(pipe_ends[1]);
  char buffer[32];
  ssize_t got = 0;
  while (got < 32) {
    const ssize_t n = read(pipe_ends[0], buffer + got, sizeof(buffer) - static_cast<size_t>(got));
    if (n <= 0) break;
    got += n;
  }
  close(pipe_ends[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_EQ(got, 32);
  const std::string in_child(buffer, 32);
  const std::string parents_next = NewClaimNonce();
  // The child's 64 thread bits are drawn again: neither the parent's next nonce nor its prefix.
  EXPECT_NE(in_child, parents_next);
  EXPECT_NE(in_child.substr(0, 16), before.substr(0, 16));
  EXPECT_EQ(parents_next.substr(0, 16), before.substr(0, 16));
}

}  // namespace
}  // namespace idem

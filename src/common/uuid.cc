#include "idem/uuid.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>

#include "common/hex_digit.h"

namespace idem {
namespace {

bool IsHyphenPosition(std::size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

// Fills `out` from the operating system's random source (getrandom, blocking only until the
// kernel's pool is first initialised at boot). Failing to get randomness is a broken environment
// with no safe fallback: the process stops rather than issue predictable ids.
void FillFromOs(std::span<std::uint8_t> out) {
  std::size_t filled = 0;
  while (filled < out.size()) {
    const ssize_t got = getrandom(out.data() + filled, out.size() - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      std::fprintf(stderr, "idem: getrandom failed (%s); cannot make unpredictable ids\n",
                   std::strerror(errno));
      std::abort();
    }
    filled += static_cast<std::size_t>(got);
  }
}

}  // namespace

std::string Uuid::ToString() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(36);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text.push_back('-');
    text.push_back(kDigits[bytes[i] >> 4]);
    text.push_back(kDigits[bytes[i] & 0xF]);
  }
  return text;
}

std::int64_t Uuid::unix_millis() const {
  std::int64_t millis = 0;
  for (std::size_t i = 0; i < 6; ++i) millis = (millis << 8) | bytes[i];
  return millis;
}

absl::StatusOr<Uuid> ParseUuid(std::string_view text) {
  if (text.size() != 36) {
    return absl::InvalidArgumentError(fmt::format(
        "UUID \"{}\" has {} characters; expected 36 in the form 8-4-4-4-12", text, text.size()));
  }
  Uuid uuid;
  std::size_t nibble = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (IsHyphenPosition(i)) {
      if (text[i] == '-') continue;
      return absl::InvalidArgumentError(
          fmt::format("UUID \"{}\" needs '-' at position {}", text, i));
    }
    const int value = HexDigitValue(text[i]);
    if (value < 0) {
      return absl::InvalidArgumentError(
          fmt::format("UUID \"{}\" has non-hex character '{}' at position {}", text, text[i], i));
    }
    std::uint8_t& byte = uuid.bytes[nibble / 2];
    byte = static_cast<std::uint8_t>(nibble % 2 == 0 ? value << 4 : byte | value);
    ++nibble;
  }
  return uuid;
}

UuidV7Generator::UuidV7Generator(const Clock& clock) : clock_(clock) {}

UuidV7Generator::UuidV7Generator(const Clock& clock, std::uint64_t seed)
    : clock_(clock), seeded_(std::in_place, seed) {}

std::uint64_t UuidV7Generator::Random64() {
  if (seeded_) return (*seeded_)();
  if (pool_used_ + sizeof(std::uint64_t) > pool_.size()) {
    FillFromOs(pool_);
    pool_used_ = 0;
  }
  std::uint64_t value = 0;
  std::memcpy(&value, pool_.data() + pool_used_, sizeof(value));
  pool_used_ += sizeof(value);
  return value;
}

void UuidV7Generator::RestartCounter() {
  // Top bit clear: at least 2^41 increments before the counter overflows (RFC 9562 §6.2).
  counter_ = Random64() & ((std::uint64_t{1} << (kCounterBits - 1)) - 1);
}

Uuid UuidV7Generator::Next() {
  std::lock_guard<std::mutex> lock(mu_);
  const std::int64_t now = std::max<std::int64_t>(clock_.NowMillis(), 0);
  if (now > last_millis_) {
    last_millis_ = now;
    RestartCounter();
  } else if (++counter_ >> kCounterBits != 0) {
    ++last_millis_;  // counter exhausted: borrow the next millisecond
    RestartCounter();
  }
  const std::uint64_t millis = static_cast<std::uint64_t>(last_millis_) & 0xFFFF'FFFF'FFFF;
  const std::uint64_t random = Random64() & 0xFFFF'FFFF;
  // high: timestamp(48) | version(4) | counter bits 41..30 (12)
  const std::uint64_t high = (millis << 16) | (std::uint64_t{7} << 12) | (counter_ >> 30);
  // low: variant 0b10 (2) | counter bits 29..0 (30) | random (32)
  const std::uint64_t low = (std::uint64_t{0b10} << 62) | ((counter_ & 0x3FFF'FFFF) << 32) | random;
  Uuid uuid;
  for (std::size_t i = 0; i < 8; ++i) {
    uuid.bytes[i] = static_cast<std::uint8_t>(high >> (56 - 8 * i));
    uuid.bytes[8 + i] = static_cast<std::uint8_t>(low >> (56 - 8 * i));
  }
  return uuid;
}

std::string NewUuidV7() {
  static std::mutex mu;
  static std::optional<UuidV7Generator> generator;
  static pid_t owner = 0;
  std::lock_guard<std::mutex> lock(mu);
  // A forked child inherits the generator's state; reseed so parent and child never collide.
  if (const pid_t pid = getpid(); !generator || pid != owner) {
    generator.emplace(SystemClock());
    owner = pid;
  }
  return generator->Next().ToString();
}

namespace {

// Bumped in every child a fork makes: a thread's nonce state inherited across fork() is drawn
// again, so parent and child never hand out the same nonces.
std::atomic<std::uint64_t> fork_generation{1};

void CountForks() {
  static std::once_flag registered;
  std::call_once(registered, [] {
    pthread_atfork(nullptr, nullptr,
                   [] { fork_generation.fetch_add(1, std::memory_order_relaxed); });
  });
}

}  // namespace

// One getrandom per thread (and again after a fork), not per claim: 64 random bits drawn for
// the thread, then a counter. Two attempts share a nonce only if two threads drew the same 64
// bits; nothing in it comes from a client or an operator, and a claim's nonce is never shown to
// either.
std::string NewClaimNonce() {
  struct State {
    std::uint64_t generation = 0;
    std::uint64_t prefix = 0;
    std::uint64_t counter = 0;
  };
  thread_local State state;
  const std::uint64_t generation = fork_generation.load(std::memory_order_relaxed);
  if (state.generation != generation) {
    CountForks();
    std::array<std::uint8_t, 16> bytes;
    FillFromOs(bytes);
    std::memcpy(&state.prefix, bytes.data(), sizeof(state.prefix));
    std::memcpy(&state.counter, bytes.data() + 8, sizeof(state.counter));
    state.generation = generation;
  }
  ++state.counter;
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(32, '0');
  for (int i = 0; i < 16; ++i) {
    text[15 - i] = kDigits[(state.prefix >> (4 * i)) & 0xF];
    text[31 - i] = kDigits[(state.counter >> (4 * i)) & 0xF];
  }
  return text;
}

}  // namespace idem

// idem/uuid.h: UUID version 7 (RFC 9562 §5.7), time-ordered identifiers for outbox messages,
// lease owners and anything else that wants ids that sort by creation time.
//
// Layout (big-endian): 48-bit Unix timestamp in milliseconds | version 7 (4 bits) | rand_a (12
// bits) | variant 0b10 (2 bits) | rand_b (62 bits).
//
// Monotonicity (RFC 9562 §6.2, method 1, "fixed bit-length dedicated counter"): a 42-bit counter
// fills rand_a and the top 30 bits of rand_b; the low 32 bits of rand_b are fresh random bits in
// every id. At each new millisecond the counter restarts at a random value with its top bit
// clear, so at least 2^41 ids fit in one millisecond; if the counter still overflows, the
// generator moves its timestamp one millisecond ahead of the clock. The random bits (the
// counter's starting points and the 32 bits of every id) come from the operating system
// (getrandom), so ids cannot be predicted from earlier ones; only a generator given a seed (for
// tests) uses a pseudo-random sequence instead. A clock that steps backwards
// never makes ids go backwards: the generator keeps the later timestamp and counts on.
//
// Thread-safety: UuidV7Generator::Next and NewUuidV7 are safe to call from many threads at once.
#ifndef IDEM_UUID_H_
#define IDEM_UUID_H_

#include <array>
#include <compare>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/clock.h"

namespace idem {

// A 128-bit UUID as 16 bytes in network order. Plain value.
struct Uuid {
  std::array<std::uint8_t, 16> bytes{};

  // Returns the lowercase 8-4-4-4-12 text form, e.g. "017f22e2-79b0-7cc3-98c4-dc0c0c07398f".
  std::string ToString() const;
  // Returns the version field (7 for ids made here).
  int version() const { return bytes[6] >> 4; }
  // Returns the two variant bits (0b10 for RFC 9562 ids).
  int variant_bits() const { return bytes[8] >> 6; }
  // Returns the 48-bit timestamp field: for a version 7 id, Unix milliseconds.
  std::int64_t unix_millis() const;

  friend auto operator<=>(const Uuid&, const Uuid&) = default;
};

// Parses the 8-4-4-4-12 hex form (either case). Returns InvalidArgument when the text is not 36
// characters with hyphens at positions 8, 13, 18 and 23 and hex digits elsewhere.
absl::StatusOr<Uuid> ParseUuid(std::string_view text);

// Makes version 7 UUIDs from an injected clock, strictly increasing for one generator.
class UuidV7Generator final {
 public:
  // `clock` is not owned and must outlive the generator. Random bits come from the operating
  // system (getrandom); a failure to get them is a broken invariant and aborts the process.
  explicit UuidV7Generator(const Clock& clock);
  // For tests only: random bits from a pseudo-random sequence seeded with `seed`, so that the same
  // seed and the same clock readings give the same ids. Never use it for ids anyone may see:
  // they are predictable from a few samples.
  UuidV7Generator(const Clock& clock, std::uint64_t seed);
  UuidV7Generator(const UuidV7Generator&) = delete;
  UuidV7Generator& operator=(const UuidV7Generator&) = delete;

  // Returns a new id, greater than every id this generator returned before.
  Uuid Next();

 private:
  friend class UuidV7GeneratorTestPeer;  // sets the counter near overflow in tests
  static constexpr int kCounterBits = 42;

  void RestartCounter();     // REQUIRES: mu_ held
  std::uint64_t Random64();  // REQUIRES: mu_ held

  const Clock& clock_;
  std::mutex mu_;
  // Guarded by mu_:
  std::optional<std::mt19937_64> seeded_;  // set only by the test constructor
  std::array<std::uint8_t, 256> pool_{};   // bytes from the OS not used yet: pool_[pool_used_..]
  std::size_t pool_used_ = 256;
  std::int64_t last_millis_ = -1;
  std::uint64_t counter_ = 0;
};

// Returns a new version 7 UUID in text form from the process-wide generator (system clock,
// random bits from the operating system; a child process after fork() gets its own generator).
std::string NewUuidV7();

// Returns a claim's nonce (LeaseWrite::claim_nonce) as 32 lowercase hex digits: 64 bits the
// calling thread drew from the operating system's random source (again after a fork), then a
// per-thread counter. Unique to one claim attempt and not derivable from anything a client sends
// or an operator configures; one system call per thread, not per claim.
std::string NewClaimNonce();

}  // namespace idem

#endif  // IDEM_UUID_H_

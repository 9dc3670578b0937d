// A keyed transfer, one line of an idem-ledger input file, and the rules a line must follow.
//
//   {"key": "t-1", "from": "alice", "to": "bob", "amount": 5}
//
// Pure functions; safe to call from any thread.
#ifndef IDEM_EXAMPLES_LEDGER_TRANSFER_H_
#define IDEM_EXAMPLES_LEDGER_TRANSFER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace idem::ledger {

// The largest amount one transfer may move. It keeps every balance far inside a 64-bit integer
// on both SQLite and PostgreSQL, whatever the number of transfers.
inline constexpr int64_t kMaxAmount = 1'000'000'000'000;
// The longest account name accepted, in bytes.
inline constexpr size_t kMaxAccountBytes = 128;

struct Transfer {
  std::string key;   // the idempotency key: 1-255 visible ASCII characters
  std::string from;  // the account debited
  std::string to;    // the account credited
  int64_t amount = 0;

  friend bool operator==(const Transfer&, const Transfer&) = default;
};

// Parses one line: a JSON object with exactly the fields key, from, to (non-empty strings of at
// most kMaxAccountBytes without control characters; from != to) and amount (an integer from 1 to
// kMaxAmount).
// Errors: InvalidArgument saying what is wrong with the line (the caller adds the line number).
absl::StatusOr<Transfer> ParseTransfer(std::string_view line);

// Returns the line that ParseTransfer reads back as `transfer`: one JSON object, no newline.
std::string FormatTransfer(const Transfer& transfer);

}  // namespace idem::ledger

#endif  // IDEM_EXAMPLES_LEDGER_TRANSFER_H_

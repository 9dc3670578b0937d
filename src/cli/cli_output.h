// What idem's subcommands share about their output: stdout that could not be written (a full
// disk, a closed pipe, > /dev/full) is a failure, never a silent success; and how listings
// (idem keys, idem outbox) show ages and stored bytes.
#ifndef IDEM_CLI_CLI_OUTPUT_H_
#define IDEM_CLI_CLI_OUTPUT_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace idem::cli {

// Flushes `out` (stdout by default). Returns false, after "PROGRAM: cannot write the output:
// WHY" on stderr, when any output written to it so far was lost.
bool OutputWritten(std::string_view program, std::FILE* out = stdout);

// The time from `from_ms` to `to_ms` as a person reads it, with a leading '-' when negative: at
// most two units, the smaller rounded down ("350ms", "42s", "1m24s", "2h", "26h5m").
std::string Age(int64_t from_ms, int64_t to_ms);

// true when `bytes` are valid UTF-8 (shown as text; otherwise as Base64).
bool IsText(std::string_view bytes);

}  // namespace idem::cli

#endif  // IDEM_CLI_CLI_OUTPUT_H_

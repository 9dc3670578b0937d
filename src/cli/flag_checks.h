// CLI11 validators that idem's subcommands share, so that the same kind of flag is refused the
// same way everywhere (with a short message, never CLI11's 310-digit range of a double).
#ifndef IDEM_CLI_FLAG_CHECKS_H_
#define IDEM_CLI_FLAG_CHECKS_H_

#include "cli/commands.h"

namespace idem::cli {

// A whole number from 0 to 2^64-1 (a seed). "-1", "1.5" and "" are refused: CLI11 itself would
// read "-1" into an unsigned flag as 18446744073709551615.
CLI::Validator Uint64Flag();

}  // namespace idem::cli

#endif  // IDEM_CLI_FLAG_CHECKS_H_

// What idem's subcommands share about their output: stdout that could not be written (a full
// disk, a closed pipe, > /dev/full) is a failure, never a silent success.
#ifndef IDEM_CLI_CLI_OUTPUT_H_
#define IDEM_CLI_CLI_OUTPUT_H_

#include <cstdio>
#include <string_view>

namespace idem::cli {

// Flushes `out` (stdout by default). Returns false, after "PROGRAM: cannot write the output:
// WHY" on stderr, when any output written to it so far was lost.
bool OutputWritten(std::string_view program, std::FILE* out = stdout);

}  // namespace idem::cli

#endif  // IDEM_CLI_CLI_OUTPUT_H_

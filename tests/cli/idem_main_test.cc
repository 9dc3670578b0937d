// The `idem` program's own command line, end to end on the real binary (IDEM_BINARY): the
// version it prints is the project's, and a subcommand it does not have is a usage error (exit
// 2) however it is asked, never the top-level help with exit 0.
#include <gtest/gtest.h>

#include <string>

#include "idem_process.h"

namespace idem::testing {
namespace {

TEST(IdemProgram, VersionPrintsTheProjectVersion) {
  CallRun r = Idem({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("idem ") + IDEM_PROJECT_VERSION + "\n");
}

TEST(IdemProgram, UnknownSubcommandIsAUsageError) {
  CallRun r = Idem({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no subcommand named 'frobnicate'"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(IdemProgram, UnknownSubcommandFollowedByHelpIsAUsageError) {
  for (const char* help : {"--help", "-h"}) {
    CallRun r = Idem({"frobnicate", help});
    EXPECT_EQ(r.exit_code, 2) << help;
    EXPECT_NE(r.err.find("no subcommand named 'frobnicate'"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << help;
  }
}

TEST(IdemProgram, HelpBeforeAnUnknownSubcommandIsAUsageError) {
  CallRun r = Idem({"--help", "frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no subcommand named 'frobnicate'"), std::string::npos) << r.err;
}

TEST(IdemProgram, HelpForAnUnknownSubcommandIsAUsageError) {
  CallRun r = Idem({"help", "frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no subcommand named 'frobnicate'"), std::string::npos) << r.err;
}

TEST(IdemProgram, KnownSubcommandHelpExitsZero) {
  CallRun r = Idem({"sim", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("sim"), std::string::npos) << r.out;
}

TEST(IdemProgram, TopLevelHelpExitsZero) {
  CallRun r = Idem({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Usage"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace idem::testing

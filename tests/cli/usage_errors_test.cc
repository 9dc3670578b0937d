// Usage errors found after the command line is parsed (issue 26, item 6): a port out of range, an
// address or URL that does not parse, a store URI of no known scheme, given as a flag or in
// idem serve's config file. Each exits 2 with one line "idem serve: ..." (or "idem relay: ..."),
// as the parser's own errors do, never a log-formatted line and exit 1. What the environment
// refuses (an address that cannot be bound) stays exit 1 for idem serve.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "idem_process.h"

namespace idem::testing {
namespace {

// A store file in the test's temporary directory (idem serve creates it when it gets that far).
std::string StorePath() { return ::testing::TempDir() + "idem-usage-errors.db"; }

// The flags of a gateway that would start, each replaced by a case's own.
std::vector<std::string> ServeArgs(const std::vector<std::string>& over) {
  std::vector<std::string> args = {"serve"};
  auto has = [&](const char* flag) {
    for (const std::string& a : over)
      if (a == flag) return true;
    return false;
  };
  if (!has("--listen")) args.insert(args.end(), {"--listen", "127.0.0.1:0"});
  if (!has("--upstream")) args.insert(args.end(), {"--upstream", "http://127.0.0.1:1"});
  if (!has("--store")) args.insert(args.end(), {"--store", "sqlite:" + StorePath()});
  args.insert(args.end(), over.begin(), over.end());
  return args;
}

// One line on stderr, starting with `prefix`, naming `says`.
void ExpectOneUsageLine(const CallRun& r, const std::string& prefix, const std::string& says) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line:\n" << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << "want '" << says << "' in: " << r.err;
}

struct Case {
  std::vector<std::string> args;
  std::string says;
};

TEST(ServeUsageErrors, BadAddressesPortsAndStoreUrisInFlagsExit2WithOneLine) {
  const std::vector<Case> cases = {
      {{"--listen", "127.0.0.1:99999"}, "--listen '127.0.0.1:99999': the port must be 0-65535"},
      {{"--listen", "localhost"}, "--listen 'localhost': no port"},
      {{"--listen", "my-host:8080"}, "the host must be a numeric IP address"},
      {{"--admin", "127.0.0.1:70000"}, "--admin '127.0.0.1:70000'"},
      {{"--upstream", "http://127.0.0.1:99999"}, "a port is a number from 1 to 65535"},
      {{"--upstream", "ftp://127.0.0.1:21"}, "--upstream"},
      {{"--store", "mysql://127.0.0.1/db"}, "has no known scheme"},
      {{"--lease", "5x"}, "--lease"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[0] + " " + c.args[1]);
    ExpectOneUsageLine(Idem(ServeArgs(c.args)), "idem serve: ", c.says);
  }
}

TEST(ServeUsageErrors, BadAddressesAndPortsInTheConfigFileExit2WithOneLine) {
  std::string dir = ::testing::TempDir() + "idem-usage-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::vector<Case> cases = {
      {{"listen = \"127.0.0.1:99999\""}, "the port must be 0-65535"},
      {{"admin = \"0.0.0.0\""}, "no port"},
      {{"upstream = \"http://127.0.0.1:0\""}, "a port is a number from 1 to 65535"},
      {{"store = \"redis://127.0.0.1\""}, "has no known scheme"},
      {{"retention = \"1 day\""}, "retention"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[0]);
    const std::string path = dir + "/idem.toml";
    std::ofstream(path) << c.args[0] << "\n";
    // Only the config file names the setting, so its value is the one checked.
    std::vector<std::string> args = {"serve", "--config", path};
    if (c.args[0].rfind("listen", 0) != 0) args.insert(args.end(), {"--listen", "127.0.0.1:0"});
    if (c.args[0].rfind("upstream", 0) != 0)
      args.insert(args.end(), {"--upstream", "http://127.0.0.1:1"});
    if (c.args[0].rfind("store", 0) != 0)
      args.insert(args.end(), {"--store", "sqlite:" + StorePath()});
    ExpectOneUsageLine(Idem(args), "idem serve: ", c.says);
  }
  std::filesystem::remove_all(dir);
}

// An address that parses but cannot be bound is the environment's refusal, not a usage error.
TEST(ServeUsageErrors, AnAddressThatCannotBeBoundStillExits1) {
  CallRun r = Idem(ServeArgs({"--listen", "192.0.2.1:8080"}));  // TEST-NET-1: not this host's
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot listen"), std::string::npos) << r.err;
}

// Each is found before the store is opened (its file does not exist).
TEST(RelayUsageErrors, BadAddressesPortsDurationsAndStoreUrisExit2WithOneLine) {
  const std::string absent = "sqlite:" + ::testing::TempDir() + "idem-usage-absent.db";
  const std::vector<std::string> base = {
      "relay", "--sink", "http", "--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--once"};
  const std::vector<Case> cases = {
      {{"--store", absent, "--url", "http://127.0.0.1:99999/hooks"},
       "a port is a number from 1 to 65535"},
      {{"--store", absent, "--url", "http://127.0.0.1:1/h", "--admin", "127.0.0.1:99999"},
       "--admin '127.0.0.1:99999': the port must be 0-65535"},
      {{"--store", absent, "--url", "http://127.0.0.1:1/h", "--lease", "5x"}, "--lease"},
      {{"--store", "mysql://127.0.0.1/db", "--url", "http://127.0.0.1:1/h"}, "no known scheme"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[1] + " " + c.args[3]);
    std::vector<std::string> args = base;
    args.insert(args.end(), c.args.begin(), c.args.end());
    ExpectOneUsageLine(Idem(args), "idem relay: ", c.says);
  }
}

}  // namespace
}  // namespace idem::testing

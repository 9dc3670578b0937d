// `idem call`, `idem sim` and `idem` itself used as a careless or hostile user would (issue 12):
// empty or doubled keys, a directory as the body, output to a full device, odd numbers, unknown
// flags, nested help. End to end on the real binary (IDEM_BINARY); for `idem call`, what reached
// the server is checked too: a refused command line sends nothing.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "idem_process.h"
#include "test_http_server.h"

namespace idem::testing {
namespace {

struct Refusal {
  std::vector<std::string> args;  // after "call"; the URL is appended
  std::string says;               // part of the message on stderr
};

TEST(IdemCallHostile, RefusedCommandLinesExit2AndSendNothing) {
  TestHttpServer server;
  std::string dir = ::testing::TempDir() + "idem-hostile-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::vector<Refusal> refusals = {
      // An empty key (--key "$UNSET") used to become a fresh UUIDv7 at every run.
      {{"--key", "", "-d", "a=1"}, "--key is empty"},
      {{"-H", "Idempotency-Key:", "-d", "a=1"}, "'Idempotency-Key:' is empty"},
      {{"-H", "Idempotency-Key:   ", "-d", "a=1"}, "'Idempotency-Key:' is empty"},
      // Two key headers: -v showed one while the other was sent.
      {{"-H", "Idempotency-Key: a", "-H", "idempotency-key: b", "-d", "a=1"},
       "Idempotency-Key twice"},
      // A directory used to be sent as an empty body.
      {{"-d", "@" + dir}, "is a directory"},
      {{"-X", ""}, "-X is empty"},
      {{"--budget-floor", "inf"}, "finite"},
      {{"--budget-ratio", "nan"}, "finite"},
      {{"--seed", "-1"}, "--seed"},
  };
  for (const Refusal& refusal : refusals) {
    std::vector<std::string> args = {"call"};
    args.insert(args.end(), refusal.args.begin(), refusal.args.end());
    args.push_back(server.Url("/ok"));
    CallRun r = Idem(args);
    EXPECT_EQ(r.exit_code, 2) << refusal.says << ": " << r.err;
    EXPECT_NE(r.err.find(refusal.says), std::string::npos) << r.err;
    EXPECT_LT(r.err.size(), 300u) << r.err;
  }
  EXPECT_EQ(server.requests().size(), 0u);
  std::filesystem::remove_all(dir);
}

TEST(IdemCallHostile, AnswerThatCannotBeWrittenOutExits6) {
  TestHttpServer server;
  CallRun r = Idem({"call", server.Url("/ok")}, {.stdout_path = "/dev/full"});
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_NE(r.err.find("idem call: cannot write the output"), std::string::npos) << r.err;
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(IdemCallHostile, UnknownFlagIsNamedEvenWithoutAUrl) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"call", "--bogus"},
        std::vector<std::string>{"call", "--bogus", "http://127.0.0.1:1/"}}) {
    CallRun r = Idem(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("idem: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("url is required"), std::string::npos) << r.err;
  }
}

TEST(IdemCallHostile, OutputFlagWritesTheBodyToTheFile) {
  TestHttpServer server;
  const std::string file = ::testing::TempDir() + "idem-hostile-output.txt";
  CallRun r = Idem({"call", "-o", file, server.Url("/ok")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  std::ifstream in(file);
  std::stringstream body;
  body << in.rdbuf();
  EXPECT_EQ(body.str(), "ok");
  std::filesystem::remove(file);
}

TEST(IdemCallHostile, OutputFileThatCannotBeCreatedIsAUsageErrorAndSendsNothing) {
  TestHttpServer server;
  CallRun r = Idem({"call", "-o", "/nonexistent-dir/x", "-d", "a=1", server.Url("/ok")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-o /nonexistent-dir/x: cannot write"), std::string::npos) << r.err;
  EXPECT_EQ(server.requests().size(), 0u);
}

TEST(IdemCallHostile, JsonPrintsStatusAttemptsStopReasonAndKey) {
  TestHttpServer server;
  CallRun r = Idem({"call", "--json", "--key", "k-1", "--base", "5ms", "--cap", "10ms", "-d", "a=1",
                    server.Url("/flaky?fail=1")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find("\"elapsed_ms\"")),
            R"({"exit_code":0,"status":200,"attempts":2,"stop":"succeeded",)"
            R"("stop_text":"succeeded",)");
  EXPECT_NE(r.out.find(R"("key":"k-1"})"), std::string::npos) << r.out;
}

TEST(IdemCallHostile, FailPrintsNoBodyForAFinalErrorAndSilentNoReason) {
  TestHttpServer server;
  CallRun failed = Idem({"call", "--fail", server.Url("/bad-request")});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(failed.out, "");
  CallRun silent = Idem(
      {"call", "-s", "--retries", "0", "http://127.0.0.1:" + std::to_string(UnusedPort()) + "/"});
  EXPECT_EQ(silent.exit_code, 3);
  EXPECT_EQ(silent.err, "");
}

TEST(IdemCallHostile, AnswerBeyondTheSizeLimitIsNotRetriedAndSaidPlainly) {
  TestHttpServer server;
  CallRun r = Idem({"call", "--max-body", "1", "--retries", "3", server.Url("/ok")});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("body larger than the limit of 1 bytes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("after 1 attempt"), std::string::npos) << r.err;
  EXPECT_EQ(server.requests().size(), 1u);
  CallRun bad = Idem({"call", "--max-header", "12", server.Url("/ok")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--max-header"), std::string::npos) << bad.err;
}

TEST(IdemCallHostile, UnknownHostIsNotRetried) {
  CallRun r =
      Idem({"call", "-v", "--retries", "3", "--base", "5ms", "http://no-such-host.invalid:8080/x"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("attempt 2/"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not retried"), std::string::npos) << r.err;
}

TEST(IdemServeHostile, StorePasswordNeverReachesTheLog) {
  for (const char* store : {"host=127.0.0.1 port=1 password='se cret' connect_timeout=1",
                            "postgresql://app:se%20cret@127.0.0.1:1/db?connect_timeout=1"}) {
    CallRun r = Idem(
        {"serve", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1", "--store", store});
    EXPECT_NE(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("cannot open the store"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("cret"), std::string::npos) << r.err;
  }
}

TEST(IdemServeHostile, LockTimeoutIsAFlagAndABadOneIsAUsageError) {
  CallRun r = Idem({"serve", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1",
                    "--store", "sqlite::memory:", "--lock-timeout", "soon"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--lock-timeout"), std::string::npos) << r.err;
}

TEST(IdemSimHostile, OutputThatCannotBeWrittenExitsNonZero) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"sim", "backoff", "--runs", "2", "--clients", "10"},
        std::vector<std::string>{"sim", "backoff", "--runs", "2", "--clients", "10", "--format",
                                 "json"},
        std::vector<std::string>{"sim", "amplify"}}) {
    CallRun r = Idem(args, {.stdout_path = "/dev/full"});
    EXPECT_EQ(r.exit_code, 1) << args[1];
    EXPECT_NE(r.err.find("cannot write the output"), std::string::npos) << r.err;
  }
}

TEST(IdemSimHostile, ProgressGoesToStderrAndLeavesStdoutAlone) {
  CallRun quiet = Idem({"sim", "backoff", "--runs", "3", "--clients", "10", "--format", "csv"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");  // a short run says nothing
  CallRun r =
      Idem({"sim", "backoff", "--runs", "3", "--clients", "10", "--format", "csv", "--progress"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, quiet.out);
  EXPECT_NE(r.err.find("idem sim backoff: 100% of the work done in"), std::string::npos) << r.err;
}

TEST(IdemProgramHostile, HelpOfANestedSubcommandIsPrinted) {
  CallRun r = Idem({"help", "sim", "backoff"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Usage: idem sim backoff"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--runs"), std::string::npos) << r.out;
  CallRun bad = Idem({"help", "sim", "frobnicate"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("'idem sim' has no subcommand named 'frobnicate'"), std::string::npos)
      << bad.err;
}

TEST(IdemProgramHostile, ParseErrorsCarryTheProgramName) {
  CallRun r = Idem({"sim", "backoff", "--runs", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("idem: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("--runs"), std::string::npos) << r.err;
}

TEST(IdemProgramHostile, BashCompletionOffersSubcommandsAndTheirFlags) {
  const std::string script = ::testing::TempDir() + "idem-completion.bash";
  CallRun made = Idem({"completion", "bash"}, {.stdout_path = script});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // Completes "idem sim b" and "idem call --data-b" in a real bash.
  const std::string probe =
      "bash -c 'source " + script +
      " && COMP_WORDS=(idem sim b) && COMP_CWORD=2 && _idem && echo \"${COMPREPLY[*]}\" && "
      "COMP_WORDS=(idem call --data-b) && COMP_CWORD=2 && _idem && echo \"${COMPREPLY[*]}\"'";
  FILE* pipe = popen(probe.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[256];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_EQ(out, "backoff\n--data-binary\n");
  std::filesystem::remove(script);
}

// The pages are built compressed (gzip -9n), as Debian installs them.
std::string ManPage(const std::string& page) {
  const std::string command = "gzip -dc " + std::string(IDEM_MAN_DIR) + "/" + page + ".gz";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string text;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
  pclose(pipe);
  return text;
}

TEST(IdemProgramHostile, ManPagesAreGeneratedFromTheHelp) {
  for (const char* page : {"idem.1", "idem-call.1", "idem-sim.1"}) {
    EXPECT_NE(ManPage(page).find(".TH IDEM"), std::string::npos) << page;
  }
  EXPECT_NE(ManPage("idem-call.1").find("data\\-binary"), std::string::npos);
}

}  // namespace
}  // namespace idem::testing

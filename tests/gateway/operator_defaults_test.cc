// Defaults an operator can rely on (issue 39): adding a [[route]] never unguards the paths it does
// not name (unless `unmatched = "pass"` says so), and the routing is logged at start and at each
// reload; `idem serve --check-config` (what the unit's ExecReload runs before SIGHUP); a config
// file holding the store's password that every user may read is warned about.
#include <sys/stat.h>

#include <csignal>

#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

constexpr const char* kWebhooksRoute = R"(
[[route]]
methods = ["POST"]
path_prefix = "/webhooks"
key = "required"
key_header = "webhook-id"
)";

class OperatorDefaultsE2E : public GatewayFixture {
 protected:
  int Count(const std::string& text) const {
    int n = 0;
    const std::string log = Log();
    for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++n;
    return n;
  }
  RunResult CheckConfig(const std::string& path, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {IDEM_BINARY, "serve", "--config", path, "--check-config"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunToExit(argv, dir_);
  }
};

TEST_F(OperatorDefaultsE2E, OneWebhooksRouteKeepsEveryOtherPathGuarded) {
  StartGateway({"--config", Config(kWebhooksRoute)});
  ASSERT_EQ(Post("charge-1").status, 201);
  const Response again = Post("charge-1");
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 1) << "the same key twice on /charges ran twice";
  // The route still guards its own path, with its own key header.
  ASSERT_EQ(Send(port_, "POST", "/webhooks/stripe", {{"webhook-id", "msg_1"}}, kBody).status, 201);
  EXPECT_EQ(Send(port_, "POST", "/webhooks/stripe", {{"webhook-id", "msg_1"}}, kBody)
                .Header("Idempotent-Replayed"),
            "true");
  EXPECT_EQ(Stat("calls"), 2);
  EXPECT_NE(Log().find("routes: POST /webhooks guarded (key from header webhook-id, required); "
                       "POST, PATCH on every other path guarded (key from header "
                       "Idempotency-Key, optional)"),
            std::string::npos)
      << Log();
}

TEST_F(OperatorDefaultsE2E, UnmatchedPassLetsOtherPathsThroughAndReloadLogsTheRouting) {
  const std::string file = Config(std::string("unmatched = \"pass\"\n") + kWebhooksRoute);
  StartGateway({"--config", file});
  ASSERT_EQ(Post("charge-2").status, 201);
  const Response again = Post("charge-2");
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("calls"), 2);
  EXPECT_EQ(Count("routes: POST /webhooks guarded (key from header webhook-id, required); every "
                  "other path passes through unguarded (unmatched = \"pass\")"),
            1)
      << Log();
  // Reloaded without `unmatched`: /charges is guarded again, and the log says so.
  WriteFile(file, kWebhooksRoute);
  gateway_->Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] { return Count("on every other path guarded") == 1; })) << Log();
  ASSERT_EQ(Post("charge-3").status, 201);
  EXPECT_EQ(Post("charge-3").Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 3);
}

TEST_F(OperatorDefaultsE2E, CheckConfigSaysOkOrNamesFileLineAndProblemWithExit2) {
  const std::string good =
      Config(std::string("listen = \"127.0.0.1:0\"\nupstream = \"") + Upstream() +
                 "\"\nstore = \"" + store_ + "\"\n" + kWebhooksRoute,
             "good.toml");
  const RunResult ok = CheckConfig(good);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(ok.output, "config ok\n");

  const std::string typo = Config("listen = \"127.0.0.1:0\"\nleese = \"5s\"\n", "typo.toml");
  const RunResult bad = CheckConfig(typo);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_EQ(bad.output,
            "idem serve: " + typo + ":2:1: unknown setting 'leese'; see idem-serve.toml(5)\n");

  // A problem across settings is named with the file too.
  const std::string slow =
      Config(std::string("listen = \"127.0.0.1:0\"\nupstream = \"") + Upstream() +
                 "\"\nstore = \"" + store_ + "\"\nlease = \"5s\"\nupstream_timeout = \"10s\"\n",
             "slow.toml");
  const RunResult across = CheckConfig(slow);
  EXPECT_EQ(across.exit_code, 2) << across.output;
  EXPECT_EQ(
      across.output.rfind("idem serve: " + slow + ": --upstream-timeout (10s) must be shorter", 0),
      0u)
      << across.output;

  const RunResult scheme = CheckConfig(good, {"--store", "mysql://localhost/idem"});
  EXPECT_EQ(scheme.exit_code, 2) << scheme.output;
  EXPECT_NE(scheme.output.find("has no known scheme"), std::string::npos) << scheme.output;

  const RunResult missing = CheckConfig(dir_ + "/absent.toml");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("cannot read config file " + dir_ + "/absent.toml"),
            std::string::npos)
      << missing.output;
}

TEST_F(OperatorDefaultsE2E, ConfigWithAPasswordReadableByEveryoneIsWarnedAboutAtStart) {
  // Nothing listens on the store's port: the start fails once the warning is written.
  const std::string file =
      Config(std::string("listen = \"127.0.0.1:0\"\nupstream = \"") + Upstream() +
                 "\"\nstore = \"postgresql://idem:s3cret-pw@"
                 "127.0.0.1:" +
                 std::to_string(FreePort()) + "/idem\"\n",
             "pw.toml");
  ASSERT_EQ(chmod(file.c_str(), 0644), 0);
  const std::vector<std::string> start = {IDEM_BINARY, "serve", "--config", file};
  const RunResult open = RunToExit(start, dir_);
  EXPECT_NE(open.exit_code, 0) << open.output;
  EXPECT_NE(open.output.find("warning " + file +
                             " holds the store's password and every user may read it (mode 0644)"),
            std::string::npos)
      << open.output;
  EXPECT_EQ(open.output.find("s3cret-pw"), std::string::npos) << open.output;
  const RunResult checked = CheckConfig(file);
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("idem serve: warning: " + file + " holds the store's password"),
            std::string::npos)
      << checked.output;

  ASSERT_EQ(chmod(file.c_str(), 0640), 0);
  const RunResult closed = RunToExit(start, dir_);
  EXPECT_NE(closed.exit_code, 0) << closed.output;
  EXPECT_EQ(closed.output.find("holds the store's password"), std::string::npos) << closed.output;
  EXPECT_EQ(CheckConfig(file).output, "config ok\n");
}

}  // namespace
}  // namespace idem::e2e

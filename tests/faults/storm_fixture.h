// The fixture of the store fault tests: the real examples/charges upstream, two real `idem serve`
// processes on the store the test names (store_), a Storm of duplicate clients over both, and the
// checks of issue 22's rule once the storm is over: per key, every client that got a final answer
// got the same one, the recorded answer (replayed by a third gateway that has no replay cache, so
// it reads the store) is the upstream's last execution, and, when every outage was shorter than
// the lease, no key ran twice.
#ifndef IDEM_TESTS_FAULTS_STORM_FIXTURE_H_
#define IDEM_TESTS_FAULTS_STORM_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "storm.h"

namespace idem::faults {

using Millis = std::chrono::milliseconds;

class FaultStormFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/idem-faults-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    charges_port_ = e2e::FreePort();
    charges_ = std::make_unique<e2e::Child>(
        std::vector<std::string>{CHARGES_BINARY, "--listen",
                                 "127.0.0.1:" + std::to_string(charges_port_)},
        dir_ + "/charges.log");
    ASSERT_TRUE(
        e2e::Eventually([&] { return e2e::Send(charges_port_, "GET", "/stats").status == 200; }));
    for (int i = 0; i < 3; ++i) {
      ports_[i] = e2e::FreePort();
      admin_ports_[i] = e2e::FreePort();
    }
  }

  void TearDown() override {
    StopGateways();
    charges_.reset();
    if (HasFailure()) {
      for (int i = 0; i < 3; ++i) std::cerr << LogTail(i, 60);
    }
    if (std::getenv("IDEM_FAULTS_KEEP") == nullptr) std::filesystem::remove_all(dir_);
  }

  void StopGateways() {
    for (auto& gateway : gateways_) gateway.reset();
  }

  std::string LogPath(int i) const { return dir_ + "/idem-" + std::string(1, 'a' + i) + ".log"; }

  std::string LogTail(int i, size_t lines) const {
    const std::string log = e2e::ReadFile(LogPath(i));
    if (log.empty()) return "";
    size_t at = log.size();
    for (size_t n = 0; n <= lines && at != std::string::npos && at > 0; ++n)
      at = log.rfind('\n', at - 1);
    return "---- last lines of " + LogPath(i) + " ----\n" +
           (at == std::string::npos ? log : log.substr(at + 1)) + "\n";
  }

  // Starts gateway `i` (0 and 1: the storm's two; 2: the one that reads the outcomes back).
  void StartGateway(int i, const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {
        IDEM_BINARY,    "serve",
        "--listen",     "127.0.0.1:" + std::to_string(ports_[i]),
        "--upstream",   "http://127.0.0.1:" + std::to_string(charges_port_),
        "--store",      store_,
        "--admin",      "127.0.0.1:" + std::to_string(admin_ports_[i]),
        "--io-threads", "2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    gateways_[i] = std::make_unique<e2e::Child>(argv, LogPath(i));
    e2e::Eventually([&] {
      return !gateways_[i]->Running() ||
             e2e::Send(admin_ports_[i], "GET", "/healthz").status == 200;
    });
    ASSERT_TRUE(gateways_[i]->Running()) << LogTail(i, 40);
  }

  void StartGateways(const std::vector<std::string>& flags) {
    flags_ = flags;
    StartGateway(0, flags);
    StartGateway(1, flags);
  }

  StormOptions Options(const std::string& prefix, int keys, int pairs) const {
    StormOptions options;
    options.key_prefix = prefix;
    options.keys = keys;
    options.pairs = pairs;
    options.ports = {ports_[0], ports_[1]};
    return options;
  }

  // Runs `fault` (fixture commands) and keeps how long it took: the outage as the test bounds it.
  template <class F>
  void Outage(F&& fault) {
    const auto start = std::chrono::steady_clock::now();
    fault();
    const auto took = std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - start);
    longest_outage_ = std::max(longest_outage_, took);
    std::cout << "outage took " << took.count() << " ms" << std::endl;
  }

  // The checks, once the storm is over: replays every key through a third gateway without a
  // replay cache and compares the ledgers. `lease` is the storm's gateways' lease.
  void ExpectOneAnswerPerKey(const Storm& storm, Millis lease) {
    std::vector<std::string> flags = flags_;
    flags.insert(flags.end(), {"--cache-bytes", "0"});
    StartGateway(2, flags);
    if (HasFatalFailure()) return;
    const UpstreamLedger upstream = ParseStats(e2e::Send(charges_port_, "GET", "/stats").body);
    const Verdict v = CheckStorm(storm, upstream, [&](int i) {
      return e2e::Send(ports_[2], "POST", "/charges",
                       {{"Idempotency-Key", storm.Key(i)}, {"Content-Type", "application/json"}},
                       storm.Body(i));
    });
    std::cout << "storm answers: " << storm.StatusSummary() << "\n" << v.Summary() << "\n";
    for (int i = 0; i < 2; ++i) {
      const std::string metrics = e2e::Send(admin_ports_[i], "GET", "/metrics").body;
      std::cout << "gateway " << static_cast<char>('a' + i) << ": failed store commits "
                << e2e::MetricValue(metrics, "idem_store_failed_commits_total")
                << ", store unavailable answers "
                << e2e::MetricValue(metrics, "idem_requests_total{decision=\"store_unavailable\"}")
                << "\n";
    }
    std::cout << std::flush;
    int64_t felt = 0;  // answers that say the store (or the gateway's wait on it) failed
    for (const auto& [status, count] : storm.StatusCounts()) felt += status >= 500 ? count : 0;
    EXPECT_GT(felt, 0) << "no client met the store fault: the run proves nothing";
    EXPECT_EQ(v.two_answers, 0) << "keys whose two clients got different answers";
    EXPECT_EQ(v.answer_not_recorded, 0) << "keys whose client got an answer that is not recorded";
    EXPECT_EQ(v.recorded_not_last, 0) << "keys whose recorded answer is not the last execution";
    EXPECT_EQ(v.unrecorded, 0) << "keys with no recorded answer";
    EXPECT_EQ(v.unanswered, 0) << "keys a client gave up on (no 201 within its bound)";
    if (longest_outage_ < lease) {
      EXPECT_EQ(v.ran_twice, 0) << "keys the upstream ran twice, though every outage ("
                                << longest_outage_.count() << " ms at most) was shorter than the "
                                << lease.count() << " ms lease";
    } else {
      std::cout << "note: an outage (" << longest_outage_.count() << " ms) outlasted the lease ("
                << lease.count() << " ms): a key may run twice, and was not checked for it\n";
    }
  }

  std::string dir_, store_;
  int charges_port_ = 0;
  int ports_[3] = {}, admin_ports_[3] = {};
  std::vector<std::string> flags_;
  std::unique_ptr<e2e::Child> charges_, gateways_[3];
  Millis longest_outage_{0};
};

}  // namespace idem::faults

#endif  // IDEM_TESTS_FAULTS_STORM_FIXTURE_H_

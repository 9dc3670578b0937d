// Store faults end to end on PostgreSQL (issue 22): two gateways on one server, duplicate clients
// at both (tests/faults/storm.h), while the test's private server (the "postgres_storm" fixture,
// never a server other tests use) is stopped as by a power cut (pg_ctl stop -m immediate), started
// again a few seconds later, and later restarted (-m fast). Every key has one answer, the one
// recorded, the upstream's last execution, and no key ran twice: every outage is shorter than the
// lease (20 s: a loaded machine took 9 s to bring the server back through crash recovery).
#include <cstdlib>
#include <string>
#include <thread>

#include "pg_test_support.h"
#include "storm_fixture.h"

namespace idem::faults {
namespace {

using namespace std::chrono_literals;

constexpr int kKeys = 200;
constexpr int kPairs = 8;

// Runs the fixture script on this test's private server (IDEM_PG_FIXTURE_DIR).
bool PgFixture(const std::string& command) {
  const char* dir = std::getenv("IDEM_PG_FIXTURE_DIR");
  if (dir == nullptr) return false;
  const std::string line =
      std::string("'") + IDEM_PG_FIXTURE_SCRIPT + "' " + command + " '" + dir + "' >&2";
  return std::system(line.c_str()) == 0;
}

class PostgresFaultStormE2E : public FaultStormFixture {};

TEST_F(PostgresFaultStormE2E, PowerCutThenRestartEveryKeyHasOneAnswerItsLastExecutionRunOnce) {
  auto fresh = pgtest::CreateFreshSchemaUri();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  store_ = fresh->uri;
  StartGateways({"--lease", "20s", "--upstream-timeout", "5s"});
  Storm storm(Options("pg", kKeys, kPairs));
  storm.Start();
  // A moment into the run (a fifth of the keys answered by both clients): the power cut.
  ASSERT_TRUE(storm.WaitForAnswers(2 * kKeys / 5, 60s));
  Outage([&] {
    ASSERT_TRUE(PgFixture("crash"));
    std::this_thread::sleep_for(3s);  // the power cut's length: the fault schedule, not a wait
    ASSERT_TRUE(PgFixture("resume"));
  });
  if (HasFatalFailure()) return;
  // Once the run went on for another fifth of the keys: a fast restart.
  ASSERT_TRUE(storm.WaitForAnswers(storm.Answers() + 2 * kKeys / 5, 60s));
  Outage([&] { ASSERT_TRUE(PgFixture("restart")); });
  if (HasFatalFailure()) return;
  ASSERT_TRUE(storm.Finish(90s));
  ExpectOneAnswerPerKey(storm, 20s);
}

}  // namespace
}  // namespace idem::faults

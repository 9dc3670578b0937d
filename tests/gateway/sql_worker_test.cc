// idem serve and a worker calling the SQL functions of schema idem (docs/sql.md) on one
// PostgreSQL store share keys: the worker computes the gateway's fingerprint with
// `idem fingerprint`, replays what the gateway recorded, records what the gateway then replays,
// and both refuse the other's request under a key (mismatch / 422) and a key the other holds
// (in_progress / 409). PostgreSQL only (tests/gateway/CMakeLists.txt).
#include <gtest/gtest.h>
#include <stdio.h>

#include <memory>
#include <string>

#include "gateway_fixture.h"
#include "sql_session.h"

namespace idem::e2e {
namespace {

// The fingerprint `idem fingerprint` prints for a request (its trailing newline removed).
std::string FingerprintOf(const std::string& method, const std::string& target,
                          const std::string& body) {
  const std::string command = std::string(IDEM_BINARY) + " fingerprint --method '" + method +
                              "' --target '" + target + "' --body '" + body + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), &pclose);
  if (pipe == nullptr) return "<popen failed>";
  std::string out;
  char buffer[256];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe.get())) > 0) out.append(buffer, n);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class SqlWorkerE2E : public GatewayFixture {};

TEST_F(SqlWorkerE2E, AGatewayAndAnSqlWorkerShareOneKey) {
  ASSERT_TRUE(OnPostgres()) << "this test needs IDEM_E2E_STORE=postgres";
  StartGateway();
  const std::string fingerprint = FingerprintOf("POST", "/charges", kBody);
  ASSERT_EQ(fingerprint.size(), 64u) << fingerprint;
  std::string error;
  std::unique_ptr<pgtest::SqlSession> sql = pgtest::SqlSession::Open(store_, &error);
  ASSERT_NE(sql, nullptr) << error;
  constexpr const char* kBegin =
      "SELECT decision, status, convert_from(body, 'UTF8') FROM idem.begin($1, $2)";

  // The gateway first: the worker replays its recorded answer.
  const Response first = Post("shared-1");
  ASSERT_EQ(first.status, 201) << first.body << first.error;
  pgtest::SqlAnswer replay = sql->Exec(kBegin, {"shared-1", fingerprint});
  ASSERT_TRUE(replay.ok()) << replay.message;
  EXPECT_EQ(replay.At(0, 0), "replay");
  EXPECT_EQ(replay.At(0, 1), "201");
  EXPECT_EQ(replay.At(0, 2), first.body);
  EXPECT_EQ(sql->Exec(kBegin, {"shared-1", "another request"}).At(0, 0), "mismatch");

  // The worker first: the gateway replays the worker's outcome and never calls the upstream.
  ASSERT_TRUE(sql->Exec("BEGIN").ok());
  ASSERT_EQ(sql->Exec(kBegin, {"shared-2", fingerprint}).At(0, 0), "run");
  ASSERT_TRUE(sql->Exec("SELECT idem.finish('shared-2', 201, "
                        "'{\"Content-Type\": \"application/json\"}', "
                        "convert_to('{\"id\":\"ch_sql\"}', 'UTF8'))")
                  .ok());
  ASSERT_TRUE(sql->Exec("COMMIT").ok());
  const Response second = Post("shared-2");
  EXPECT_EQ(second.status, 201) << second.body << second.error;
  EXPECT_EQ(second.body, R"({"id":"ch_sql"})");
  EXPECT_EQ(second.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(second.Header("Content-Type"), "application/json");
  ExpectProblem(Post("shared-2", R"({"amount":1,"currency":"eur"})"), 422);
  EXPECT_EQ(Stat("charges"), 1);  // only the gateway's first request reached the upstream

  // A key the worker holds in lease mode is in flight to the gateway.
  ASSERT_EQ(sql->Exec("SELECT decision FROM idem.acquire('shared-3', $1, '1 minute')",
                      {fingerprint})
                .At(0, 0),
            "run");
  ExpectProblem(Post("shared-3"), 409);
  EXPECT_EQ(Stat("charges"), 1);
}

}  // namespace
}  // namespace idem::e2e

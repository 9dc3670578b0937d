// The guard on PostgreSQL against the same transaction written by hand with libpq:
//   BEGIN; claim INSERT … ON CONFLICT DO NOTHING; effect INSERT; outcome UPDATE; COMMIT
// Every iteration is a new key (a first arrival: the whole write path, one fsync'd commit).
// Threads are clients: 1, 8 and 32 at once, each on its own connection.
//
//   IDEM_BENCH_PG_URI=postgresql://… pg_guard_bench
// The database must hold idem's schema (opening the store migrates it) and nothing else matters.
// IDEM_BENCH_ITERATIONS=N runs exactly N operations per thread (no calibration runs), so that
// counts taken around the process (server CPU, statements, system calls) divide by a known N.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "idem/guard.h"
#include "idem/store.h"

namespace {

std::string Uri() {
  const char* uri = std::getenv("IDEM_BENCH_PG_URI");
  return uri != nullptr ? uri : "";
}

// One run id per process start, so that keys never collide with an earlier run's.
const std::string& RunId() {
  static const std::string id =
      fmt::format("{:x}", std::chrono::steady_clock::now().time_since_epoch().count());
  return id;
}

std::atomic<int64_t> next_key{0};

std::string NextKey(const char* prefix) {
  return fmt::format("{}-{}-{}", prefix, RunId(), next_key.fetch_add(1));
}

idem::Store* SharedStore(benchmark::State& state) {
  static std::once_flag once;
  static std::unique_ptr<idem::Store> store;
  std::call_once(once, [] {
    idem::StoreOptions options;
    options.max_connections = 64;
    absl::StatusOr<std::unique_ptr<idem::Store>> opened = idem::OpenStore(Uri(), options);
    if (opened.ok()) {
      store = *std::move(opened);
      auto tx = store->Begin();
      if (tx.ok()) {
        (void)(*tx)->Execute(
            "CREATE TABLE IF NOT EXISTS bench_effects (k text NOT NULL, v bigint)");
        (void)(*tx)->Commit();
      }
    } else {
      fmt::print(stderr, "cannot open {}: {}\n", Uri(), opened.status().ToString());
    }
  });
  if (store == nullptr) state.SkipWithError("set IDEM_BENCH_PG_URI to a reachable server");
  return store.get();
}

void BM_Guard(benchmark::State& state) {
  idem::Store* store = SharedStore(state);
  if (store == nullptr) return;
  idem::Guard guard(*store, idem::GuardOptions{.owner = "bench"});
  for (auto _ : state) {
    const std::string key = NextKey("g");
    absl::StatusOr<idem::GuardResult> result =
        guard.Run(idem::Scope{"bench", key}, "fp",
                  [&](idem::Transaction& tx) -> absl::StatusOr<idem::StoredResponse> {
                    const idem::SqlValue params[] = {key, int64_t{1}};
                    absl::StatusOr<int64_t> n =
                        tx.Execute("INSERT INTO bench_effects (k, v) VALUES ($1, $2)", params);
                    if (!n.ok()) return n.status();
                    return idem::StoredResponse{200, {}, "ok"};
                  });
    if (!result.ok()) {
      state.SkipWithError(result.status().ToString().c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

struct PgConnDeleter {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};

bool Ok(PGresult* result) {
  const ExecStatusType status = PQresultStatus(result);
  PQclear(result);
  return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

bool Rows(PGresult* result, int rows) {
  const bool ok = PQresultStatus(result) == PGRES_TUPLES_OK && PQntuples(result) == rows;
  PQclear(result);
  return ok;
}

bool Changed(PGresult* result, std::string_view rows) {
  const bool ok = PQresultStatus(result) == PGRES_COMMAND_OK && PQcmdTuples(result) == rows;
  PQclear(result);
  return ok;
}

// The same transaction, by hand: what a careful user writes with libpq and prepared statements.
// With `savepoint`, the effect runs inside SAVEPOINT … RELEASE as the guard's does (so that a
// deterministic failure can be rolled back alone and recorded).
void HandWritten(benchmark::State& state, bool savepoint) {
  if (SharedStore(state) == nullptr) return;  // the schema exists
  std::unique_ptr<PGconn, PgConnDeleter> conn(PQconnectdb(Uri().c_str()));
  PGconn* c = conn.get();
  bool ready =
      PQstatus(c) == CONNECTION_OK &&
      Ok(PQprepare(c, "claim",
                   "INSERT INTO idem_keys (tenant, key, fingerprint, state, fence, owner, "
                   "lease_until_ms, created_ms, updated_ms, expires_ms) VALUES ('bench', $1, 'fp', "
                   "1, 1, 'bench', $2, $2, $2, $2) ON CONFLICT (tenant, key) DO NOTHING "
                   "RETURNING fence",
                   2, nullptr)) &&
      Ok(PQprepare(c, "effect", "INSERT INTO bench_effects (k, v) VALUES ($1, 1)", 1, nullptr)) &&
      Ok(PQprepare(
          c, "outcome",
          "UPDATE idem_keys SET state = 2, status = 200, body = 'ok', updated_ms = $2, "
          "expires_ms = $2 WHERE tenant = 'bench' AND key = $1 AND fence = 1 AND state = 1",
          2, nullptr));
  if (!ready) {
    state.SkipWithError(PQerrorMessage(c));
    return;
  }
  for (auto _ : state) {
    const std::string key = NextKey("h");
    const std::string now = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count());
    const char* claim[] = {key.c_str(), now.c_str()};
    const char* effect[] = {key.c_str()};
    // Checked as a careful caller checks: the claim returned its row (the key was new) and the
    // outcome changed exactly that row, else nothing is committed.
    const bool done = Ok(PQexec(c, "BEGIN")) &&
                      Rows(PQexecPrepared(c, "claim", 2, claim, nullptr, nullptr, 0), 1) &&
                      (!savepoint || Ok(PQexec(c, "SAVEPOINT effect"))) &&
                      Ok(PQexecPrepared(c, "effect", 1, effect, nullptr, nullptr, 0)) &&
                      (!savepoint || Ok(PQexec(c, "RELEASE SAVEPOINT effect"))) &&
                      Changed(PQexecPrepared(c, "outcome", 2, claim, nullptr, nullptr, 0), "1") &&
                      Ok(PQexec(c, "COMMIT"));
    if (!done) {
      state.SkipWithError(PQerrorMessage(c));
      return;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_HandWritten(benchmark::State& state) { HandWritten(state, false); }
void BM_HandWrittenWithSavepoint(benchmark::State& state) { HandWritten(state, true); }

void Register(const char* name, void (*fn)(benchmark::State&)) {
  benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(name, fn);
  b->Threads(1)->Threads(8)->Threads(32)->UseRealTime();
  if (const char* n = std::getenv("IDEM_BENCH_ITERATIONS"); n != nullptr) {
    b->Iterations(std::strtoll(n, nullptr, 10));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Register("BM_HandWritten", BM_HandWritten);
  Register("BM_HandWrittenWithSavepoint", BM_HandWrittenWithSavepoint);
  Register("BM_Guard", BM_Guard);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

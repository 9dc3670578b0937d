#include "store/postgres/pg_connection.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <utility>

#include "common/status_macros.h"
#include "store/postgres/pg_error.h"

namespace idem::postgres {
namespace {

// Statements kept prepared per connection; past this, further distinct SQL runs unnamed, so a
// caller generating endless distinct SQL cannot grow the server's memory without bound.
constexpr size_t kMaxPrepared = 256;

void IgnoreNotice(void*, const char*) {}

}  // namespace

absl::StatusOr<std::unique_ptr<PgConnection>> PgConnection::Connect(const std::string& conninfo,
                                                                    std::string_view target,
                                                                    const std::string& session_sql,
                                                                    int connect_timeout_s) {
  // Entries before the expanded "dbname" are defaults the conninfo may override. TCP keepalives
  // notice a server that vanished without closing the socket within about 25 s of silence.
  const std::string timeout = std::to_string(connect_timeout_s);
  const char* const keys[] = {"connect_timeout",
                              "fallback_application_name",
                              "keepalives_idle",
                              "keepalives_interval",
                              "keepalives_count",
                              "dbname",
                              nullptr};
  const char* const values[] = {timeout.c_str(), "idem", "10", "5", "3", conninfo.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) return absl::ResourceExhaustedError("libpq could not allocate a connection");
  if (PQstatus(conn) != CONNECTION_OK) {
    absl::Status status = StatusFromConnectFailure(PQerrorMessage(conn), target);
    PQfinish(conn);
    return status;
  }
  // Notices ("relation already exists, skipping") are not errors; keep them off stderr.
  PQsetNoticeProcessor(conn, &IgnoreNotice, nullptr);
  std::unique_ptr<PgConnection> connection(new PgConnection(conn, /*owned=*/true));
  if (!session_sql.empty()) {
    Result result(PQexec(conn, session_sql.c_str()));
    absl::Status status = StatusFromResult(result.get(), conn, "session settings");
    if (!status.ok()) return status;
  }
  return connection;
}

std::unique_ptr<PgConnection> PgConnection::Borrow(PGconn* conn) {
  return std::unique_ptr<PgConnection>(new PgConnection(conn, /*owned=*/false));
}

PgConnection::~PgConnection() {
  if (owned_) PQfinish(conn_);
}

PgConnection::Prepared PgConnection::NameFor(const std::string& cache_key) {
  // A prepared statement would outlive this wrapper on a borrowed connection, and its name
  // could meet the next wrapper's.
  if (!owned_) return {};
  if (auto it = prepared_.find(cache_key); it != prepared_.end()) {
    return {cache_key, it->second, true};
  }
  if (prepared_.size() >= kMaxPrepared) return {};
  return {cache_key, fmt::format("idem_{}", next_name_++), false};
}

absl::Status PgConnection::Failed(const PGresult* result, absl::Status status) {
  const char* sqlstate = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  if (result == nullptr || PQstatus(conn_) != CONNECTION_OK ||
      (sqlstate != nullptr && IsConnectionLoss(sqlstate))) {
    broken_ = true;
    lost_ = true;
  }
  return status;
}

absl::StatusOr<Result> PgConnection::Run(std::string_view sql, std::span<const SqlValue> params,
                                         std::string_view what) {
  if (!deferred_.empty()) {
    const StatementRef statement{sql, params, what};
    IDEM_ASSIGN_OR_RETURN(std::vector<Result> results, RunRefs({&statement, 1}));
    return std::move(results.back());
  }
  last_used_ = std::chrono::steady_clock::now();
  IDEM_ASSIGN_OR_RETURN(EncodedParams encoded, EncodeParams(params));
  const std::string text(sql);
  return RunDirect(text, encoded, NameFor(text + '\x1f' + encoded.signature), what);
}

absl::StatusOr<Result> PgConnection::Run(const Statement& statement) {
  if (!statement.plan_per_run) return Run(statement.sql, statement.params, statement.what);
  const StatementRef ref{statement.sql, statement.params, statement.what, true};
  IDEM_ASSIGN_OR_RETURN(std::vector<Result> results, RunRefs({&ref, 1}));
  return std::move(results.back());
}

absl::StatusOr<Result> PgConnection::RunDirect(const std::string& sql, const EncodedParams& params,
                                               const Prepared& prepared, std::string_view what) {
  if (prepared.name.empty()) {
    Result result(PQexecParams(conn_, sql.c_str(), params.count(), params.types.data(),
                               params.values.data(), params.lengths.data(), params.formats.data(),
                               0));
    absl::Status status = StatusFromResult(result.get(), conn_, what);
    if (!status.ok()) return Failed(result.get(), std::move(status));
    return result;
  }
  if (!prepared.ready) {
    Result done(
        PQprepare(conn_, prepared.name.c_str(), sql.c_str(), params.count(), params.types.data()));
    absl::Status status = StatusFromResult(done.get(), conn_, what);
    if (!status.ok()) return Failed(done.get(), std::move(status));
    prepared_.emplace(prepared.key, prepared.name);
  }
  Result result(PQexecPrepared(conn_, prepared.name.c_str(), params.count(), params.values.data(),
                               params.lengths.data(), params.formats.data(), 0));
  absl::Status status = StatusFromResult(result.get(), conn_, what);
  if (!status.ok()) return Failed(result.get(), std::move(status));
  return result;
}

std::vector<Result> PgConnection::ReadPipeline(size_t commands) {
  // Each command's results end with a null; the sync's result ends the pipeline.
  std::vector<Result> results(commands);
  size_t index = 0;
  while (index <= commands) {
    PGresult* raw = PQgetResult(conn_);
    if (raw == nullptr) {
      if (PQstatus(conn_) != CONNECTION_OK) break;
      ++index;
      continue;
    }
    if (PQresultStatus(raw) == PGRES_PIPELINE_SYNC) {
      PQclear(raw);
      break;
    }
    if (index < commands && !results[index]) {
      results[index].reset(raw);
    } else {
      PQclear(raw);
    }
  }
  if (PQexitPipelineMode(conn_) != 1) broken_ = true;
  return results;
}

absl::StatusOr<std::vector<Result>> PgConnection::RunAll(std::span<const Statement> statements) {
  std::vector<StatementRef> refs;
  refs.reserve(statements.size());
  for (const Statement& s : statements) refs.push_back({s.sql, s.params, s.what, s.plan_per_run});
  return RunRefs(refs);
}

absl::StatusOr<std::vector<Result>> PgConnection::RunRefs(
    std::span<const StatementRef> statements) {
  last_used_ = std::chrono::steady_clock::now();
  // The deferred statements go first, in the order they were queued; the caller's after them.
  // They stay queued until the pipeline is about to be sent (a parameter that cannot be encoded
  // sends nothing); moving the vector keeps the elements `all` points into.
  std::vector<StatementRef> all;
  all.reserve(deferred_.size() + statements.size());
  for (const Deferred& d : deferred_) {
    // Parameterless ones (BEGIN, savepoints with any name) are sent unnamed, as simple commands.
    all.push_back({d.sql, d.params, d.what, /*plan_per_run=*/d.params.empty()});
  }
  all.insert(all.end(), statements.begin(), statements.end());
  struct Planned {
    std::string sql;
    EncodedParams params;
    Prepared prepared;
    bool prepare = false;  // this pipeline prepares it
  };
  std::vector<Planned> planned(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    Planned& p = planned[i];
    p.sql = std::string(all[i].sql);
    IDEM_ASSIGN_OR_RETURN(p.params, EncodeParams(all[i].params));
    const std::string key = p.sql + '\x1f' + p.params.signature;
    // A statement already prepared earlier in this pipeline is not prepared twice.
    const auto earlier =
        std::find_if(planned.begin(), planned.begin() + static_cast<std::ptrdiff_t>(i),
                     [&](const Planned& e) { return e.prepare && e.prepared.key == key; });
    if (earlier != planned.begin() + static_cast<std::ptrdiff_t>(i)) {
      p.prepared = {key, earlier->prepared.name, true};
      continue;
    }
    if (all[i].plan_per_run) continue;  // unnamed: planned for its values
    p.prepared = NameFor(key);
    p.prepare = !p.prepared.name.empty() && !p.prepared.ready;
  }

  std::vector<Deferred> deferred = std::move(deferred_);
  deferred_.clear();
  failed_deferred_ = false;

  // What each pipelined command is: a prepare or an execution of planned[i].
  enum class Kind { kPrepare, kExecute };
  std::vector<std::pair<Kind, size_t>> commands;
  bool sent = PQenterPipelineMode(conn_) == 1;
  for (size_t i = 0; i < planned.size(); ++i) {
    const Planned& p = planned[i];
    if (p.prepare) {
      sent = sent && PQsendPrepare(conn_, p.prepared.name.c_str(), p.sql.c_str(), p.params.count(),
                                   p.params.types.data()) == 1;
      commands.emplace_back(Kind::kPrepare, i);
    }
    if (p.prepared.name.empty()) {
      sent = sent && PQsendQueryParams(conn_, p.sql.c_str(), p.params.count(),
                                       p.params.types.data(), p.params.values.data(),
                                       p.params.lengths.data(), p.params.formats.data(), 0) == 1;
    } else {
      sent = sent && PQsendQueryPrepared(conn_, p.prepared.name.c_str(), p.params.count(),
                                         p.params.values.data(), p.params.lengths.data(),
                                         p.params.formats.data(), 0) == 1;
    }
    commands.emplace_back(Kind::kExecute, i);
  }
  const std::string_view first_what = statements.empty() ? "pipeline" : statements[0].what;
  if (!(sent && PQpipelineSync(conn_) == 1)) {
    return Failed(nullptr, StatusFromResult(nullptr, conn_, first_what));
  }
  std::vector<Result> results = ReadPipeline(commands.size());
  std::vector<Result> out;
  out.reserve(statements.size());
  for (size_t c = 0; c < commands.size(); ++c) {
    const auto [kind, i] = commands[c];
    if (i < deferred.size()) {
      if (!StatusFromResult(results[c].get(), conn_, first_what).ok()) {
        failed_deferred_ = true;
        const std::string what =
            deferred[i].what.empty()
                ? fmt::format("{} (before it: {})", first_what, deferred[i].sql)
                : fmt::format("{} (sent before the {})", deferred[i].what, first_what);
        return Failed(results[c].get(), StatusFromResult(results[c].get(), conn_, what));
      }
      if (kind == Kind::kPrepare)
        prepared_.emplace(planned[i].prepared.key, planned[i].prepared.name);
      continue;
    }
    absl::Status status = StatusFromResult(results[c].get(), conn_, all[i].what);
    if (!status.ok()) return Failed(results[c].get(), std::move(status));
    if (kind == Kind::kPrepare) {
      prepared_.emplace(planned[i].prepared.key, planned[i].prepared.name);
    } else {
      out.push_back(std::move(results[c]));
    }
  }
  return out;
}

bool PgConnection::Ping() {
  Result result(PQexec(conn_, ""));
  return result != nullptr && PQresultStatus(result.get()) == PGRES_EMPTY_QUERY;
}

}  // namespace idem::postgres

// One libpq connection: statements prepared once per connection and reused, and statements that
// carry no answer of their own (BEGIN, SET LOCAL, SAVEPOINT, an outcome checked on the server)
// sent in the same round trip as the next statement (libpq pipeline mode).
//
// Thread-safety: a PgConnection is used by one thread at a time (the pool hands it out).
#ifndef IDEM_STORE_POSTGRES_PG_CONNECTION_H_
#define IDEM_STORE_POSTGRES_PG_CONNECTION_H_

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/transaction.h"
#include "store/postgres/pg_values.h"

namespace idem::postgres {

struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// A statement with its parameters ($1..$N), for PgConnection::RunAll. `sql` must outlive the call.
struct Statement {
  std::string_view sql;
  std::vector<SqlValue> params;
  std::string what;  // names the operation in messages
  // true: planned at every run for its parameters' values (sent unnamed), never run from a plan
  // cached for any values: for a join over arrays, whose best plan depends on their length and
  // on the table's size at the time (a plan made while the table was small scans it whole).
  bool plan_per_run = false;
};

class PgConnection final {
 public:
  // Connects with `conninfo` (URI or key=value; connect_timeout_s applies unless the conninfo
  // sets its own), then runs `session_sql` (may be empty). `target` names the server in
  // messages (no password). Errors: as StatusFromConnectFailure; InvalidArgument when the
  // server rejects a setting.
  static absl::StatusOr<std::unique_ptr<PgConnection>> Connect(const std::string& conninfo,
                                                               std::string_view target,
                                                               const std::string& session_sql,
                                                               int connect_timeout_s);
  // Wraps a connection its caller opened and keeps (idem/borrowed_transaction.h): destroying the
  // PgConnection leaves `conn` open, and statements run unnamed, so that no prepared statement of
  // idem's is left on it. REQUIRES: `conn` outlives the PgConnection.
  static std::unique_ptr<PgConnection> Borrow(PGconn* conn);
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;
  ~PgConnection();

  PGconn* raw() const { return conn_; }

  // true once the connection was lost or left in an unknown state: it must not be reused.
  bool broken() const { return broken_ || PQstatus(conn_) != CONNECTION_OK; }
  // true when the last failure was a lost connection (others in the pool are likely dead too).
  bool lost() const { return lost_; }
  void MarkBroken() { broken_ = true; }
  // true when the last Run failed at a deferred statement (BEGIN, SET LOCAL, SAVEPOINT, RELEASE).
  bool failed_deferred() const { return failed_deferred_; }

  // Records that the caller ran its own SQL or held the raw handle, which may have changed a
  // session setting (a timeout): later transactions then set the timeouts again (SET LOCAL).
  void MarkCallerTouched() { caller_touched_ = true; }
  bool caller_touched() const { return caller_touched_; }

  // Queues a parameterless statement to go out just before the next Run, in one round trip.
  void Defer(std::string sql) { deferred_.push_back({std::move(sql), {}, {}}); }
  // Queues `statement` (copied) likewise, prepared on first use as Run prepares. Its failure
  // fails the next Run, with failed_deferred() set and the statement's `what` in the message.
  void Defer(const Statement& statement) {
    deferred_.push_back({std::string(statement.sql), statement.params, statement.what});
  }
  void DropDeferred() { deferred_.clear(); }
  // Drops the queued RELEASE SAVEPOINT statements (before a COMMIT, which releases them all).
  void DropDeferredReleases() {
    std::erase_if(deferred_,
                  [](const Deferred& d) { return d.sql.starts_with("RELEASE SAVEPOINT "); });
  }
  bool has_deferred() const { return !deferred_.empty(); }

  // Runs the deferred statements, then `sql` with `params` ($1..$N), prepared on first use and
  // reused after. Returns the result of `sql` (text format). Errors: the first failing
  // statement's, mapped by StatusFromResult; `what` names the operation in messages.
  absl::StatusOr<Result> Run(std::string_view sql, std::span<const SqlValue> params,
                             std::string_view what);
  absl::StatusOr<Result> Run(const Statement& statement);

  // Runs the deferred statements, then `statements` in order, all in one round trip (one libpq
  // pipeline), each prepared on first use as Run does. Returns their results in order. Errors:
  // the first failing statement's, as Run's (the server skips the statements after it). Keep a
  // pipeline's answers small (tens of statements): it is sent whole before any answer is read.
  absl::StatusOr<std::vector<Result>> RunAll(std::span<const Statement> statements);

  // Returns true when the server answers an empty query: the health check of an idle connection.
  bool Ping();

  std::chrono::steady_clock::time_point last_used() const { return last_used_; }

  // The size in bytes of idem_keys' heap at this connection's last lease batch (0 before one):
  // how the next batch's fenced writes are planned (pg_set_statements.h).
  int64_t key_table_bytes() const { return key_table_bytes_; }
  void set_key_table_bytes(int64_t bytes) { key_table_bytes_ = bytes; }

 private:
  PgConnection(PGconn* conn, bool owned) : conn_(conn), owned_(owned) {}

  // The name `sql` is prepared under on this connection, or empty to run it unnamed.
  struct Prepared {
    std::string key;   // sql + parameter signature
    std::string name;  // empty: run unnamed
    bool ready = false;
  };
  Prepared NameFor(const std::string& cache_key);
  absl::StatusOr<Result> RunDirect(const std::string& sql, const EncodedParams& params,
                                   const Prepared& prepared, std::string_view what);
  // Reads the results of `commands` pipelined commands and leaves pipeline mode.
  std::vector<Result> ReadPipeline(size_t commands);
  // A Statement whose parameters the caller keeps.
  struct StatementRef {
    std::string_view sql;
    std::span<const SqlValue> params;
    std::string_view what;
    bool plan_per_run = false;
  };
  absl::StatusOr<std::vector<Result>> RunRefs(std::span<const StatementRef> statements);
  // Returns `status` after noting a lost connection, if `result` shows one.
  absl::Status Failed(const PGresult* result, absl::Status status);

  struct Deferred {
    std::string sql;
    std::vector<SqlValue> params;  // none: sent unnamed (BEGIN, SET LOCAL, savepoints)
    std::string what;              // empty: named after the statement it went out before
  };

  PGconn* conn_;
  const bool owned_;  // false: borrowed (Borrow), closed by its owner
  bool broken_ = false;
  bool lost_ = false;
  bool failed_deferred_ = false;
  bool caller_touched_ = false;
  std::vector<Deferred> deferred_;
  std::unordered_map<std::string, std::string> prepared_;  // sql + signature → name
  int next_name_ = 0;
  std::chrono::steady_clock::time_point last_used_ = std::chrono::steady_clock::now();
  int64_t key_table_bytes_ = 0;
};

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_CONNECTION_H_

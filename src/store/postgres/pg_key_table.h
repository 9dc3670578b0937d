// The statements on idem_keys that both modes of the PostgreSQL store share. Each runs on the
// connection it is given: in autocommit (lease mode) or inside the caller's transaction.
#ifndef IDEM_STORE_POSTGRES_PG_KEY_TABLE_H_
#define IDEM_STORE_POSTGRES_PG_KEY_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/record.h"
#include "idem/store.h"
#include "store/postgres/pg_connection.h"

namespace idem::postgres {

struct ClaimParams {
  Scope scope;
  std::string fingerprint;
  std::string owner;
  int64_t now_ms = 0;
  int64_t lease_until_ms = 0;
  int64_t expires_ms = 0;
  // The claim's note (LeaseWrite::response of a kClaim), written by every claim and takeover;
  // null: none, an empty note. Not owned.
  const StoredResponse* note = nullptr;
  // The claim's nonce (LeaseWrite::claim_nonce), written by every claim and takeover; empty:
  // none, which no retry takes as its own.
  std::string claim_nonce;
};

// Claims the key: INSERT … ON CONFLICT DO NOTHING; when a row is there, reads it: an expired one
// is replaced, a lapsed in_progress one of the same fingerprint is taken over when
// `take_over_lapsed`, a vanished one (deleted meanwhile) is inserted again, a live one is
// returned unclaimed. Inside a transaction (READ COMMITTED) the INSERT waits for a concurrent
// claimer's commit or rollback.
// Errors: as PgConnection::Run; Unavailable when the row kept changing under it.
absl::StatusOr<ClaimResult> ClaimKey(PgConnection& conn, const ClaimParams& p,
                                     bool take_over_lapsed);

// Every claim, replacement and takeover draws its fence from the store-wide sequence
// idem_fence_seq (idem/store.h, "Fences"): a fence is never handed out twice.
//
// The in_progress record of the same fingerprint with `expected_fence` and a lapsed lease, taken
// over (a new fence, the new owner and lease), or nullopt when the fence moved, the lease is live
// or the record belongs to another request.
absl::StatusOr<std::optional<KeyRecord>> TakeOverLapsed(PgConnection& conn, const ClaimParams& p,
                                                        int64_t expected_fence);

// The live (unexpired) record of the scope, or nullopt.
absl::StatusOr<std::optional<KeyRecord>> SelectLive(PgConnection& conn, const Scope& scope,
                                                    int64_t now_ms);

// Each returns the number of rows changed (0: the record is not in_progress with `fence`).
absl::StatusOr<int64_t> ExtendLease(PgConnection& conn, const Scope& scope, int64_t fence,
                                    int64_t now_ms, int64_t lease_until_ms);
absl::StatusOr<int64_t> RecordOutcome(PgConnection& conn, const Scope& scope, int64_t fence,
                                      KeyState state, const StoredResponse& response,
                                      int64_t now_ms, int64_t expires_ms);
absl::StatusOr<int64_t> DeleteClaim(PgConnection& conn, const Scope& scope, int64_t fence,
                                    int64_t now_ms);
// Deletes at most `max_rows` records that are expired when deleted, skipping rows a claim holds.
absl::StatusOr<int64_t> DeleteExpired(PgConnection& conn, int64_t now_ms, int64_t max_rows);

// The records `query` selects (checked by the caller), in (tenant, key) order. KeyQuery::lapsed
// reads the in_progress rows through the partial index idem_keys_in_progress (migration 6).
absl::StatusOr<std::vector<KeyRecord>> SelectMany(PgConnection& conn, const KeyQuery& query,
                                                  int64_t now_ms);

// Deletes the record of `scope` in any state; returns how many rows it deleted (0 or 1).
absl::StatusOr<int64_t> DeleteAny(PgConnection& conn, const Scope& scope);

// The Aborted error for a fenced write that changed nothing, naming who holds the key now.
absl::Status StaleFenceError(PgConnection& conn, const Scope& scope, int64_t fence, int64_t now_ms,
                             std::string_view operation);

// The statements behind the calls above, for a caller that sends several in one pipeline
// (PgConnection::RunAll), and the readers of their results.
Statement InsertClaimStatement(const ClaimParams& p);  // ClaimKey's first: RETURNING fence only
Statement SelectAnyStatement(const Scope& scope);      // ClaimKey's read after a conflict
Statement SelectLiveStatement(const Scope& scope, int64_t now_ms);
Statement ExtendLeaseStatement(const Scope& scope, int64_t fence, int64_t now_ms,
                               int64_t lease_until_ms);
Statement RecordOutcomeStatement(const Scope& scope, int64_t fence, KeyState state,
                                 const StoredResponse& response, int64_t now_ms,
                                 int64_t expires_ms);
// RecordOutcomeStatement made to fail unless it changes the record: division by zero (SQLSTATE
// kOutcomeNotRecorded) when the record is not in_progress with `fence`. For an outcome sent
// without waiting for its answer (pipelined before COMMIT), whose miss must stop the commit:
// PostgreSQL skips the rest of a pipeline after a failed statement, COMMIT included.
inline constexpr std::string_view kOutcomeNotRecorded = "22012";
Statement RecordOutcomeCheckedStatement(const Scope& scope, int64_t fence, KeyState state,
                                        const StoredResponse& response, int64_t now_ms,
                                        int64_t expires_ms);
Statement DeleteClaimStatement(const Scope& scope, int64_t fence, int64_t now_ms);
Statement ReplaceExpiredStatement(const ClaimParams& p, int64_t expected_fence);
Statement TakeOverLapsedStatement(const ClaimParams& p, int64_t expected_fence);
// The first row as a record (RETURNING or SELECT of the key columns), or nullopt.
std::optional<KeyRecord> FirstRecord(const Result& result);
// Every row as a record.
std::vector<KeyRecord> Records(const Result& result);
// The number of rows an UPDATE or DELETE changed.
int64_t RowsChanged(const Result& result);
// true when ClaimKey, having found `found` in the way of its INSERT, writes over it (an expired
// record, or a lapsed lease of the same request when `take_over_lapsed`); false: it reports it.
bool ClaimWritesOver(const KeyRecord& found, const ClaimParams& p, bool take_over_lapsed);

// The replayable headers ⇄ the bytes of the headers column.
std::string EncodeHeaders(const std::vector<Header>& headers);
std::vector<Header> DecodeHeaders(std::string_view bytes);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_KEY_TABLE_H_

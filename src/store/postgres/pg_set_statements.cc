#include "store/postgres/pg_set_statements.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>

#include "store/postgres/pg_key_columns.h"
#include "store/postgres/pg_lease_write.h"

namespace idem::postgres {
namespace {

// The batch's now, as the subquery "c" (c.ms) from parameter $N: the caller's clock, or when that
// is NULL the database's, the same for every statement of the transaction (now() is the time
// the transaction began).
#define IDEM_PG_BATCH_NOW(n) \
  "(SELECT COALESCE($" #n "::bigint, floor(extract(epoch FROM now()) * 1000)::bigint) AS ms) AS c"

// The row `r` a fenced write of key (u.t, u.k) may change: its holder's, live, still in progress.
// The state and expiry are compared through `+ 0` so that no index matches them and each key is
// looked up by its primary key. Matched, they let the planner read the batch's rows from
// idem_keys_in_progress (alone or in a BitmapAnd with idem_keys_expires) hashed against the
// arrays: a plan it picks at every table size, that reads every entry those indexes hold at each
// batch, dead ones (kept until the next vacuum) and, in the BitmapAnd, every unexpired record.
#define IDEM_PG_FENCED_ROW                                \
  "r.tenant = u.t AND r.key = u.k AND r.fence = u.f AND " \
  "r.state + 0 = 1 AND r.expires_ms + 0 > c.ms"

// An array literal of text elements, each quoted ("" and \ escaped), so that any text (empty, with
// commas, braces, quotes or the word NULL) reads back as itself.
class TextArray {
 public:
  void Add(std::string_view text) {
    if (out_.size() > 1) out_.push_back(',');
    out_.push_back('"');
    for (char c : text) {
      if (c == '"' || c == '\\') out_.push_back('\\');
      out_.push_back(c);
    }
    out_.push_back('"');
  }
  std::string Take() {
    out_.push_back('}');
    return std::move(out_);
  }

 private:
  std::string out_ = "{";
};

class IntArray {
 public:
  void Add(int64_t value) {
    if (out_.size() > 1) out_.push_back(',');
    out_ += std::to_string(value);
  }
  std::string Take() {
    out_.push_back('}');
    return std::move(out_);
  }

 private:
  std::string out_ = "{";
};

// The parameters of a statement. (Not a braced list: GCC 12 -O2 then warns that a std::string
// inside the variant may be used uninitialized.)
template <typename... Values>
std::vector<SqlValue> Params(Values&&... values) {
  std::vector<SqlValue> params;
  params.reserve(sizeof...(Values));
  (params.emplace_back(std::forward<Values>(values)), ...);
  return params;
}

// The (tenant, key) arrays of `scopes`, as $1 and $2.
std::vector<SqlValue> ScopeArrays(std::span<const Scope* const> scopes) {
  TextArray tenants, keys;
  for (const Scope* scope : scopes) {
    tenants.Add(scope->tenant);
    keys.Add(scope->key);
  }
  return Params(tenants.Take(), keys.Take());
}

SqlValue NowParam(std::optional<int64_t> now_ms) {
  if (now_ms.has_value()) return *now_ms;
  return std::monostate{};
}

std::string What(std::string_view operation, size_t count) {
  return fmt::format("{} of {} key(s) in a lease batch", operation, count);
}

}  // namespace

Statement LockRowsStatement(std::span<const Scope* const> scopes) {
  // One primary-key lookup per scope, in the order given (a LATERAL subquery with FOR UPDATE is
  // never merged into a join), whatever the table's size when the plan was made.
  return {
      "SELECT r.* FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(t, k, n) "
      "CROSS JOIN LATERAL (SELECT" IDEM_PG_KEY_COLUMNS
      "FROM idem_keys WHERE tenant = u.t AND key = u.k FOR UPDATE) AS r ORDER BY u.n",
      ScopeArrays(scopes), What("locking", scopes.size())};
}

Statement ReadRowsStatement(std::span<const Scope* const> scopes) {
  return {"SELECT" IDEM_PG_KEY_COLUMNS
          "FROM idem_keys WHERE (tenant, key) IN "
          "(SELECT t, k FROM unnest($1::text[], $2::text[]) AS u(t, k))",
          ScopeArrays(scopes), What("read", scopes.size()), /*plan_per_run=*/true};
}

Statement NowStatement(std::optional<int64_t> now_ms) {
  return {"SELECT c.ms, set_config('enable_seqscan', 'off', true), "
          "set_config('plan_cache_mode', 'force_generic_plan', true), "
          "pg_relation_size('idem_keys') FROM " IDEM_PG_BATCH_NOW(1),
          Params(NowParam(now_ms)), "reading the clock"};
}

Statement CustomPlansStatement() {
  return {"SELECT set_config('plan_cache_mode', 'force_custom_plan', true)", {},
          "planning the batch's writes"};
}

absl::StatusOr<int64_t> ReadNow(const Result& result) {
  if (PQntuples(result.get()) != 1) return absl::InternalError("reading the clock returned no row");
  return std::strtoll(PQgetvalue(result.get(), 0, 0), nullptr, 10);
}

int64_t ReadKeyTableBytes(const Result& result) {
  if (PQntuples(result.get()) != 1 || PQnfields(result.get()) < 4) return 0;
  return std::strtoll(PQgetvalue(result.get(), 0, 3), nullptr, 10);
}

Statement InsertClaimsStatement(std::span<const LeaseWrite* const> claims,
                                std::optional<int64_t> now_ms, Millis retention) {
  TextArray tenants, keys, fingerprints, owners, nonces;
  IntArray leases, statuses, header_at, header_len, body_at, body_len;
  std::string headers, bodies;  // the claims' notes, cut by offsets as the outcomes' are
  for (const LeaseWrite* claim : claims) {
    tenants.Add(claim->scope.tenant);
    keys.Add(claim->scope.key);
    fingerprints.Add(claim->fingerprint);
    owners.Add(claim->owner);
    nonces.Add(claim->claim_nonce);
    leases.Add(claim->lease.count());
    statuses.Add(claim->response.status);
    const std::string encoded = EncodeHeaders(claim->response.headers);
    header_at.Add(static_cast<int64_t>(headers.size()) + 1);  // substring counts from 1
    header_len.Add(static_cast<int64_t>(encoded.size()));
    headers += encoded;
    body_at.Add(static_cast<int64_t>(bodies.size()) + 1);
    body_len.Add(static_cast<int64_t>(claim->response.body.size()));
    bodies += claim->response.body;
  }
  // Rows go in ordinal order, so an INSERT that waits for another claimer's row holds only rows
  // before it in the lock order. The record is kept until the retention ends, and at least as long
  // as the lease.
  return {"INSERT INTO idem_keys (tenant, key, fingerprint, state, fence, owner, lease_until_ms, "
          "created_ms, updated_ms, expires_ms, status, headers, body, claim_nonce) "
          "SELECT u.t, u.k, u.f, 1, nextval('idem_fence_seq'), u.o, c.ms + u.l, c.ms, c.ms, "
          "GREATEST(c.ms + $7, c.ms + u.l), u.st, substring($13::bytea FROM u.ha FOR u.hl), "
          "substring($14::bytea FROM u.ba FOR u.bl), u.cn FROM unnest($1::text[], $2::text[], "
          "$3::text[], $4::text[], $5::bigint[], $8::int[], $9::int[], $10::int[], $11::int[], "
          "$12::int[], $15::text[]) WITH ORDINALITY AS u(t, k, f, o, l, st, ha, hl, ba, bl, cn, n) "
          "CROSS JOIN " IDEM_PG_BATCH_NOW(6) " ORDER BY u.n "
          "ON CONFLICT (tenant, key) DO NOTHING RETURNING" IDEM_PG_KEY_COLUMNS,
          Params(tenants.Take(), keys.Take(), fingerprints.Take(), owners.Take(), leases.Take(),
                 NowParam(now_ms), retention.count(), statuses.Take(), header_at.Take(),
                 header_len.Take(), body_at.Take(), body_len.Take(), Blob{std::move(headers)},
                 Blob{std::move(bodies)}, nonces.Take()),
          What("claim", claims.size())};
}

Statement ExtendLeasesStatement(std::span<const LeaseWrite* const> heartbeats,
                                std::optional<int64_t> now_ms) {
  TextArray tenants, keys;
  IntArray fences, leases;
  for (const LeaseWrite* write : heartbeats) {
    tenants.Add(write->scope.tenant);
    keys.Add(write->scope.key);
    fences.Add(write->fence);
    leases.Add(write->lease.count());
  }
  return {"UPDATE idem_keys AS r SET lease_until_ms = c.ms + u.l, updated_ms = c.ms, "
          "expires_ms = GREATEST(r.expires_ms, c.ms + u.l) "
          "FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS u(t, k, f, l), "
          IDEM_PG_BATCH_NOW(5)
          " WHERE " IDEM_PG_FENCED_ROW " RETURNING r.tenant, r.key",
          Params(tenants.Take(), keys.Take(), fences.Take(), leases.Take(), NowParam(now_ms)),
          What("heartbeat", heartbeats.size())};
}

Statement RecordOutcomesStatement(std::span<const LeaseWrite* const> finishes,
                                  std::optional<int64_t> now_ms, Millis retention) {
  TextArray tenants, keys;
  IntArray fences, states, statuses, header_at, header_len, body_at, body_len;
  std::string headers, bodies;
  for (const LeaseWrite* write : finishes) {
    tenants.Add(write->scope.tenant);
    keys.Add(write->scope.key);
    fences.Add(write->fence);
    states.Add(static_cast<int>(FinalState(*write)));
    statuses.Add(write->response.status);
    const std::string encoded = EncodeHeaders(write->response.headers);
    header_at.Add(static_cast<int64_t>(headers.size()) + 1);  // substring counts from 1
    header_len.Add(static_cast<int64_t>(encoded.size()));
    headers += encoded;
    body_at.Add(static_cast<int64_t>(bodies.size()) + 1);
    body_len.Add(static_cast<int64_t>(write->response.body.size()));
    bodies += write->response.body;
  }
  return {"UPDATE idem_keys AS r SET state = u.s, status = u.st, "
          "headers = substring($10::bytea FROM u.ha FOR u.hl), "
          "body = substring($11::bytea FROM u.ba FOR u.bl), updated_ms = c.ms, "
          "expires_ms = c.ms + $13 "
          "FROM unnest($1::text[], $2::text[], $3::bigint[], $4::smallint[], $5::int[], "
          "$6::int[], $7::int[], $8::int[], $9::int[]) AS u(t, k, f, s, st, ha, hl, ba, bl), "
          IDEM_PG_BATCH_NOW(12)
          " WHERE " IDEM_PG_FENCED_ROW " RETURNING r.tenant, r.key",
          Params(tenants.Take(), keys.Take(), fences.Take(), states.Take(), statuses.Take(),
                 header_at.Take(), header_len.Take(), body_at.Take(), body_len.Take(),
                 Blob{std::move(headers)}, Blob{std::move(bodies)}, NowParam(now_ms),
                 retention.count()),
          What("outcome", finishes.size())};
}

Statement DeleteClaimsStatement(std::span<const LeaseWrite* const> releases,
                                std::optional<int64_t> now_ms) {
  TextArray tenants, keys;
  IntArray fences;
  for (const LeaseWrite* write : releases) {
    tenants.Add(write->scope.tenant);
    keys.Add(write->scope.key);
    fences.Add(write->fence);
  }
  return {"DELETE FROM idem_keys AS r USING unnest($1::text[], $2::text[], $3::bigint[]) "
          "AS u(t, k, f), " IDEM_PG_BATCH_NOW(4)
          " WHERE " IDEM_PG_FENCED_ROW " RETURNING r.tenant, r.key",
          Params(tenants.Take(), keys.Take(), fences.Take(), NowParam(now_ms)),
          What("release", releases.size())};
}

size_t OutcomeBytes(const LeaseWrite& finish) {
  size_t bytes = finish.response.body.size();
  for (const Header& header : finish.response.headers) {
    bytes += 8 + header.name.size() + header.value.size();
  }
  return bytes;
}

std::vector<std::string> ScopeIdsOf(const Result& result) {
  std::vector<std::string> ids;
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    ids.push_back(ScopeId({PQgetvalue(result.get(), row, 0), PQgetvalue(result.get(), row, 1)}));
  }
  return ids;
}

#undef IDEM_PG_BATCH_NOW
#undef IDEM_PG_FENCED_ROW

}  // namespace idem::postgres

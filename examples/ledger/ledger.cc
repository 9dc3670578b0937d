#include "ledger.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <chrono>
#include <thread>
#include <utility>

#include "idem/fingerprint.h"

namespace idem::ledger {
namespace {

// Plain SQL that SQLite and PostgreSQL both accept. ledger_transfers keeps every applied key for
// good (its primary key is the last line of defence should a key ever be applied twice), so a
// redelivery after the guard's retention is recognised. ledger_entries has no unique constraint
// on purpose: the ledger's tests count the entries per key to prove that each transfer ran once.
constexpr std::array<std::string_view, 4> kSchema = {
    "CREATE TABLE IF NOT EXISTS ledger_transfers ("
    " transfer_key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger_entries ("
    " transfer_key TEXT NOT NULL, account TEXT NOT NULL, delta BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ledger_entries_by_key ON ledger_entries (transfer_key)",
    "CREATE TABLE IF NOT EXISTS ledger_balances ("
    " account TEXT PRIMARY KEY, balance BIGINT NOT NULL)",
};

constexpr std::string_view kInsertLegs =
    "INSERT INTO ledger_entries (transfer_key, account, delta) VALUES ($1, $2, $3), ($4, $5, $6)";
constexpr std::string_view kFindTransfer =
    "SELECT fingerprint FROM ledger_transfers WHERE transfer_key = $1";
constexpr std::string_view kRecordTransfer =
    "INSERT INTO ledger_transfers (transfer_key, fingerprint) VALUES ($1, $2)";
// Changes no row when the sum would leave the 64-bit range (SQLite would turn it into a REAL,
// PostgreSQL would fail the statement): the CASE keeps each bound's own subtraction in range.
constexpr std::string_view kAddToBalance =
    "INSERT INTO ledger_balances (account, balance) VALUES ($1, $2) "
    "ON CONFLICT (account) DO UPDATE SET balance = ledger_balances.balance + excluded.balance "
    "WHERE CASE WHEN excluded.balance >= 0 "
    "THEN ledger_balances.balance <= 9223372036854775807 - excluded.balance "
    "ELSE ledger_balances.balance >= -9223372036854775807 - excluded.balance END";
constexpr std::string_view kBalanceOf = "SELECT balance FROM ledger_balances WHERE account = $1";
constexpr std::string_view kAllBalances = "SELECT account, balance FROM ledger_balances";

// The response stored for a declined transfer: a 4xx, so the guard rolls the effect back to its
// savepoint and records the refusal as failed_final, replayed to every later arrival.
constexpr int kDeclinedStatus = 422;
constexpr int kAppliedStatus = 201;
// The response stored when ledger_transfers shows the transfer was applied by a run whose key
// record has since expired: nothing moved now.
constexpr int kAppliedEarlierStatus = 200;

StoredResponse JsonResponse(int status, const boost::json::object& body) {
  return StoredResponse{.status = status,
                        .headers = {{"Content-Type", "application/json"}},
                        .body = boost::json::serialize(body)};
}

absl::StatusOr<int64_t> BalanceOf(Transaction& tx, const std::string& account) {
  const std::array<SqlValue, 1> params = {account};
  auto rows = tx.Query(kBalanceOf, params);
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return 0;
  const SqlRow& row = rows->front();
  if (row.size() != 1 || !std::holds_alternative<int64_t>(row[0])) {
    return absl::InternalError("ledger_balances.balance is not an integer");
  }
  return std::get<int64_t>(row[0]);
}

// Whether ledger_transfers already holds the key: nullopt when it does not, else the stored
// response to give (or FailedPrecondition when the key came with another transfer).
absl::StatusOr<std::optional<StoredResponse>> EarlierTransfer(Transaction& tx,
                                                              const Transfer& transfer,
                                                              std::string_view fingerprint) {
  const std::array<SqlValue, 1> key = {transfer.key};
  auto rows = tx.Query(kFindTransfer, key);
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return std::nullopt;
  const auto* stored = std::get_if<std::string>(&rows->front()[0]);
  if (stored == nullptr || *stored != fingerprint) {
    return absl::FailedPreconditionError(fmt::format(
        "key '{}' was applied earlier with a different transfer; a key names one transfer: use a "
        "new key for a new transfer",
        transfer.key));
  }
  return JsonResponse(kAppliedEarlierStatus, {{"applied", transfer.key}, {"earlier", true}});
}

absl::Status AddToBalance(Transaction& tx, const std::string& account, int64_t delta) {
  const std::array<SqlValue, 2> params = {account, delta};
  auto changed = tx.Execute(kAddToBalance, params);
  if (!changed.ok()) return changed.status();
  if (*changed == 1) return absl::OkStatus();
  return absl::OutOfRangeError(fmt::format(
      "the balance of account '{}' would pass the 64-bit integer range ({} more); nothing was "
      "applied for this transfer",
      account, delta));
}

// The effect run under the guard: the key for good, both legs and both balances, on the guard's
// transaction.
absl::StatusOr<StoredResponse> WriteTransfer(Transaction& tx, const Transfer& transfer,
                                             std::string_view fingerprint,
                                             std::optional<int64_t> overdraft_limit) {
  auto earlier = EarlierTransfer(tx, transfer, fingerprint);
  if (!earlier.ok()) return earlier.status();
  if (earlier->has_value()) return **earlier;
  if (overdraft_limit.has_value()) {
    auto balance = BalanceOf(tx, transfer.from);
    if (!balance.ok()) return balance.status();
    if (*balance < transfer.amount - *overdraft_limit) {  // balance - amount < -limit, in range
      return JsonResponse(
          kDeclinedStatus,
          {{"declined",
            fmt::format("account '{}' holds {} and may go down to -{}; it cannot pay {}",
                        transfer.from, *balance, *overdraft_limit, transfer.amount)}});
    }
  }
  const std::array<SqlValue, 2> record = {transfer.key, std::string(fingerprint)};
  if (auto n = tx.Execute(kRecordTransfer, record); !n.ok()) return n.status();
  const std::array<SqlValue, 6> legs = {transfer.key, transfer.from, -transfer.amount,
                                        transfer.key, transfer.to,   transfer.amount};
  if (auto n = tx.Execute(kInsertLegs, legs); !n.ok()) return n.status();
  for (auto [account, delta] :
       {std::pair{&transfer.from, -transfer.amount}, std::pair{&transfer.to, transfer.amount}}) {
    if (absl::Status added = AddToBalance(tx, *account, delta); !added.ok()) return added;
  }
  return JsonResponse(kAppliedStatus, {{"applied", transfer.key}});
}

std::string DeclineDetail(const StoredResponse& response) {
  std::error_code ec;
  boost::json::value body = boost::json::parse(response.body, ec);
  if (!ec && body.is_object()) {
    if (const auto* text = body.as_object().if_contains("declined"); text && text->is_string()) {
      return std::string(text->as_string().c_str());
    }
  }
  return response.body;
}

}  // namespace

Ledger::Ledger(std::unique_ptr<Store> store, LedgerOptions options)
    : store_(std::move(store)), options_(options), guard_(*store_) {}

absl::StatusOr<std::unique_ptr<Ledger>> Ledger::Open(std::string_view store_uri,
                                                     LedgerOptions options) {
  auto store = OpenStore(store_uri, StoreOptions{.lock_timeout = options.lock_timeout,
                                                 .create_if_missing = options.create_store});
  if (!store.ok()) return store.status();
  std::unique_ptr<Ledger> ledger(new Ledger(*std::move(store), options));
  if (absl::Status status = ledger->CreateTables(); !status.ok()) return status;
  return ledger;
}

absl::Status Ledger::CreateTables() {
  absl::Status last;
  // Two processes creating the tables at once on PostgreSQL may collide (a unique violation in
  // the catalog); the second attempt then finds them.
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto tx = store_->Begin();
    if (!tx.ok()) return tx.status();
    last = absl::OkStatus();
    for (std::string_view sql : kSchema) {
      if (auto n = (*tx)->Execute(sql); !n.ok()) {
        last = n.status();
        break;
      }
    }
    if (last.ok()) last = (*tx)->Commit();
    if (last.ok()) return last;
    (void)(*tx)->Rollback();
    if (!absl::IsAlreadyExists(last) && !absl::IsUnavailable(last)) break;
  }
  return absl::Status(last.code(), fmt::format("cannot create the ledger's tables: {}",
                                               std::string(last.message())));
}

absl::StatusOr<ApplyResult> Ledger::Apply(const Transfer& transfer, std::string_view line) {
  // The line is the request body: a JSON body is canonicalised first, so a redelivery that only
  // reorders fields or spaces them differently is the same transfer.
  const std::string fingerprint =
      Fingerprint({.method = "POST", .target = "/transfers", .body = line, .headers = {}});
  std::chrono::milliseconds backoff(5);
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<ApplyResult> result = ApplyOnce(transfer, fingerprint);
    if (result.ok() || !absl::IsUnavailable(result.status()) ||
        attempt >= options_.transient_retries) {
      return result;
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

absl::StatusOr<ApplyResult> Ledger::ApplyOnce(const Transfer& transfer,
                                              std::string_view fingerprint) {
  auto outcome =
      guard_.Run(Scope{.tenant = std::string(kTenant), .key = transfer.key}, fingerprint,
                 [&](Transaction& tx) {
                   return WriteTransfer(tx, transfer, fingerprint, options_.overdraft_limit);
                 });
  if (!outcome.ok()) return outcome.status();
  ApplyResult result;
  result.replayed = outcome->replayed;
  if (outcome->response.status == kDeclinedStatus) {
    result.status = ApplyStatus::kDeclined;
    result.detail = DeclineDetail(outcome->response);
  } else {
    const bool earlier = outcome->replayed || outcome->response.status == kAppliedEarlierStatus;
    result.replayed = earlier;
    result.status = earlier ? ApplyStatus::kReplayed : ApplyStatus::kApplied;
  }
  return result;
}

absl::StatusOr<std::map<std::string, int64_t>> Ledger::Balances() {
  auto tx = store_->Begin();
  if (!tx.ok()) return tx.status();
  auto rows = (*tx)->Query(kAllBalances);
  (void)(*tx)->Rollback();  // read only
  if (!rows.ok()) return rows.status();
  std::map<std::string, int64_t> balances;
  for (const SqlRow& row : *rows) {
    if (row.size() != 2 || !std::holds_alternative<std::string>(row[0]) ||
        !std::holds_alternative<int64_t>(row[1])) {
      return absl::InternalError("ledger_balances holds a row of unexpected types");
    }
    balances.emplace(std::get<std::string>(row[0]), std::get<int64_t>(row[1]));
  }
  return balances;
}

std::string BalancesJson(const std::map<std::string, int64_t>& balances) {
  // boost::json::object keeps insertion order, and std::map iterates in byte-wise key order.
  boost::json::object object;
  for (const auto& [account, balance] : balances) object[account] = balance;
  return boost::json::serialize(object);
}

}  // namespace idem::ledger

#include "actions.h"

#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "idem/fingerprint.h"
#include "upstream_call.h"

namespace idem::storm {
namespace {

constexpr char kTenant[] = "storm";
constexpr char kNotRecorded[] = R"({"storm":"not recorded"})";

// The storm's name for a body: the first 16 hex digits of its SHA-256 (clients.py's digest),
// which the checker compares with the body the client sent.
std::string Digest(const std::string& body) { return Sha256Hex(body).substr(0, 16); }

Reply Problem(int status, std::string type, std::string detail) {
  return Reply{
      .status = status, .type = std::move(type), .replayed = false, .body = std::move(detail)};
}

Reply Answer(const GuardResult& result) {
  return Reply{.status = result.response.status,
               .type = "-",
               .replayed = result.replayed,
               .body = result.response.body};
}

// "slow:MS" -> MS; anything else 0.
std::chrono::milliseconds SlowFor(const std::string& mode) {
  int ms = 0;
  if (absl::StartsWith(mode, "slow:") && absl::SimpleAtoi(mode.substr(5), &ms) && ms > 0) {
    return std::chrono::milliseconds(ms);
  }
  return std::chrono::milliseconds(0);
}

}  // namespace

Reply FromStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
      return Problem(422, "key-reused", status.ToString());
    case absl::StatusCode::kAborted:
      return Problem(409, "key-in-flight", status.ToString());
    case absl::StatusCode::kUnavailable:
      return Problem(503, "store-unavailable", status.ToString());
    default:
      return Problem(500, "internal", status.ToString());
  }
}

Reply RunLeased(LeaseGuard& guard, const WorkerConfig& config, const Request& request) {
  auto acquired = guard.Acquire({.tenant = kTenant, .key = request.key}, Sha256Hex(request.body));
  if (!acquired.ok()) return FromStatus(acquired.status());
  if (acquired->replay.has_value()) return Answer(*acquired->replay);
  if (acquired->in_flight.has_value()) {
    return Problem(409, "key-in-flight",
                   absl::StrCat("retry in ", acquired->in_flight->remaining().count(), " ms"));
  }
  LeasedKey& leased = *acquired->key;
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"X-Storm-Key", request.key},           {"X-Storm-Mode", request.mode},
      {"X-Storm-Body", Digest(request.body)}, {"X-Request-Id", request.xrid},
      {"Idempotency-Key", request.key},       {"Idempotency-Fence", absl::StrCat(leased.fence())}};
  auto answer = PostToUpstream(config.upstream_port, absl::StrCat("/", config.name, "/lease"),
                               headers, request.body, config.upstream_timeout);
  if (!answer.ok()) {
    // The effect may have run (the upstream hung up after it) or may still be running (too
    // slow): nothing is known of it, so the key is given up as idem serve gives it up with its
    // 502/504, and a retry runs the effect again (the documented exception). A Release the store
    // refuses leaves the lease to lapse, with the same result a lease later.
    (void)leased.Release();
    if (answer.status().code() == absl::StatusCode::kDeadlineExceeded) {
      return Problem(504, "upstream-timeout", answer.status().ToString());
    }
    return Problem(502, "upstream-unreachable", answer.status().ToString());
  }
  // A lease's worth of retries: the store may be restarting; the key is heartbeaten meanwhile.
  auto finished = leased.FinishRetrying({.status = answer->status, .body = answer->body},
                                        {.deadline = config.lease});
  if (!finished.ok()) {
    if (finished.status().code() == absl::StatusCode::kDeadlineExceeded) {
      return Problem(503, "outcome-not-recorded", finished.status().ToString());
    }
    return FromStatus(finished.status());
  }
  return Answer(*finished);
}

Reply RunInTransaction(Guard& guard, const WorkerConfig& config, const Request& request) {
  const std::string digest = Digest(request.body);
  auto result = guard.Run(
      {.tenant = kTenant, .key = request.key}, Sha256Hex(request.body),
      [&](Transaction& tx) -> absl::StatusOr<StoredResponse> {
        // Slow: the claim is held meanwhile, so the key's other workers wait at their claim (or
        // the nemesis kills this one with its transaction open).
        std::this_thread::sleep_for(SlowFor(request.mode));
        if (request.mode == "fail") {
          return StoredResponse{.status = 500, .body = R"({"storm":"transient failure"})"};
        }
        const std::vector<SqlValue> params = {request.key, config.name, digest};
        auto rows = tx.Query(
            "INSERT INTO storm_tx_effects (key, worker, request) VALUES ($1, $2, $3) RETURNING id",
            params);
        if (!rows.ok()) return rows.status();
        if (rows->size() != 1 || rows->front().empty() ||
            !std::holds_alternative<int64_t>(rows->front()[0])) {
          return absl::InternalError("INSERT ... RETURNING id gave no id");
        }
        const int64_t id = std::get<int64_t>(rows->front()[0]);
        return StoredResponse{
            .status = 201,
            .body = absl::StrCat(R"({"ex": )", id, R"(, "gw": ")", config.name, R"(", "key": ")",
                                 request.key, R"(", "request": ")", digest, R"("})")};
      });
  if (!result.ok()) return FromStatus(result.status());
  return Answer(*result);
}

Reply ReplayLeased(LeaseGuard& guard, const Request& request) {
  auto acquired = guard.Acquire({.tenant = kTenant, .key = request.key}, Sha256Hex(request.body));
  if (!acquired.ok()) return FromStatus(acquired.status());
  if (acquired->replay.has_value()) return Answer(*acquired->replay);
  if (acquired->in_flight.has_value()) {
    return Problem(409, "key-in-flight",
                   absl::StrCat("retry in ", acquired->in_flight->remaining().count(), " ms"));
  }
  const absl::Status released = acquired->key->Release();
  if (!released.ok()) return FromStatus(released);
  return Reply{.status = 503, .type = "-", .replayed = false, .body = kNotRecorded};
}

Reply ReplayInTransaction(Guard& guard, const Request& request) {
  auto result = guard.Run({.tenant = kTenant, .key = request.key}, Sha256Hex(request.body),
                          [](Transaction&) -> absl::StatusOr<StoredResponse> {
                            return absl::NotFoundError("storm: asked for a replay only");
                          });
  if (result.status().code() == absl::StatusCode::kNotFound) {
    return Reply{.status = 503, .type = "-", .replayed = false, .body = kNotRecorded};
  }
  if (!result.ok()) return FromStatus(result.status());
  return Answer(*result);
}

absl::Status CreateEffectsTable(Store& store) {
  auto tx = store.Begin();
  if (!tx.ok()) return tx.status();
  auto created = (*tx)->Execute(
      "CREATE TABLE IF NOT EXISTS storm_tx_effects (id BIGSERIAL PRIMARY KEY, key TEXT NOT NULL, "
      "worker TEXT NOT NULL, request TEXT NOT NULL)");
  if (!created.ok()) return created.status();
  return (*tx)->Commit();
}

Reply ListEffects(Store& store) {
  auto tx = store.Begin();
  if (!tx.ok()) return FromStatus(tx.status());
  auto rows = (*tx)->Query("SELECT id, key, worker, request FROM storm_tx_effects ORDER BY id");
  (void)(*tx)->Rollback();  // read only
  if (!rows.ok()) return FromStatus(rows.status());
  std::vector<std::string> lines;
  for (const SqlRow& row : *rows) {
    if (row.size() != 4 || !std::holds_alternative<int64_t>(row[0])) {
      return Problem(500, "internal", "storm_tx_effects: a row of another shape");
    }
    std::vector<std::string> fields = {absl::StrCat(std::get<int64_t>(row[0]))};
    for (size_t i = 1; i < row.size(); ++i) {
      const auto* text = std::get_if<std::string>(&row[i]);
      fields.push_back(text != nullptr ? *text : "?");
    }
    lines.push_back(absl::StrJoin(fields, ","));
  }
  return Reply{.status = 200, .type = "-", .replayed = false, .body = absl::StrJoin(lines, ";")};
}

}  // namespace idem::storm

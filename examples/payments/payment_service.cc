#include "payment_service.h"

#include <fmt/format.h>

#include <array>
#include <boost/json.hpp>
#include <chrono>
#include <utility>
#include <vector>

#include "idem/fingerprint.h"
#include "idem/key.h"
#include "idem/outbox.h"
#include "idem/uuid.h"
#include "payment_requests.h"
#include "schema.h"

namespace idem::payments {
namespace {

namespace json = boost::json;

constexpr std::array<std::string_view, 3> kPaymentsSchema = {
    "CREATE TABLE IF NOT EXISTS payments (id TEXT PRIMARY KEY, amount BIGINT NOT NULL,"
    " currency TEXT NOT NULL, customer TEXT NOT NULL, refunded BIGINT NOT NULL DEFAULT 0,"
    " created_ms BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS refunds (id TEXT PRIMARY KEY,"
    " payment_id TEXT NOT NULL REFERENCES payments (id), amount BIGINT NOT NULL,"
    " created_ms BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS refunds_by_payment ON refunds (payment_id)",
};
constexpr std::string_view kInsertPayment =
    "INSERT INTO payments (id, amount, currency, customer, refunded, created_ms)"
    " VALUES ($1, $2, $3, $4, 0, $5)";
// The check and the write of a refund in one statement: the UPDATE takes the payment row's lock
// (PostgreSQL: a concurrent refund of the same payment waits here and then re-checks the
// condition against the committed row; SQLite: the guard's claim already holds the database's
// write lock), so refunds never add up to more than the payment.
constexpr std::string_view kTakeRefund =
    "UPDATE payments SET refunded = refunded + $2 WHERE id = $1 AND amount - refunded >= $2"
    " RETURNING currency, customer";
constexpr std::string_view kFindPayment =
    "SELECT amount, currency, customer, refunded FROM payments WHERE id = $1";
constexpr std::string_view kInsertRefund =
    "INSERT INTO refunds (id, payment_id, amount, created_ms) VALUES ($1, $2, $3, $4)";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The text in column `i` of `row`; nullopt when there is none or it is not text.
std::optional<std::string> TextAt(const SqlRow& row, size_t i) {
  if (i >= row.size() || !std::holds_alternative<std::string>(row[i])) return std::nullopt;
  return std::get<std::string>(row[i]);
}

// The integer in column `i` of `row`; nullopt when there is none or it is not an integer.
std::optional<int64_t> IntAt(const SqlRow& row, size_t i) {
  if (i >= row.size() || !std::holds_alternative<int64_t>(row[i])) return std::nullopt;
  return std::get<int64_t>(row[i]);
}

// The path of `target` without its query.
std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }

// Adds the one message of a payment or refund and returns the response for `data`.
absl::StatusOr<StoredResponse> Announce(Transaction& tx, std::string_view type,
                                        const std::string& payment_id, const json::object& data,
                                        std::string location) {
  std::string body = json::serialize(data);
  const std::string payload = fmt::format(R"({{"type":"{}","data":{}}})", type, body);
  auto id = AddOutboxMessage(
      tx,
      {.topic = std::string(type), .aggregate_key = payment_id, .headers = {}, .payload = payload});
  if (!id.ok()) return id.status();
  StoredResponse response = JsonResponse(201, std::move(body));
  response.headers.push_back({"Location", std::move(location)});
  return response;
}

absl::StatusOr<StoredResponse> WritePayment(Transaction& tx, const PaymentRequest& request) {
  const std::string id = "pay_" + NewUuidV7();
  const std::array<SqlValue, 5> row = {id, request.amount, request.currency, request.customer,
                                       NowMs()};
  if (auto n = tx.Execute(kInsertPayment, row); !n.ok()) return n.status();
  json::object payment;
  payment["id"] = id;
  payment["amount"] = request.amount;
  payment["currency"] = request.currency;
  payment["customer"] = request.customer;
  return Announce(tx, "payment.created", id, payment, "/payments/" + id);
}

// The 404 or 422 for a refund the conditional UPDATE refused.
absl::StatusOr<StoredResponse> RefusedRefund(Transaction& tx, const std::string& payment_id,
                                             int64_t amount) {
  const std::array<SqlValue, 1> key = {payment_id};
  auto rows = tx.Query(kFindPayment, key);
  if (!rows.ok()) return rows.status();
  if (rows->empty()) {
    return Problem(404, "payment-not-found", "No such payment",
                   fmt::format("there is no payment '{}'; refund a payment id that POST /payments "
                               "returned",
                               payment_id));
  }
  const std::optional<int64_t> total = IntAt(rows->front(), 0);
  const std::optional<int64_t> refunded = IntAt(rows->front(), 3);
  if (!total.has_value() || !refunded.has_value()) {
    return absl::InternalError("payments.amount or payments.refunded is not an integer");
  }
  return Problem(422, "refund-exceeds-payment", "The refund is larger than what is left",
                 fmt::format("payment '{}' of {} has {} left to refund; ask for at most {}, not {}",
                             payment_id, *total, *total - *refunded, *total - *refunded, amount));
}

absl::StatusOr<StoredResponse> WriteRefund(Transaction& tx, const std::string& payment_id,
                                           int64_t amount) {
  const std::array<SqlValue, 2> take = {payment_id, amount};
  auto taken = tx.Query(kTakeRefund, take);
  if (!taken.ok()) return taken.status();
  if (taken->empty()) return RefusedRefund(tx, payment_id, amount);
  const std::optional<std::string> currency = TextAt(taken->front(), 0);
  const std::optional<std::string> customer = TextAt(taken->front(), 1);
  if (!currency.has_value() || !customer.has_value()) {
    return absl::InternalError("payments.currency or payments.customer is not text");
  }
  const std::string id = "re_" + NewUuidV7();
  const std::array<SqlValue, 4> refund_row = {id, payment_id, amount, NowMs()};
  if (auto n = tx.Execute(kInsertRefund, refund_row); !n.ok()) return n.status();
  json::object refund;
  refund["id"] = id;
  refund["payment_id"] = payment_id;
  refund["amount"] = amount;
  refund["currency"] = *currency;
  refund["customer"] = *customer;
  return Announce(tx, "refund.created", payment_id, refund,
                  fmt::format("/payments/{}/refunds/{}", payment_id, id));
}

Reply NotFound(std::string_view path) {
  return {Problem(404, "not-found", "No such route",
                  fmt::format("nothing is at '{}': POST /payments, POST /payments/ID/refunds, "
                              "GET /payments/ID",
                              path))};
}

Reply MethodNotAllowed(std::string_view method, std::string_view path, std::string_view allow) {
  Reply reply{Problem(405, "method-not-allowed", "Method not allowed",
                      fmt::format("{} {} is not served; use {}", method, path, allow))};
  reply.response.headers.push_back({"Allow", std::string(allow)});
  return reply;
}

}  // namespace

PaymentService::PaymentService(std::unique_ptr<Store> store)
    : store_(std::move(store)), guard_(*store_, GuardOptions{.transient_retries = 3}) {}

absl::StatusOr<std::unique_ptr<PaymentService>> PaymentService::Open(std::string_view store_uri) {
  auto store = OpenStore(store_uri);
  if (!store.ok()) return store.status();
  if (absl::Status created = CreateTables(**store, kPaymentsSchema, "payments"); !created.ok()) {
    return created;
  }
  return std::unique_ptr<PaymentService>(new PaymentService(*std::move(store)));
}

Reply PaymentService::Handle(const Request& request) {
  const std::string_view path = PathOf(request.target);
  if (path == "/payments") {
    if (request.method != "POST") return MethodNotAllowed(request.method, path, "POST");
    return CreatePayment(request);
  }
  constexpr std::string_view kPrefix = "/payments/";
  if (!path.starts_with(kPrefix)) return NotFound(path);
  std::string_view rest = path.substr(kPrefix.size());
  const size_t slash = rest.find('/');
  const std::string id(rest.substr(0, slash));
  if (id.empty()) return NotFound(path);
  if (slash == std::string_view::npos) {
    if (request.method != "GET") return MethodNotAllowed(request.method, path, "GET");
    return ShowPayment(id);
  }
  if (rest.substr(slash) != "/refunds") return NotFound(path);
  if (request.method != "POST") return MethodNotAllowed(request.method, path, "POST");
  return CreateRefund(request, id);
}

Reply PaymentService::Guarded(const Request& request, const Effect& effect) {
  const std::string fingerprint = Fingerprint(
      {.method = request.method, .target = request.target, .body = request.body, .headers = {}});
  auto key = ParseIdempotencyKey(HeaderValue(request, "Idempotency-Key").value_or(""));
  if (!key.ok()) {
    return {Problem(400, "invalid-idempotency-key", "Invalid Idempotency-Key",
                    fmt::format("{}; send 1-255 visible ASCII characters, e.g. a UUID",
                                std::string(key.status().message())))};
  }
  auto result = guard_.Run(Scope{.tenant = "", .key = *key}, fingerprint, effect);
  if (!result.ok()) return {ProblemFor(result.status())};
  return {std::move(result->response), result->replayed};
}

Reply PaymentService::CreatePayment(const Request& request) {
  if (!HeaderValue(request, "Idempotency-Key").has_value()) {
    return {Problem(400, "missing-idempotency-key", "Idempotency-Key header required",
                    "send an Idempotency-Key header (e.g. a new UUID) with every POST; resend "
                    "the same key when you retry the same payment")};
  }
  auto parsed = ParsePaymentRequest(request.body);
  if (!parsed.ok()) return {ProblemFor(parsed.status())};
  return Guarded(request, [&](Transaction& tx) { return WritePayment(tx, *parsed); });
}

Reply PaymentService::CreateRefund(const Request& request, const std::string& payment_id) {
  if (!HeaderValue(request, "Idempotency-Key").has_value()) {
    return {Problem(400, "missing-idempotency-key", "Idempotency-Key header required",
                    "send an Idempotency-Key header (e.g. a new UUID) with every POST; resend "
                    "the same key when you retry the same refund")};
  }
  auto amount = ParseRefundRequest(request.body);
  if (!amount.ok()) return {ProblemFor(amount.status())};
  if (absl::Status valid = ValidateKey(payment_id); !valid.ok()) {
    return {Problem(404, "payment-not-found", "No such payment",
                    "the payment id in the path is not one POST /payments returned")};
  }
  return Guarded(request, [&](Transaction& tx) { return WriteRefund(tx, payment_id, *amount); });
}

Reply PaymentService::ShowPayment(const std::string& payment_id) {
  auto tx = store_->Begin();
  if (!tx.ok()) return {ProblemFor(tx.status())};
  const std::array<SqlValue, 1> key = {payment_id};
  auto rows = (*tx)->Query(kFindPayment, key);
  (void)(*tx)->Rollback();
  if (!rows.ok()) return {ProblemFor(rows.status())};
  if (rows->empty()) {
    return {Problem(404, "payment-not-found", "No such payment",
                    fmt::format("there is no payment '{}'", payment_id))};
  }
  const SqlRow& row = rows->front();
  const std::optional<int64_t> amount = IntAt(row, 0);
  const std::optional<std::string> currency = TextAt(row, 1);
  const std::optional<std::string> customer = TextAt(row, 2);
  const std::optional<int64_t> refunded = IntAt(row, 3);
  if (!amount || !currency || !customer || !refunded) {
    return {ProblemFor(absl::InternalError("a payments row is not of the expected types"))};
  }
  json::object payment;
  payment["id"] = payment_id;
  payment["amount"] = *amount;
  payment["currency"] = *currency;
  payment["customer"] = *customer;
  payment["refunded"] = *refunded;
  return {JsonResponse(200, json::serialize(payment))};
}

}  // namespace idem::payments

#include "consumer.h"

#include <fmt/format.h>

#include <array>
#include <boost/json.hpp>
#include <chrono>
#include <thread>
#include <utility>

#include "idem/inbox.h"
#include "idem/webhook_signature.h"
#include "schema.h"

namespace idem::payments {
namespace {

namespace json = boost::json;

constexpr std::array<std::string_view, 1> kConsumerSchema = {
    "CREATE TABLE IF NOT EXISTS payments_customer_totals (customer TEXT PRIMARY KEY,"
    " payments BIGINT NOT NULL, refunds BIGINT NOT NULL, paid BIGINT NOT NULL,"
    " refunded BIGINT NOT NULL)",
};
constexpr std::string_view kAddToTotals =
    "INSERT INTO payments_customer_totals (customer, payments, refunds, paid, refunded)"
    " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (customer) DO UPDATE SET"
    " payments = payments_customer_totals.payments + excluded.payments,"
    " refunds = payments_customer_totals.refunds + excluded.refunds,"
    " paid = payments_customer_totals.paid + excluded.paid,"
    " refunded = payments_customer_totals.refunded + excluded.refunded";
constexpr std::string_view kTotalsOf =
    "SELECT payments, refunds, paid, refunded FROM payments_customer_totals WHERE customer = $1";

// What an event adds to its customer's totals.
struct Event {
  std::string customer;
  bool refund = false;
  int64_t amount = 0;
};

// Parses {"type":"payment.created"|"refund.created","data":{"customer":…,"amount":…}}.
absl::StatusOr<Event> ParseEvent(std::string_view body) {
  std::error_code ec;
  json::value value = json::parse(body, ec);
  const json::object* doc = ec ? nullptr : value.if_object();
  const json::value* type = doc ? doc->if_contains("type") : nullptr;
  const json::value* data = doc ? doc->if_contains("data") : nullptr;
  if (type == nullptr || !type->is_string() || data == nullptr || !data->is_object()) {
    return absl::InvalidArgumentError(
        R"(the payload must be {"type":"payment.created"|"refund.created","data":{...}})");
  }
  Event event;
  event.refund = type->as_string() == "refund.created";
  if (!event.refund && type->as_string() != "payment.created") {
    return absl::InvalidArgumentError(fmt::format(
        "unknown event type '{}'; this consumer takes payment.created and refund.created",
        std::string_view(type->as_string())));
  }
  const json::value* customer = data->as_object().if_contains("customer");
  const json::value* amount = data->as_object().if_contains("amount");
  if (customer == nullptr || !customer->is_string() || amount == nullptr || !amount->is_int64() ||
      amount->as_int64() <= 0) {
    return absl::InvalidArgumentError(
        "the event's data needs \"customer\" (a string) and \"amount\" (a positive integer)");
  }
  event.customer = std::string(customer->as_string());
  event.amount = amount->as_int64();
  return event;
}

// In one transaction: the inbox record of `id` and, the first time, the event's totals.
// Returns whether the event was applied now.
absl::StatusOr<bool> ApplyOnce(Store& store, const std::string& id, const Event& event) {
  auto tx = store.Begin();
  if (!tx.ok()) return tx.status();
  auto first = ConsumeOnce(**tx, kInboxSource, id);
  if (!first.ok()) return first.status();
  if (*first) {
    const std::array<SqlValue, 5> row = {
        event.customer, int64_t{event.refund ? 0 : 1}, int64_t{event.refund ? 1 : 0},
        event.refund ? int64_t{0} : event.amount, event.refund ? event.amount : int64_t{0}};
    if (auto n = (*tx)->Execute(kAddToTotals, row); !n.ok()) return n.status();
  }
  if (absl::Status committed = (*tx)->Commit(); !committed.ok()) return committed;
  return *first;
}

// ApplyOnce, tried again while the store is briefly busy (a lost race is Unavailable).
absl::StatusOr<bool> Apply(Store& store, const std::string& id, const Event& event) {
  std::chrono::milliseconds backoff(10);
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<bool> applied = ApplyOnce(store, id, event);
    if (applied.ok() || !absl::IsUnavailable(applied.status()) || attempt >= 3) return applied;
    std::this_thread::sleep_for(backoff);
    backoff *= 2;
  }
}

// Decodes %XX escapes of a path segment; nullopt for a malformed escape.
std::optional<std::string> PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    unsigned value = 0;
    for (size_t j = i + 1; j <= i + 2; ++j) {
      const char c = text[j];
      const int digit = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
      if (digit < 0) return std::nullopt;
      value = value * 16 + static_cast<unsigned>(digit);
    }
    out.push_back(static_cast<char>(value));
    i += 2;
  }
  return out;
}

}  // namespace

Consumer::Consumer(std::unique_ptr<Store> store, std::string key)
    : store_(std::move(store)), key_(std::move(key)) {}

absl::StatusOr<std::unique_ptr<Consumer>> Consumer::Open(std::string_view store_uri,
                                                         std::string_view secret) {
  auto key = DecodeWebhookSecret(secret);
  if (!key.ok()) return key.status();
  auto store = OpenStore(store_uri);
  if (!store.ok()) return store.status();
  if (absl::Status created = CreateTables(**store, kConsumerSchema, "consumer's"); !created.ok()) {
    return created;
  }
  return std::unique_ptr<Consumer>(new Consumer(*std::move(store), *std::move(key)));
}

Reply Consumer::Handle(const Request& request) {
  const std::string_view path =
      std::string_view(request.target).substr(0, request.target.find('?'));
  if (request.method == "POST") return Deliver(request);
  constexpr std::string_view kPrefix = "/customers/";
  if (request.method == "GET" && path.starts_with(kPrefix) && path.size() > kPrefix.size()) {
    auto customer = PercentDecode(path.substr(kPrefix.size()));
    if (customer.has_value()) return ShowCustomer(*customer);
  }
  return {Problem(404, "not-found", "No such route",
                  "POST a webhook to any path, or GET /customers/NAME for a customer's totals")};
}

Reply Consumer::Deliver(const Request& request) {
  const std::string id = HeaderValue(request, "webhook-id").value_or("");
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  absl::Status verified =
      VerifyWebhook(key_, id, HeaderValue(request, "webhook-timestamp").value_or(""),
                    HeaderValue(request, "webhook-signature").value_or(""), request.body, now);
  if (absl::IsUnauthenticated(verified)) {
    return {Problem(401, "bad-signature", "Webhook signature refused",
                    fmt::format("{}; sign with the secret this consumer was started with",
                                std::string(verified.message())))};
  }
  if (!verified.ok()) return {ProblemFor(verified)};
  auto event = ParseEvent(request.body);
  if (!event.ok()) return {ProblemFor(event.status())};
  auto applied = Apply(*store_, id, *event);
  if (!applied.ok()) return {ProblemFor(applied.status())};
  return {JsonResponse(200, *applied ? R"({"applied":true})" : R"({"applied":false})")};
}

Reply Consumer::ShowCustomer(const std::string& customer) {
  auto tx = store_->Begin();
  if (!tx.ok()) return {ProblemFor(tx.status())};
  const std::array<SqlValue, 1> key = {customer};
  auto rows = (*tx)->Query(kTotalsOf, key);
  (void)(*tx)->Rollback();
  if (!rows.ok()) return {ProblemFor(rows.status())};
  if (rows->empty()) {
    return {Problem(404, "customer-not-found", "No events of this customer yet",
                    fmt::format("no payment of customer '{}' has arrived yet", customer))};
  }
  std::array<int64_t, 4> n{};
  const SqlRow& row = rows->front();
  for (size_t i = 0; i < n.size(); ++i) {
    const auto* value = i < row.size() ? std::get_if<int64_t>(&row[i]) : nullptr;
    if (value == nullptr) {
      return {ProblemFor(absl::InternalError("a totals row is not four integers"))};
    }
    n[i] = *value;
  }
  json::object totals;
  totals["customer"] = customer;
  totals["payments"] = n[0];
  totals["refunds"] = n[1];
  totals["paid"] = n[2];
  totals["refunded"] = n[3];
  totals["total"] = n[2] - n[3];
  return {JsonResponse(200, json::serialize(totals))};
}

}  // namespace idem::payments

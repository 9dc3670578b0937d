#include "payment_requests.h"

#include <fmt/format.h>

#include <boost/json.hpp>

namespace idem::payments {
namespace {

namespace json = boost::json;

absl::StatusOr<json::object> ParseObject(std::string_view body, std::string_view example) {
  std::error_code ec;
  json::value value = json::parse(body, ec);
  if (ec || !value.is_object()) {
    return absl::InvalidArgumentError(
        fmt::format("the body must be a JSON object such as {}", example));
  }
  return std::move(value.as_object());
}

absl::StatusOr<int64_t> Amount(const json::object& body) {
  const json::value* amount = body.if_contains("amount");
  if (amount == nullptr) {
    return absl::InvalidArgumentError(
        "\"amount\" is missing: send the amount in cents as a positive integer, e.g. 1000");
  }
  int64_t value = 0;
  if (amount->is_int64()) {
    value = amount->as_int64();
  } else if (!amount->is_uint64()) {  // a uint64 is over INT64_MAX: too large below
    return absl::InvalidArgumentError(
        "\"amount\" must be a whole number of cents (a JSON integer, not a string or a fraction)");
  }
  if (amount->is_uint64() || value <= 0 || value > (int64_t{1} << 53)) {
    return absl::InvalidArgumentError(
        "\"amount\" must be a positive integer of cents, at most 9007199254740992");
  }
  return value;
}

absl::StatusOr<std::string> Currency(const json::object& body) {
  const json::value* currency = body.if_contains("currency");
  if (currency == nullptr || !currency->is_string()) {
    return absl::InvalidArgumentError(
        "\"currency\" must be a string: a three-letter lowercase ISO 4217 code such as \"usd\"");
  }
  const std::string_view text = currency->as_string();
  bool ok = text.size() == 3;
  for (char c : text) ok = ok && c >= 'a' && c <= 'z';
  if (!ok) {
    return absl::InvalidArgumentError(fmt::format(
        "\"currency\" must be three lowercase letters such as \"usd\"; got {} characters",
        text.size()));
  }
  return std::string(text);
}

absl::StatusOr<std::string> Customer(const json::object& body) {
  const json::value* customer = body.if_contains("customer");
  if (customer == nullptr || !customer->is_string()) {
    return absl::InvalidArgumentError("\"customer\" must be a string naming the customer");
  }
  const std::string_view text = customer->as_string();
  bool ok = !text.empty() && text.size() <= kMaxCustomerLength;
  for (char c : text) ok = ok && (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
  if (!ok) {
    return absl::InvalidArgumentError(fmt::format(
        "\"customer\" must be 1-{} bytes without control characters", kMaxCustomerLength));
  }
  return std::string(text);
}

}  // namespace

absl::StatusOr<PaymentRequest> ParsePaymentRequest(std::string_view body) {
  auto object = ParseObject(body, R"({"amount": 1000, "currency": "usd", "customer": "cus_42"})");
  if (!object.ok()) return object.status();
  PaymentRequest request;
  auto amount = Amount(*object);
  if (!amount.ok()) return amount.status();
  auto currency = Currency(*object);
  if (!currency.ok()) return currency.status();
  auto customer = Customer(*object);
  if (!customer.ok()) return customer.status();
  return PaymentRequest{
      .amount = *amount, .currency = *std::move(currency), .customer = *std::move(customer)};
}

absl::StatusOr<int64_t> ParseRefundRequest(std::string_view body) {
  auto object = ParseObject(body, R"({"amount": 300})");
  if (!object.ok()) return object.status();
  return Amount(*object);
}

}  // namespace idem::payments

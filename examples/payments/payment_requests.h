// The request bodies of the payments example, parsed and checked before anything is stored.
//
// Thread-safety: pure functions; call from any thread.
#ifndef IDEM_EXAMPLES_PAYMENTS_PAYMENT_REQUESTS_H_
#define IDEM_EXAMPLES_PAYMENTS_PAYMENT_REQUESTS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace idem::payments {

// Longest customer name, in bytes.
inline constexpr std::size_t kMaxCustomerLength = 255;

struct PaymentRequest {
  int64_t amount = 0;  // in the currency's smallest unit (cents), > 0
  std::string currency;
  std::string customer;
};

// Parses `{"amount": <int > 0>, "currency": "usd", "customer": "<string>"}`; other members are
// ignored. currency: three lowercase ASCII letters (an ISO 4217 code, e.g. "usd"); customer:
// 1-255 bytes of visible ASCII or UTF-8 without control characters.
// Errors: InvalidArgument saying which member is wrong and how to fix it.
absl::StatusOr<PaymentRequest> ParsePaymentRequest(std::string_view body);

// Parses `{"amount": <int > 0>}` and returns the amount. Errors: InvalidArgument as above.
absl::StatusOr<int64_t> ParseRefundRequest(std::string_view body);

}  // namespace idem::payments

#endif  // IDEM_EXAMPLES_PAYMENTS_PAYMENT_REQUESTS_H_

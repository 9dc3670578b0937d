// The payments service: payments and refunds created once per Idempotency-Key through the
// run-once guard (idem/guard.h). In one transaction each request claims its key, writes its
// payment or refund row, adds one outbox message (idem/outbox.h) and stores its response, so
// all of them commit together or none does; a retry with the same key replays the stored
// response and writes nothing.
//
//   POST /payments             {"amount":1000,"currency":"usd","customer":"cus_42"}
//                              201
//                              {"id":"pay_…","amount":1000,"currency":"usd","customer":"cus_42"}
//                              outbox: payment.created {"type":"payment.created","data":<payment>}
//   POST /payments/{id}/refunds {"amount":300}
//                              201 {"id":"re_…","payment_id":"pay_…","amount":300,…}; 404 for an
//                              unknown payment, 422 for more than is left to refund
//                              outbox: refund.created {"type":"refund.created","data":<refund>}
//   GET  /payments/{id}        200 the payment with "refunded" (read only, no key)
//
// Every message's aggregate key is the payment id, so `idem relay` delivers a payment's events in
// order.
//
// Thread-safety: Handle may be called from many threads at once (each call uses its own
// transaction).
#ifndef IDEM_EXAMPLES_PAYMENTS_PAYMENT_SERVICE_H_
#define IDEM_EXAMPLES_PAYMENTS_PAYMENT_SERVICE_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/guard.h"
#include "idem/store.h"
#include "problem.h"

namespace idem::payments {

class PaymentService final {
 public:
  // Opens the store named by `store_uri` (idem/store.h's OpenStore) and creates the example's
  // tables if missing. Errors: OpenStore's; a table that cannot be created (its error code).
  static absl::StatusOr<std::unique_ptr<PaymentService>> Open(std::string_view store_uri);
  PaymentService(const PaymentService&) = delete;
  PaymentService& operator=(const PaymentService&) = delete;

  // Answers one request (see the routes above). Never fails: every error is a problem response.
  Reply Handle(const Request& request);

 private:
  explicit PaymentService(std::unique_ptr<Store> store);
  Reply CreatePayment(const Request& request);
  Reply CreateRefund(const Request& request, const std::string& payment_id);
  Reply ShowPayment(const std::string& payment_id);
  // Runs `effect` under the request's key; the key header must be present and valid.
  Reply Guarded(const Request& request, const Effect& effect);

  std::unique_ptr<Store> store_;
  Guard guard_;
};

}  // namespace idem::payments

#endif  // IDEM_EXAMPLES_PAYMENTS_PAYMENT_SERVICE_H_

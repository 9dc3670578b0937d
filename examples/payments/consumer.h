// The payments consumer: receives the relay's webhooks (`idem relay --sink http`), checks their
// Standard Webhooks signature (idem/webhook_signature.h) and applies each event once through the
// inbox (idem/inbox.h): in one transaction of its own it records the webhook-id and adds the
// event to its customer's totals, so a redelivered webhook changes nothing.
//
//   POST (any path)          a webhook: 200 {"applied":true} the first time, {"applied":false}
//                            for a redelivery; 400 for missing or malformed webhook headers or a
//                            payload that is not a payments event; 401 for a bad signature or a
//                            timestamp more than 5 minutes off
//   GET /customers/{name}    200 {"customer","payments","refunds","paid","refunded","total"}
//                            (total = paid - refunded, in cents); 404 before any event of it
//
// Thread-safety: Handle may be called from many threads at once.
#ifndef IDEM_EXAMPLES_PAYMENTS_CONSUMER_H_
#define IDEM_EXAMPLES_PAYMENTS_CONSUMER_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/store.h"
#include "problem.h"

namespace idem::payments {

// The inbox source the consumer records webhooks under.
inline constexpr std::string_view kInboxSource = "idem-payments";

class Consumer final {
 public:
  // Opens the store, creates the consumer's table if missing and decodes `secret`
  // ("whsec_<base64>"). Errors: InvalidArgument for a malformed secret; OpenStore's.
  static absl::StatusOr<std::unique_ptr<Consumer>> Open(std::string_view store_uri,
                                                        std::string_view secret);
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;

  // Answers one request (see above). Never fails: every error is a problem response.
  Reply Handle(const Request& request);

 private:
  Consumer(std::unique_ptr<Store> store, std::string key);
  Reply Deliver(const Request& request);
  Reply ShowCustomer(const std::string& customer);

  std::unique_ptr<Store> store_;
  std::string key_;  // the secret's decoded bytes
};

}  // namespace idem::payments

#endif  // IDEM_EXAMPLES_PAYMENTS_CONSUMER_H_

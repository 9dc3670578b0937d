// The other body `idem check`'s mismatch scenario sends under a used key: the same request with
// one JSON field changed, or, for a body that is not a JSON object, one byte appended. Either way
// the request differs from the first in a way every fingerprint sees (RFC 8785 canonical JSON
// included: a value changes, not only its spelling).
//
// Thread-safety: pure function.
#ifndef IDEM_CHECK_BODY_VARIANT_H_
#define IDEM_CHECK_BODY_VARIANT_H_

#include <string>
#include <string_view>

namespace idem::check {

struct BodyVariant {
  std::string body;
  std::string change;  // for a person: field "amount" changed (4200 -> 4201); one byte appended
};

// Returns `body` changed: in a JSON object, its first member's value (a number gets 1 added, a
// string gets "-other" appended, a boolean is negated, anything else becomes "idem-check"; an
// empty object gets a member "idem_check"); any other body gets the byte 'x' appended.
BodyVariant OtherBody(std::string_view body);

}  // namespace idem::check

#endif  // IDEM_CHECK_BODY_VARIANT_H_

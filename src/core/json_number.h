// Internal: the exact decimal value of a JSON number, for a canonical form that never writes two
// different numbers alike (CanonicalJsonOptions::exact_numbers in idem/canonical_json.h).
//
// Thread-safety: pure functions.
#ifndef IDEM_CORE_JSON_NUMBER_H_
#define IDEM_CORE_JSON_NUMBER_H_

#include <optional>
#include <string>
#include <string_view>

namespace idem::core {

// A decimal number: its value is (negative ? -1 : 1) × 0.digits × 10^exponent. Zero has no digits
// and is never negative, so two Decimals are equal exactly when their values are.
struct Decimal {
  bool negative = false;
  std::string digits;  // significant digits, without leading or trailing zeros; empty for zero
  long long exponent = 0;
  bool operator==(const Decimal&) const = default;
};

// Returns the exact value of `text`, a number as JSON writes it (RFC 8259 §6: "-1.50e+3"), or
// nullopt when its exponent has more than 15 significant digits (far beyond any double).
// REQUIRES: `text` is a valid JSON number.
std::optional<Decimal> DecimalOf(std::string_view text);

// Returns the exact value of the shortest decimal that reads back as `value` (the digits
// ECMAScript's Number.prototype.toString writes). REQUIRES: `value` is finite.
Decimal ShortestDecimalOf(double value);

// Appends to `out` the canonical form of the JSON number `text`, whose nearest double is `value`
// (0 when `text` is below the smallest double): the RFC 8785 form of `value` (FormatJsonNumber)
// when that form has the same decimal value as `text`, so 1.50, 1.5e0 and 15e-1 are all "1.5";
// else the exact value in a form ECMAScript never writes, with a capital E
// ("1.0000000000000001E-1", "1.234567890123456789E18", "1E-400"); `text` itself when its exponent
// is too large to compute with. Each form has the value of `text`, so two numbers get the same
// form only when they are equal. REQUIRES: `text` is a valid JSON number.
void AppendExactNumber(std::string_view text, double value, std::string& out);

}  // namespace idem::core

#endif  // IDEM_CORE_JSON_NUMBER_H_

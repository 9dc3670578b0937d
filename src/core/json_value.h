// Internal: a JSON document as RFC 8785 sees it (numbers are doubles, member order as sent,
// duplicate names refused), parsed with Boost.JSON's event parser. Each number keeps its text as
// sent too, for a canonical form that must not round it (core/json_number.h).
#ifndef IDEM_CORE_JSON_VALUE_H_
#define IDEM_CORE_JSON_VALUE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace idem::core {

struct JsonMember;

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;                // kNumber: the nearest double (0 below the smallest one)
  std::string number_text;          // kNumber: the number as sent, e.g. "1.50e3"
  std::string string;               // kString: the decoded UTF-8 text
  std::vector<JsonValue> elements;  // kArray
  std::vector<JsonMember> members;  // kObject, in input order, names unique
};

struct JsonMember {
  std::string name;
  JsonValue value;
};

// Parses one JSON text. Returns InvalidArgument for invalid JSON or UTF-8, trailing data, a
// duplicate member name, a number that overflows a double, or nesting deeper than max_depth.
absl::StatusOr<JsonValue> ParseJson(std::string_view json, int max_depth);

}  // namespace idem::core

#endif  // IDEM_CORE_JSON_VALUE_H_

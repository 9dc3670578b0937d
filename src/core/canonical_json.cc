#include "idem/canonical_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string>

#include "common/status_macros.h"
#include "core/json_number.h"
#include "core/json_pointer.h"
#include "core/json_value.h"
#include "core/utf8.h"

namespace idem {
namespace {

using core::JsonMember;
using core::JsonValue;
using core::PointerTree;

// Returns the escape RFC 8785 §3.2.2.2 prescribes for `c`, or null when `c` is written as is.
const char* ShortEscape(char c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return nullptr;
  }
}

// Only the two-character escapes JSON defines and \u00xx for the other control characters;
// everything else, including DEL and non-ASCII, is written as literal UTF-8.
void WriteString(std::string_view text, std::string& out) {
  out.push_back('"');
  std::size_t run = 0;  // start of the pending run of bytes written as is
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.substr(run, i - run));
    run = i + 1;
    if (const char* escape = ShortEscape(static_cast<char>(c))) {
      out += escape;
    } else {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
    }
  }
  out.append(text.substr(run));
  out.push_back('"');
}

void WriteValue(const JsonValue& value, const PointerTree* excluded, bool exact_numbers,
                std::string& out);

void WriteArray(const JsonValue& value, const PointerTree* excluded, bool exact_numbers,
                std::string& out) {
  out.push_back('[');
  bool first = true;
  for (std::size_t i = 0; i < value.elements.size(); ++i) {
    const PointerTree* below = excluded ? excluded->Find(std::to_string(i)) : nullptr;
    if (below && below->excluded) continue;
    if (!first) out.push_back(',');
    first = false;
    WriteValue(value.elements[i], below, exact_numbers, out);
  }
  out.push_back(']');
}

// RFC 8785 §3.2.3: members sorted by their names as arrays of UTF-16 code units.
void WriteObject(const JsonValue& value, const PointerTree* excluded, bool exact_numbers,
                 std::string& out) {
  struct Entry {
    const JsonMember* member;
    const PointerTree* below;
  };
  std::vector<Entry> entries;
  entries.reserve(value.members.size());
  for (const JsonMember& member : value.members) {
    const PointerTree* below = excluded ? excluded->Find(member.name) : nullptr;
    if (below && below->excluded) continue;
    entries.push_back({&member, below});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return core::Utf16Less(a.member->name, b.member->name);
  });
  out.push_back('{');
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out.push_back(',');
    WriteString(entries[i].member->name, out);
    out.push_back(':');
    WriteValue(entries[i].member->value, entries[i].below, exact_numbers, out);
  }
  out.push_back('}');
}

// Appends the ECMAScript Number::toString form of a finite `value` > 0 to `out`. Built by
// appending rather than with `"literal" + std::string`: g++ 12 at -O2 and above reports a false
// -Wrestrict inside that operator's inlined memcpy (GCC bug 105329).
void AppendPositiveNumber(double value, std::string& out) {
  // Below 2^53 an integral double's exact digits are also its shortest round-trip digits.
  if (value < 9007199254740992.0 && value == std::floor(value)) {
    char digits[32];
    auto end = std::to_chars(digits, digits + sizeof digits, value, std::chars_format::fixed).ptr;
    out.append(digits, end);
    return;
  }
  // Shortest digits that read back as `value`: "d.ddde±x" → digits "dddd", n = x + 1, so that
  // value = 0.digits × 10^n.
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const std::string_view text(buffer, static_cast<std::size_t>(result.ptr - buffer));
  const std::size_t e = text.find('e');
  std::string digits;
  for (char c : text.substr(0, e)) {
    if (c != '.') digits.push_back(c);
  }
  const int n = std::atoi(std::string(text.substr(e + 1)).c_str()) + 1;
  const int k = static_cast<int>(digits.size());
  const auto count = [](int i) { return static_cast<std::size_t>(i); };
  if (k <= n && n <= 21) {
    out.append(digits).append(count(n - k), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, count(n)).append(".").append(digits, count(n));
  } else if (-6 < n && n <= 0) {
    out.append("0.").append(count(-n), '0').append(digits);
  } else {
    out.append(digits, 0, 1);
    if (k > 1) out.append(".").append(digits, 1);
    fmt::format_to(std::back_inserter(out), "e{}{}", n - 1 < 0 ? '-' : '+', std::abs(n - 1));
  }
}

void WriteValue(const JsonValue& value, const PointerTree* excluded, bool exact_numbers,
                std::string& out) {
  switch (value.kind) {
    case JsonValue::Kind::kNull:
      out += "null";
      break;
    case JsonValue::Kind::kBool:
      out += value.boolean ? "true" : "false";
      break;
    case JsonValue::Kind::kNumber:
      if (exact_numbers) {
        core::AppendExactNumber(value.number_text, value.number, out);
      } else {
        out += FormatJsonNumber(value.number);
      }
      break;
    case JsonValue::Kind::kString:
      WriteString(value.string, out);
      break;
    case JsonValue::Kind::kArray:
      WriteArray(value, excluded, exact_numbers, out);
      break;
    case JsonValue::Kind::kObject:
      WriteObject(value, excluded, exact_numbers, out);
      break;
  }
}

}  // namespace

std::string FormatJsonNumber(double value) {
  if (value == 0) return "0";  // also -0 (RFC 8785 §3.2.2.3)
  std::string out;
  if (value < 0) {
    out.push_back('-');
    value = -value;
  }
  AppendPositiveNumber(value, out);
  return out;
}

absl::StatusOr<std::string> CanonicalizeJson(std::string_view json,
                                             const CanonicalJsonOptions& options) {
  PointerTree excluded;
  for (const std::string& pointer : options.excluded_pointers) {
    IDEM_ASSIGN_OR_RETURN(std::vector<std::string> tokens, core::ParseJsonPointer(pointer));
    core::AddExcluded(excluded, tokens);
  }
  IDEM_ASSIGN_OR_RETURN(JsonValue document, core::ParseJson(json, options.max_depth));
  std::string out;
  out.reserve(json.size());
  WriteValue(document, &excluded, options.exact_numbers, out);
  return out;
}

}  // namespace idem

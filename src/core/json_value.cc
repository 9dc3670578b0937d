#include "core/json_value.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <charconv>
#include <cmath>
#include <exception>
#include <system_error>

namespace idem::core {
namespace {

using boost::json::error_code;
using boost::json::string_view;

// Returns the power of ten of the first significant digit of a valid JSON number (2 for "123",
// -3 for "0.001e0"), saturating far beyond the range of a double.
long DecimalMagnitude(std::string_view number) {
  const std::size_t e = number.find_first_of("eE");
  const std::string_view mantissa = number.substr(0, e);
  long exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view digits = number.substr(e + 1);
    const bool negative = !digits.empty() && digits.front() == '-';
    if (!digits.empty() && (digits.front() == '-' || digits.front() == '+'))
      digits.remove_prefix(1);
    for (char c : digits) exponent = std::min(exponent * 10 + (c - '0'), 1'000'000'000L);
    if (negative) exponent = -exponent;
  }
  const std::size_t point = std::min(mantissa.find('.'), mantissa.size());
  const std::size_t first = mantissa.find_first_of("123456789");
  if (first == std::string_view::npos) return -1;  // zero never overflows
  const long position =
      first < point ? static_cast<long>(point - first) - 1 : -static_cast<long>(first - point);
  return position + exponent;
}

// Builds a JsonValue from Boost.JSON parse events. A handler failure is reported through
// `error_` and a generic error code, so the parse stops at the first problem.
class TreeBuilder {
 public:
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_array_begin(error_code&) { return Open(JsonValue::Kind::kArray); }
  bool on_array_end(std::size_t, error_code& ec) { return Close(ec); }
  bool on_object_begin(error_code&) { return Open(JsonValue::Kind::kObject); }
  bool on_object_end(std::size_t, error_code& ec) { return CheckNames(ec) && Close(ec); }
  bool on_string_part(string_view s, std::size_t, error_code&) { return Append(s); }
  bool on_string(string_view s, std::size_t, error_code& ec) {
    Append(s);
    JsonValue value;
    value.kind = JsonValue::Kind::kString;
    value.string = std::move(text_);
    text_.clear();
    return Add(std::move(value), ec);
  }
  bool on_key_part(string_view s, std::size_t, error_code&) { return Append(s); }
  bool on_key(string_view s, std::size_t, error_code&) {
    Append(s);
    names_.push_back(std::move(text_));
    text_.clear();
    return true;
  }
  bool on_number_part(string_view s, error_code&) { return Append(s); }
  bool on_int64(std::int64_t, string_view s, error_code& ec) { return Number(s, ec); }
  bool on_uint64(std::uint64_t, string_view s, error_code& ec) { return Number(s, ec); }
  bool on_double(double, string_view s, error_code& ec) { return Number(s, ec); }
  bool on_bool(bool b, error_code& ec) {
    JsonValue value;
    value.kind = JsonValue::Kind::kBool;
    value.boolean = b;
    return Add(std::move(value), ec);
  }
  bool on_null(error_code& ec) { return Add(JsonValue{}, ec); }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }

  const std::string& error() const { return error_; }
  JsonValue TakeRoot() { return std::move(root_); }

 private:
  bool Append(string_view s) {
    text_.append(s.data(), s.size());
    return true;
  }
  bool Fail(std::string message, error_code& ec) {
    error_ = std::move(message);
    ec = std::make_error_code(std::errc::invalid_argument);
    return false;
  }
  bool Open(JsonValue::Kind kind) {
    open_.emplace_back();
    open_.back().kind = kind;
    return true;
  }
  bool Close(error_code& ec) {
    JsonValue value = std::move(open_.back());
    open_.pop_back();
    return Add(std::move(value), ec);
  }
  bool Add(JsonValue value, error_code&) {
    if (open_.empty()) {
      root_ = std::move(value);
    } else if (open_.back().kind == JsonValue::Kind::kArray) {
      open_.back().elements.push_back(std::move(value));
    } else {
      open_.back().members.push_back({std::move(names_.back()), std::move(value)});
      names_.pop_back();
    }
    return true;
  }
  // Parses the number's full text as a double, rounding to nearest as ECMAScript does.
  bool Number(string_view last, error_code& ec) {
    Append(last);
    JsonValue value;
    value.kind = JsonValue::Kind::kNumber;
    const char* end = text_.data() + text_.size();
    auto [ptr, err] = std::from_chars(text_.data(), end, value.number);
    if (err == std::errc::result_out_of_range) return OutOfRange(ec);
    if (err != std::errc() || ptr != end || !std::isfinite(value.number)) {
      return Fail(fmt::format("number {} cannot be read as a double", text_), ec);
    }
    value.number_text = std::move(text_);
    text_.clear();
    return Add(std::move(value), ec);
  }
  // from_chars reports both overflow and underflow as out of range; JSON numbers beyond the
  // largest double are refused (JSON has no Infinity), ones below the smallest become zero, as
  // ECMAScript's rounding would make them.
  bool OutOfRange(error_code& ec) {
    if (DecimalMagnitude(text_) >= 0) {
      return Fail(fmt::format("number {} is too large for a double", text_), ec);
    }
    JsonValue value;
    value.kind = JsonValue::Kind::kNumber;
    value.number_text = std::move(text_);
    text_.clear();
    return Add(std::move(value), ec);
  }
  bool CheckNames(error_code& ec) {
    const std::vector<JsonMember>& members = open_.back().members;
    std::vector<std::string_view> names;
    names.reserve(members.size());
    for (const JsonMember& member : members) names.push_back(member.name);
    std::sort(names.begin(), names.end());
    auto dup = std::adjacent_find(names.begin(), names.end());
    if (dup == names.end()) return true;
    return Fail(fmt::format("object has member \"{}\" twice; each name may appear only once", *dup),
                ec);
  }

  std::vector<JsonValue> open_;
  std::vector<std::string> names_;
  std::string text_;
  JsonValue root_;
  std::string error_;
};

}  // namespace

absl::StatusOr<JsonValue> ParseJson(std::string_view json, int max_depth) {
  boost::json::parse_options options;
  options.max_depth = static_cast<std::size_t>(std::max(max_depth, 1));
  try {
    boost::json::basic_parser<TreeBuilder> parser(options);
    error_code ec;
    const std::size_t used = parser.write_some(false, json.data(), json.size(), ec);
    if (ec) {
      const std::string& detail = parser.handler().error();
      return absl::InvalidArgumentError(
          detail.empty() ? fmt::format("invalid JSON at byte {}: {}", used, ec.message()) : detail);
    }
    if (used != json.size()) {
      return absl::InvalidArgumentError(
          fmt::format("invalid JSON: unexpected data after the value at byte {}", used));
    }
    return parser.handler().TakeRoot();
  } catch (const std::exception& e) {  // allocation failure inside Boost.JSON
    return absl::ResourceExhaustedError(fmt::format("cannot parse JSON: {}", e.what()));
  }
}

}  // namespace idem::core

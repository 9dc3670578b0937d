#include "store/postgres/pg_values.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <type_traits>

namespace idem::postgres {
namespace {

// Type OIDs from PostgreSQL's pg_type.dat (stable across versions).
constexpr Oid kBoolOid = 16;
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt2Oid = 21;
constexpr Oid kInt4Oid = 23;
constexpr Oid kOidOid = 26;
constexpr Oid kFloat4Oid = 700;
constexpr Oid kFloat8Oid = 701;
constexpr Oid kNumericOid = 1700;

std::string DoubleText(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return fmt::format("{}", value);  // shortest text that reads back as the same double
}

SqlValue DecodeValue(const PGresult* result, int row, int column) {
  if (PQgetisnull(result, row, column)) return std::monostate{};
  const char* text = PQgetvalue(result, row, column);
  switch (PQftype(result, column)) {
    case kInt2Oid:
    case kInt4Oid:
    case kInt8Oid:
    case kOidOid:
      return static_cast<int64_t>(std::strtoll(text, nullptr, 10));
    case kBoolOid:
      return int64_t{text[0] == 't' ? 1 : 0};
    case kFloat4Oid:
    case kFloat8Oid:
    case kNumericOid:
      return std::strtod(text, nullptr);
    case kByteaOid:
      return Blob{DecodeBytea(result, row, column)};
    default:
      return std::string(text, static_cast<size_t>(PQgetlength(result, row, column)));
  }
}

}  // namespace

absl::StatusOr<EncodedParams> EncodeParams(std::span<const SqlValue> params) {
  EncodedParams out;
  out.text.reserve(params.size());  // no reallocation: values point into it
  // Each statement of a guarded call has 2-11 parameters: growing five vectors one element at a
  // time cost it more allocations than everything else it does on the client.
  out.values.reserve(params.size());
  out.lengths.reserve(params.size());
  out.formats.reserve(params.size());
  out.types.reserve(params.size());
  out.signature.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const SqlValue& param = params[i];
    const char* value = nullptr;
    int length = 0;
    int format = 0;
    Oid type = 0;
    char tag = 'n';
    if (const auto* n = std::get_if<int64_t>(&param)) {
      value = out.text.emplace_back(std::to_string(*n)).c_str();
      type = kInt8Oid;
      tag = 'i';
    } else if (const auto* d = std::get_if<double>(&param)) {
      value = out.text.emplace_back(DoubleText(*d)).c_str();
      type = kFloat8Oid;
      tag = 'd';
    } else if (const auto* s = std::get_if<std::string>(&param)) {
      if (s->find('\0') != std::string::npos) {
        return absl::InvalidArgumentError(fmt::format(
            "parameter ${} is text containing a NUL byte, which PostgreSQL text cannot hold: "
            "pass it as a Blob (bytea)",
            i + 1));
      }
      value = s->c_str();
      tag = 't';
    } else if (const auto* b = std::get_if<Blob>(&param)) {
      value = b->bytes.data();
      length = static_cast<int>(b->bytes.size());
      format = 1;
      type = kByteaOid;
      tag = 'b';
    }
    out.values.push_back(value);
    out.lengths.push_back(length);
    out.formats.push_back(format);
    out.types.push_back(type);
    out.signature.push_back(tag);
  }
  return out;
}

std::vector<SqlRow> DecodeRows(const PGresult* result) {
  const int rows = PQntuples(result);
  const int columns = PQnfields(result);
  std::vector<SqlRow> out(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    out[static_cast<size_t>(r)].reserve(static_cast<size_t>(columns));
    for (int c = 0; c < columns; ++c) {
      out[static_cast<size_t>(r)].push_back(DecodeValue(result, r, c));
    }
  }
  return out;
}

std::string DecodeBytea(const PGresult* result, int row, int column) {
  size_t length = 0;
  const auto* text = reinterpret_cast<const unsigned char*>(PQgetvalue(result, row, column));
  unsigned char* bytes = PQunescapeBytea(text, &length);
  if (bytes == nullptr) return {};
  std::string out(reinterpret_cast<const char*>(bytes), length);
  PQfreemem(bytes);
  return out;
}

}  // namespace idem::postgres

#include "store/sqlite/header_codec.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

namespace idem::sqlite {
namespace {

void AppendField(std::string& out, std::string_view field) {
  char digits[20];
  const auto end = std::to_chars(digits, digits + sizeof(digits), field.size()).ptr;
  out.append(digits, end);
  out += ':';
  out += field;
}

// Reads one "<length>:<bytes>" field from the front of `in`, advancing it.
std::optional<std::string> ReadField(std::string_view& in) {
  const size_t colon = in.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 19) return std::nullopt;
  size_t length = 0;
  const auto [end, ec] = std::from_chars(in.data(), in.data() + colon, length);
  if (ec != std::errc() || end != in.data() + colon) return std::nullopt;
  in.remove_prefix(colon + 1);
  if (length > in.size()) return std::nullopt;
  std::string field(in.substr(0, length));
  in.remove_prefix(length);
  return field;
}

}  // namespace

std::string EncodeHeaders(const std::vector<Header>& headers) {
  // One allocation: each field takes its bytes plus at most 20 digits and a ':'.
  size_t size = 0;
  for (const Header& header : headers) size += header.name.size() + header.value.size() + 42;
  std::string out;
  out.reserve(size);
  for (const Header& header : headers) {
    AppendField(out, header.name);
    AppendField(out, header.value);
  }
  return out;
}

absl::StatusOr<std::vector<Header>> DecodeHeaders(std::string_view encoded) {
  std::vector<Header> headers;
  const size_t total = encoded.size();
  while (!encoded.empty()) {
    std::optional<std::string> name = ReadField(encoded);
    std::optional<std::string> value =
        name.has_value() ? ReadField(encoded) : std::optional<std::string>();
    if (!value.has_value()) {
      return absl::DataLossError(fmt::format(
          "a stored record's headers are damaged at byte {} of {}; the record cannot be "
          "replayed: delete it so the key runs again",
          total - encoded.size(), total));
    }
    headers.push_back(Header{*std::move(name), *std::move(value)});
  }
  return headers;
}

}  // namespace idem::sqlite

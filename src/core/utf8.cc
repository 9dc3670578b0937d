#include "core/utf8.h"

#include <algorithm>

namespace idem::core {

std::int32_t DecodeUtf8(std::string_view text, std::size_t* pos) {
  const auto lead = static_cast<unsigned char>(text[*pos]);
  if (lead < 0x80) {
    ++*pos;
    return lead;
  }
  std::size_t length = 0;
  std::int32_t code = 0;
  std::int32_t min = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code = lead & 0x07, min = 0x10000;
  } else {
    return -1;
  }
  if (text.size() - *pos < length) return -1;
  for (std::size_t i = 1; i < length; ++i) {
    const auto next = static_cast<unsigned char>(text[*pos + i]);
    if ((next & 0xC0) != 0x80) return -1;
    code = (code << 6) | (next & 0x3F);
  }
  if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return -1;
  *pos += length;
  return code;
}

std::size_t FindInvalidUtf8(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (DecodeUtf8(text, &pos) < 0) return pos;
  }
  return std::string_view::npos;
}

std::u16string Utf8ToUtf16(std::string_view text) {
  std::u16string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::int32_t code = DecodeUtf8(text, &pos);
    if (code < 0) {  // Unreachable under the precondition; keep going rather than loop forever.
      code = 0xFFFD;
      ++pos;
    }
    if (code >= 0x10000) {
      code -= 0x10000;
      out.push_back(static_cast<char16_t>(0xD800 + (code >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + (code & 0x3FF)));
    } else {
      out.push_back(static_cast<char16_t>(code));
    }
  }
  return out;
}

// UTF-8 byte order is code point order, which differs from UTF-16 order only between a
// supplementary character (a surrogate pair, D800-DBFF first) and a BMP character at or above
// U+E000.
bool Utf16Less(std::string_view a, std::string_view b) {
  auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (ib == b.end()) return false;  // b is a prefix of a, or equal to it
  if (ia == a.end()) return true;   // a is a proper prefix of b
  std::size_t pos_a = static_cast<std::size_t>(ia - a.begin());
  while (pos_a > 0 && (static_cast<unsigned char>(a[pos_a]) & 0xC0) == 0x80) --pos_a;
  std::size_t pos_b = pos_a;  // the common prefix ends on the same code point boundary
  const std::int32_t ca = DecodeUtf8(a, &pos_a);
  const std::int32_t cb = DecodeUtf8(b, &pos_b);
  if ((ca >= 0x10000) == (cb >= 0x10000)) return ca < cb;
  return ca >= 0x10000 ? cb >= 0xE000 : ca < 0xE000;
}

}  // namespace idem::core

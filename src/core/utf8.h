// Internal UTF-8 helpers shared by key validation and canonical JSON.
#ifndef IDEM_CORE_UTF8_H_
#define IDEM_CORE_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace idem::core {

// Decodes the code point that starts at text[*pos] and moves *pos past it. Returns -1, leaving
// *pos unchanged, for a truncated, overlong or out-of-range sequence or an encoded surrogate.
// REQUIRES: *pos < text.size().
std::int32_t DecodeUtf8(std::string_view text, std::size_t* pos);

// Returns the offset of the first invalid UTF-8 byte, or npos when `text` is valid UTF-8.
std::size_t FindInvalidUtf8(std::string_view text);

// Returns `text` as UTF-16 code units. REQUIRES: FindInvalidUtf8(text) == npos.
std::u16string Utf8ToUtf16(std::string_view text);

// Returns whether `a` sorts before `b` when both are compared as arrays of UTF-16 code units
// (RFC 8785 §3.2.3), without converting them. REQUIRES: both are valid UTF-8.
bool Utf16Less(std::string_view a, std::string_view b);

}  // namespace idem::core

#endif  // IDEM_CORE_UTF8_H_

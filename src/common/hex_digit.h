// Internal: the value of one hexadecimal digit, for the parsers of UUIDs and of percent-encoding
// (conninfo keywords, request paths).
#ifndef IDEM_COMMON_HEX_DIGIT_H_
#define IDEM_COMMON_HEX_DIGIT_H_

namespace idem {

// 0-15 for a hexadecimal digit of either case, -1 for any other character.
constexpr int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace idem

#endif  // IDEM_COMMON_HEX_DIGIT_H_

#include "core/utf8.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace idem::core {
namespace {

std::string Encode(std::int32_t code) {
  std::string out;
  if (code < 0x80) {
    out.push_back(static_cast<char>(code));
  } else if (code < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code >> 6)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else if (code < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  }
  return out;
}

TEST(Utf8, DecodesEveryEncodingLengthAndRefusesBadSequences) {
  for (std::int32_t code :
       {0x00, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF}) {
    const std::string text = Encode(code);
    std::size_t pos = 0;
    EXPECT_EQ(DecodeUtf8(text, &pos), code);
    EXPECT_EQ(pos, text.size());
  }
  for (std::string_view bad : {"\x80", "\xC0\x80", "\xC3", "\xE0\x80\x80", "\xED\xA0\x80",
                               "\xF4\x90\x80\x80", "\xF8\x88\x80\x80\x80", "\xC3\x28"}) {
    std::size_t pos = 0;
    EXPECT_EQ(DecodeUtf8(bad, &pos), -1);
    EXPECT_EQ(pos, 0u);
    EXPECT_EQ(FindInvalidUtf8(std::string("ok") + std::string(bad)), 2u);
  }
  EXPECT_EQ(FindInvalidUtf8("plain \xC3\xA9 text"), std::string_view::npos);
}

TEST(Utf8, Utf16LessOrdersSupplementaryCharactersBeforeHighBmpCharacters) {
  const std::string emoji = Encode(0x1F600);  // D83D DE00
  const std::string dalet = Encode(0xFB33);   // FB33
  const std::string hangul = Encode(0xAC00);  // AC00, below the surrogates
  EXPECT_TRUE(Utf16Less(emoji, dalet));
  EXPECT_FALSE(Utf16Less(dalet, emoji));
  EXPECT_TRUE(Utf16Less(hangul, emoji));
  EXPECT_FALSE(Utf16Less(emoji, hangul));
  EXPECT_TRUE(Utf16Less("a", "ab"));
  EXPECT_FALSE(Utf16Less("ab", "a"));
  EXPECT_FALSE(Utf16Less("a", "a"));
}

// Property: Utf16Less agrees with comparing the UTF-16 conversions, on random names mixing
// ASCII, BMP characters on both sides of the surrogates, and supplementary characters.
TEST(Utf8, Utf16LessAgreesWithComparingUtf16Units) {
  std::mt19937 rng(20260101);
  const std::vector<std::pair<std::int32_t, std::int32_t>> ranges = {
      {0x20, 0x7E}, {0x80, 0x7FF}, {0x800, 0xD7FF}, {0xE000, 0xFFFF}, {0x10000, 0x10FFFF}};
  auto random_name = [&] {
    std::string name;
    const int length = static_cast<int>(rng() % 4);
    for (int i = 0; i < length; ++i) {
      const auto& [low, high] = ranges[rng() % ranges.size()];
      name +=
          Encode(low + static_cast<std::int32_t>(rng() % static_cast<unsigned>(high - low + 1)));
    }
    return name;
  };
  for (int i = 0; i < 20000; ++i) {
    const std::string prefix = random_name();
    const std::string a = prefix + random_name();
    const std::string b = prefix + random_name();
    ASSERT_EQ(Utf16Less(a, b), Utf8ToUtf16(a) < Utf8ToUtf16(b)) << i;
  }
}

}  // namespace
}  // namespace idem::core

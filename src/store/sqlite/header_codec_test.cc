#include "store/sqlite/header_codec.h"

#include <gtest/gtest.h>

namespace idem::sqlite {
namespace {

TEST(HeaderCodec, RoundTripsOrderDuplicatesAndAnyBytes) {
  const std::vector<Header> headers = {{"Content-Type", "text/plain"},
                                       {"X-A", std::string("a\0:b\n5:", 7)},
                                       {"X-A", ""},
                                       {"", "empty name"}};
  absl::StatusOr<std::vector<Header>> decoded = DecodeHeaders(EncodeHeaders(headers));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, headers);
}

TEST(HeaderCodec, NoHeadersEncodeAsEmpty) {
  EXPECT_EQ(EncodeHeaders({}), "");
  absl::StatusOr<std::vector<Header>> decoded = DecodeHeaders("");
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->empty());
}

TEST(HeaderCodec, DamagedEncodingIsDataLoss) {
  for (const char* bad : {"3:ab", "x:ab", "2:ab", "2:ab9:short", ":", "-1:a0:",
                          "99999999999999999999:a"}) {
    EXPECT_EQ(DecodeHeaders(bad).status().code(), absl::StatusCode::kDataLoss) << bad;
  }
}

}  // namespace
}  // namespace idem::sqlite

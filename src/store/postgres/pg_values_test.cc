#include "store/postgres/pg_values.h"

#include <gtest/gtest.h>

#include "store/postgres/pg_key_table.h"

namespace idem::postgres {
namespace {

TEST(PgValues, ParametersCarryTypesAndFormats) {
  const SqlValue params[] = {std::monostate{}, int64_t{-42}, 1.5, std::string("text"),
                             Blob{std::string("a\0b", 3)}};
  absl::StatusOr<EncodedParams> encoded = EncodeParams(params);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_EQ(encoded->signature, "nidtb");
  EXPECT_EQ(encoded->values[0], nullptr);
  EXPECT_STREQ(encoded->values[1], "-42");
  EXPECT_EQ(encoded->types[1], 20u);
  EXPECT_STREQ(encoded->values[2], "1.5");
  EXPECT_STREQ(encoded->values[3], "text");
  EXPECT_EQ(encoded->formats[4], 1);
  EXPECT_EQ(encoded->lengths[4], 3);
  EXPECT_EQ(encoded->types[4], 17u);
}

TEST(PgValues, TextWithNulIsRejected) {
  const SqlValue params[] = {std::string("a\0b", 3)};
  EXPECT_EQ(EncodeParams(params).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PgValues, SpecialDoublesUsePostgresSpelling) {
  const SqlValue params[] = {std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN()};
  absl::StatusOr<EncodedParams> encoded = EncodeParams(params);
  ASSERT_TRUE(encoded.ok());
  EXPECT_STREQ(encoded->values[0], "Infinity");
  EXPECT_STREQ(encoded->values[1], "NaN");
}

TEST(PgValues, HeadersRoundTripIncludingEmptyAndBinaryValues) {
  const std::vector<Header> headers = {
      {"Content-Type", "application/json"}, {"X-Empty", ""}, {"X-Bin", std::string("\0\xff", 2)}};
  EXPECT_EQ(DecodeHeaders(EncodeHeaders(headers)), headers);
  EXPECT_TRUE(DecodeHeaders("").empty());
}

}  // namespace
}  // namespace idem::postgres

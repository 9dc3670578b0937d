#include "core/base64.h"

#include <gtest/gtest.h>

namespace idem::core {
namespace {

TEST(EncodeBase64, MatchesRfc4648TestVectorsWithPadding) {
  EXPECT_EQ(EncodeBase64(""), "");
  EXPECT_EQ(EncodeBase64("f"), "Zg==");
  EXPECT_EQ(EncodeBase64("fo"), "Zm8=");
  EXPECT_EQ(EncodeBase64("foo"), "Zm9v");
  EXPECT_EQ(EncodeBase64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(EncodeBase64(std::string("\xff\x00\xfe", 3)), "/wD+");
}

}  // namespace
}  // namespace idem::core

// The body flags of `idem call` (issue 12): -d @FILE and curl's --data-binary @FILE both send the
// file byte for byte (curl would drop CR and LF from -d @FILE; a changed body would be another
// request to the server's fingerprint).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/call_options.h"

namespace idem::cli {
namespace {

class CallBodyTest : public ::testing::Test {
 protected:
  CallBodyTest() {
    std::string dir = ::testing::TempDir() + "idem-body-XXXXXX";
    dir_ = mkdtemp(dir.data()) == nullptr ? std::string() : dir;
    path_ = dir_ + "/body.txt";
    std::ofstream(path_, std::ios::binary) << "a=1\r\nb=2\n";
  }
  ~CallBodyTest() override { std::filesystem::remove_all(dir_); }

  CallFlags Flags() {
    CallFlags f;
    f.url = "http://127.0.0.1:1/";
    return f;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(CallBodyTest, DataFromAFileKeepsCarriageReturnsAndNewlines) {
  CallFlags f = Flags();
  f.data = "@" + path_;
  absl::StatusOr<CallPlan> plan = MakeCallPlan(f);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->request.body, "a=1\r\nb=2\n");
  EXPECT_EQ(plan->request.method, "POST");
}

TEST_F(CallBodyTest, DataBinaryFromAFileIsSentByteForByte) {
  CallFlags f = Flags();
  f.data_binary = "@" + path_;
  absl::StatusOr<CallPlan> plan = MakeCallPlan(f);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->request.body, "a=1\r\nb=2\n");
  EXPECT_EQ(plan->request.method, "POST");
  EXPECT_TRUE(plan->key.has_value());
}

TEST_F(CallBodyTest, DataAndDataBinaryTogetherAreInvalidArgument) {
  CallFlags f = Flags();
  f.data = "a=1";
  f.data_binary = "b=2";
  EXPECT_EQ(MakeCallPlan(f).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::cli

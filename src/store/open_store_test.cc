// OpenStore's URI forms (which sqlite: spellings mean which file) and RedactStoreUri: no message
// carries a password, in URI or key=value form, quoted or not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "idem/store.h"

namespace idem {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Runs in a fresh directory of its own, so that relative paths land there.
class OpenStoreTest : public ::testing::Test {
 protected:
  OpenStoreTest() {
    std::string pattern = ::testing::TempDir() + "idem-open-XXXXXX";
    const char* dir = mkdtemp(pattern.data());
    dir_ = dir == nullptr ? std::string() : std::string(dir);
    previous_ = std::filesystem::current_path();
    std::filesystem::current_path(dir_);
  }
  ~OpenStoreTest() override {
    std::filesystem::current_path(previous_);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string dir_;
  std::filesystem::path previous_;
};

TEST_F(OpenStoreTest, SqliteWithTwoSlashesIsRefusedInsteadOfCreatingAFileAtTheRoot) {
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore("sqlite://idem-open-store-test.db");
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(store.status().message()),
              HasSubstr("sqlite:///idem-open-store-test.db"));
  EXPECT_FALSE(std::filesystem::exists("/idem-open-store-test.db"));
}

TEST_F(OpenStoreTest, SqlAlchemyFormsNameARelativeAndAnAbsoluteFile) {
  ASSERT_TRUE(OpenStore("sqlite:///relative.db").ok());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/relative.db"));
  ASSERT_TRUE(OpenStore("sqlite:////" + dir_.substr(1) + "/absolute.db?synchronous=normal").ok());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/absolute.db"));
  ASSERT_TRUE(OpenStore("sqlite:plain.db").ok());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/plain.db"));
}

TEST_F(OpenStoreTest, SqliteUriNamingNoFileIsInvalidArgument) {
  for (const char* uri : {"sqlite:", "sqlite:///", "sqlite:?synchronous=full"}) {
    EXPECT_EQ(OpenStore(uri).status().code(), absl::StatusCode::kInvalidArgument) << uri;
  }
}

TEST(OpenStoreMessages, UnknownSchemeDoesNotPrintThePassword) {
  for (const char* uri : {"host=h password='se cret' bogus=1", "host=h password=secret1 x=1",
                          "mysql://app:secret1@h/db"}) {
    absl::Status status = OpenStore(uri).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << uri;
    EXPECT_THAT(std::string(status.message()), HasSubstr("no known scheme"));
    for (const char* secret : {"se cret", "cret", "secret1"}) {
      EXPECT_THAT(std::string(status.message()), Not(HasSubstr(secret))) << status;
    }
  }
}

TEST(OpenStoreMessages, RedactStoreUriHidesPasswordsInBothForms) {
  EXPECT_EQ(RedactStoreUri("host=h password='se cret' user=u"), "host=h password=*** user=u");
  EXPECT_EQ(RedactStoreUri("host=h password = 'it\\'s x' user=u"), "host=h password = *** user=u");
  EXPECT_EQ(RedactStoreUri("host=h sslpassword=k password=p"),
            "host=h sslpassword=*** password=***");
  EXPECT_EQ(RedactStoreUri("postgresql://u:p@ss@h:1/d"), "postgresql://u:***@h:1/d");
  EXPECT_EQ(RedactStoreUri("postgresql://u@h/d?x=1&pass%77ord=p"),
            "postgresql://u@h/d?x=1&pass%77ord=***");
  // A malformed key=value string: from the break on, nothing is known not to be a password.
  EXPECT_EQ(RedactStoreUri("host=h password='never closed"), "host=h password=***");
  EXPECT_EQ(RedactStoreUri("host=h se cret"), "host=h ***");
  EXPECT_EQ(RedactStoreUri("sqlite:./idem.db"), "sqlite:./idem.db");
}

}  // namespace
}  // namespace idem

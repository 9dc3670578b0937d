// The SQLite store's integrity check (URI option integrity=quick|full, CheckSqliteIntegrity) and
// the store that must already exist (StoreOptions::create_if_missing = false).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "idem/sqlite_store.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using absl::StatusCode;
using idem::testing::CodeOf;

constexpr int kPageBytes = 4096;  // SQLite's default page size, which the store keeps

class SqliteIntegrityTest : public ::testing::Test {
 protected:
  SqliteIntegrityTest() {
    std::string pattern = ::testing::TempDir() + "idem-integrity-XXXXXX";
    const char* dir = mkdtemp(pattern.data());
    dir_ = dir == nullptr ? std::string() : std::string(dir);
    path_ = dir_ + "/idem.db";
    options_.lock_timeout = std::chrono::milliseconds(50);
  }
  ~SqliteIntegrityTest() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  absl::StatusOr<std::unique_ptr<Store>> Open(std::string_view query = "") {
    return OpenSqliteStore(path_, query, options_);
  }

  // A store whose file spans many pages: a table of rows bigger than a page, so the last page of
  // the file is a data page that opening the store never reads.
  void CreateStoreWithManyPages() {
    IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
    IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store->Begin());
    ASSERT_TRUE(tx->Execute("CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT)").ok());
    for (int i = 0; i < 200; ++i) {
      const std::array<SqlValue, 1> body = {std::string(300, static_cast<char>('a' + i % 26))};
      ASSERT_TRUE(tx->Execute("INSERT INTO filler (body) VALUES ($1)", body).ok());
    }
    ASSERT_TRUE(tx->Commit().ok());
  }  // closing the last connection checkpoints the WAL into the file

  // Overwrites the header of the file's last page with bytes no b-tree page has.
  void DamageLastPage() {
    const auto size = std::filesystem::file_size(path_);
    ASSERT_GT(size, 4u * kPageBytes);
    std::fstream file(path_, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(size - kPageBytes));
    const std::string junk(16, '\x7f');
    file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    ASSERT_TRUE(file.good());
  }

  StoreOptions options_;
  std::string dir_;
  std::string path_;
};

TEST_F(SqliteIntegrityTest, HealthyStoreOpensWithEveryCheck) {
  CreateStoreWithManyPages();
  EXPECT_TRUE(Open("integrity=quick").ok());
  EXPECT_TRUE(Open("integrity=full&synchronous=normal").ok());
  EXPECT_TRUE(Open("integrity=off").ok());
  EXPECT_TRUE(CheckSqliteIntegrity(path_, /*full=*/false, options_.lock_timeout).ok());
  EXPECT_TRUE(CheckSqliteIntegrity(path_, /*full=*/true, options_.lock_timeout).ok());
}

TEST_F(SqliteIntegrityTest, DamagedPageIsDataLossAtOpenWhenTheUriAsksForACheck) {
  CreateStoreWithManyPages();
  DamageLastPage();
  // Without a check the damage goes unseen at open: what the check is for.
  EXPECT_TRUE(Open().ok());
  absl::StatusOr<std::unique_ptr<Store>> quick = Open("integrity=quick");
  EXPECT_EQ(CodeOf(quick), StatusCode::kDataLoss);
  EXPECT_NE(quick.status().message().find("quick_check"), std::string_view::npos) << quick.status();
  EXPECT_EQ(CodeOf(Open("integrity=full")), StatusCode::kDataLoss);
}

TEST_F(SqliteIntegrityTest, CheckSqliteIntegrityFindsTheDamageAndWritesNothing) {
  CreateStoreWithManyPages();
  DamageLastPage();
  const auto size = std::filesystem::file_size(path_);
  EXPECT_EQ(CheckSqliteIntegrity(path_, false, options_.lock_timeout).code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(CheckSqliteIntegrity(path_, true, options_.lock_timeout).code(), StatusCode::kDataLoss);
  EXPECT_EQ(std::filesystem::file_size(path_), size);
}

TEST_F(SqliteIntegrityTest, CheckOfAMissingFileIsNotFoundAndCreatesNothing) {
  EXPECT_EQ(CheckSqliteIntegrity(path_, false, options_.lock_timeout).code(),
            StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(SqliteIntegrityTest, UnknownIntegrityValueIsInvalidArgument) {
  EXPECT_EQ(CodeOf(Open("integrity=yes")), StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(SqliteIntegrityTest, StoreThatMustExistIsNotFoundAndNotCreated) {
  options_.create_if_missing = false;
  EXPECT_EQ(CodeOf(Open()), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(path_));
  options_.create_if_missing = true;
  ASSERT_TRUE(Open().ok());
  options_.create_if_missing = false;
  EXPECT_TRUE(Open().ok());
}

}  // namespace
}  // namespace idem

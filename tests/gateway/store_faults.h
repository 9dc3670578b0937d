// Store faults for the gateway's end-to-end tests, one per store: SQLite's write lock held by
// another connection (as another process would; reads go on), and the private PostgreSQL server
// of the "postgres_gateway_down" fixture stopped and started again (IDEM_PG_FIXTURE_DIR).
#ifndef IDEM_TESTS_GATEWAY_STORE_FAULTS_H_
#define IDEM_TESTS_GATEWAY_STORE_FAULTS_H_

#include <cstdlib>
#include <string>

#ifndef IDEM_E2E_POSTGRES
#include <sqlite3.h>
#endif

namespace idem::e2e {

#ifndef IDEM_E2E_POSTGRES
// Holds the SQLite database's write lock from another connection while alive.
class WriteLockHolder {
 public:
  explicit WriteLockHolder(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) return;
    locked_ = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~WriteLockHolder() {
    if (locked_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }
  WriteLockHolder(const WriteLockHolder&) = delete;
  WriteLockHolder& operator=(const WriteLockHolder&) = delete;
  bool locked() const { return locked_; }

 private:
  sqlite3* db_ = nullptr;
  bool locked_ = false;
};
#else
// Runs the fixture script (pause, resume, restart) on this test's private server
// (IDEM_PG_FIXTURE_DIR); true when it succeeded.
inline bool PgFixture(const std::string& command) {
  const char* dir = std::getenv("IDEM_PG_FIXTURE_DIR");
  if (dir == nullptr) return false;
  const std::string line =
      std::string("'") + IDEM_PG_FIXTURE_SCRIPT + "' " + command + " '" + dir + "' >&2";
  return std::system(line.c_str()) == 0;
}
#endif

}  // namespace idem::e2e

#endif  // IDEM_TESTS_GATEWAY_STORE_FAULTS_H_

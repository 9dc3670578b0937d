// The caller's SQL in a transaction (SqliteTransaction::Query / Execute): its $N parameters bound
// from SqlValues, and result columns read back as SqlValues.
//
// Thread-safety: as the Statement passed in.
#ifndef IDEM_STORE_SQLITE_CALLER_SQL_H_
#define IDEM_STORE_SQLITE_CALLER_SQL_H_

#include "absl/status/status.h"
#include "idem/transaction.h"
#include "store/sqlite/sqlite_connection.h"

namespace idem::sqlite {

// Works out once what binding a statement needs: which $N each of its parameters is.
void AnalyseParameters(sqlite3_stmt* stmt, StatementNotes& notes);

// Binds `value` to parameter `index` (1-based); text and blobs are borrowed.
absl::Status BindValue(Statement& stmt, int index, const SqlValue& value);

// Reads column `col` of the current row as the type SQLite holds it in.
SqlValue ColumnValue(const Statement& stmt, int col);

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_CALLER_SQL_H_

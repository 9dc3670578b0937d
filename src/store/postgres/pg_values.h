// SqlValue ⇄ libpq: parameters in the form PQexecParams wants, and typed column values read back
// by each column's type OID.
#ifndef IDEM_STORE_POSTGRES_PG_VALUES_H_
#define IDEM_STORE_POSTGRES_PG_VALUES_H_

#include <libpq-fe.h>

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/transaction.h"

namespace idem::postgres {

// Parameters encoded for libpq. The pointers refer to `text` or to the caller's values, so the
// caller's span must outlive this. monostate → NULL; int64 → int8 and double → float8 (text
// format); std::string → text of a type the server infers; Blob → bytea (binary format).
struct EncodedParams {
  std::vector<std::string> text;
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  std::vector<Oid> types;
  // One character per parameter naming its type, so that a statement prepared for one set of
  // parameter types is not reused with another.
  std::string signature;

  int count() const { return static_cast<int>(values.size()); }
};

// Errors: InvalidArgument for text containing NUL (PostgreSQL text cannot hold it: use a Blob).
absl::StatusOr<EncodedParams> EncodeParams(std::span<const SqlValue> params);

// Returns every row of a text-format result: int2/int4/int8/oid → int64; bool → int64 0/1;
// float4/float8/numeric → double; bytea → Blob; NULL → monostate; anything else → std::string.
std::vector<SqlRow> DecodeRows(const PGresult* result);

// Returns a bytea column of a text-format result as raw bytes.
std::string DecodeBytea(const PGresult* result, int row, int column);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_VALUES_H_

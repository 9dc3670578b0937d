// Creating an example's own tables at start, on SQLite and PostgreSQL alike.
#ifndef IDEM_EXAMPLES_PAYMENTS_SCHEMA_H_
#define IDEM_EXAMPLES_PAYMENTS_SCHEMA_H_

#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "idem/store.h"

namespace idem::payments {

// Runs `statements` (CREATE … IF NOT EXISTS, plain SQL both stores accept) in one transaction.
// Two processes creating the same tables at once on PostgreSQL may collide in the catalog; the
// loser tries again and then finds them. Errors: the failing statement's or commit's code, with a
// message naming `what`.
absl::Status CreateTables(Store& store, std::span<const std::string_view> statements,
                          std::string_view what);

}  // namespace idem::payments

#endif  // IDEM_EXAMPLES_PAYMENTS_SCHEMA_H_

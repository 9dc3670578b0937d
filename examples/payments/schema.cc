#include "schema.h"

#include <fmt/format.h>

namespace idem::payments {
namespace {

absl::Status CreateOnce(Store& store, std::span<const std::string_view> statements) {
  auto tx = store.Begin();
  if (!tx.ok()) return tx.status();
  for (std::string_view sql : statements) {
    if (auto n = (*tx)->Execute(sql); !n.ok()) {
      (void)(*tx)->Rollback();
      return n.status();
    }
  }
  return (*tx)->Commit();
}

}  // namespace

absl::Status CreateTables(Store& store, std::span<const std::string_view> statements,
                          std::string_view what) {
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    last = CreateOnce(store, statements);
    if (last.ok() || (!absl::IsAlreadyExists(last) && !absl::IsUnavailable(last))) break;
  }
  if (last.ok()) return last;
  return absl::Status(last.code(), fmt::format("cannot create the {} tables: {}", what,
                                               std::string(last.message())));
}

}  // namespace idem::payments

#include <fmt/format.h>

#include "idem/sqlite_store.h"
#if IDEM_WITH_POSTGRES
#include "idem/postgres_store.h"
#endif
#include "idem/store.h"

namespace idem {

absl::StatusOr<std::unique_ptr<Store>> OpenStore(std::string_view uri,
                                                 const StoreOptions& options) {
  if (uri.starts_with("sqlite:")) {
    std::string_view rest = uri.substr(std::string_view("sqlite:").size());
    std::string_view query;
    if (size_t q = rest.find('?'); q != std::string_view::npos) {
      query = rest.substr(q + 1);
      rest = rest.substr(0, q);
    }
    if (rest.empty()) {
      return absl::InvalidArgumentError(
          "store URI 'sqlite:' names no file: write sqlite:PATH, e.g. sqlite:./idem.db");
    }
    return OpenSqliteStore(rest, query, options);
  }
  if (uri.starts_with("postgresql://") || uri.starts_with("postgres://")) {
#if IDEM_WITH_POSTGRES
    return OpenPostgresStore(uri, options);
#else
    return absl::UnimplementedError(
        "store URI names PostgreSQL, but this libidem was built without it "
        "(IDEM_WITH_POSTGRES=OFF): use sqlite:PATH");
#endif
  }
  return absl::InvalidArgumentError(fmt::format(
      "store URI '{}' has no known scheme: use sqlite:PATH or postgresql://user@host:port/db", uri));
}

}  // namespace idem

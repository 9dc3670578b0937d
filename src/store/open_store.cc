#include <fmt/format.h>

#include "idem/sqlite_store.h"
#if IDEM_WITH_POSTGRES
#include "idem/postgres_store.h"
#endif
#if IDEM_WITH_NATS
#include "idem/nats_store.h"
#endif
#include "common/conninfo_secrets.h"
#include "idem/store.h"

namespace idem {
namespace {

// sqlite:PATH, and SQLAlchemy's sqlite:///relative/path and sqlite:////absolute/path. Returns the
// path and the query, or InvalidArgument for a form that names no file or means something else.
absl::StatusOr<std::pair<std::string_view, std::string_view>> SplitSqliteUri(std::string_view uri) {
  std::string_view rest = uri.substr(std::string_view("sqlite:").size());
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (rest.starts_with("//")) {
    // After "//" a URI names a host, which a SQLite file has not: sqlite://q3.db would otherwise
    // be the file /q3.db at the root of the file system.
    if (!rest.starts_with("///")) {
      const std::string_view name = rest.substr(2);
      return absl::InvalidArgumentError(fmt::format(
          "store URI '{}' is ambiguous: 'sqlite://' is followed by a host, not a path. Write "
          "sqlite:///{} for the file '{}' in the current directory, sqlite:////{} for '/{}' "
          "(SQLAlchemy's convention), or simply sqlite:{}",
          uri, name, name, name, name, name));
    }
    rest = rest.substr(3);  // sqlite:///relative, sqlite:////absolute
  }
  if (rest.empty()) {
    return absl::InvalidArgumentError(
        "store URI names no file: write sqlite:PATH, e.g. sqlite:./idem.db");
  }
  return std::pair{rest, query};
}

}  // namespace

std::string RedactStoreUri(std::string_view uri) { return RedactConninfo(uri); }

absl::StatusOr<std::unique_ptr<Store>> OpenStore(std::string_view uri,
                                                 const StoreOptions& options) {
  if (uri.starts_with("sqlite:")) {
    auto split = SplitSqliteUri(uri);
    if (!split.ok()) return split.status();
    return OpenSqliteStore(split->first, split->second, options);
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
  if (uri.starts_with("nats://")) {
#if IDEM_WITH_NATS
    return OpenNatsStore(uri, options);
#else
    return absl::UnimplementedError(
        "store URI names NATS JetStream, but this libidem was built without it "
        "(IDEM_WITH_NATS=OFF): use sqlite:PATH or postgresql://...");
#endif
  }
  return absl::InvalidArgumentError(
      fmt::format("store URI '{}' has no known scheme: use sqlite:PATH, "
                  "postgresql://user@host:port/db or nats://host:port?bucket=NAME",
                  RedactStoreUri(uri)));
}

}  // namespace idem

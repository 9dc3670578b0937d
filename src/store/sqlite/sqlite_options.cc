#include "store/sqlite/sqlite_options.h"

#include <fmt/format.h>

#include "common/status_macros.h"

namespace idem::sqlite {
namespace {

absl::Status ApplyIntegrity(std::string_view value, OpenSettings& settings) {
  if (value == "off") {
    settings.integrity = IntegrityCheck::kOff;
  } else if (value == "quick") {
    settings.integrity = IntegrityCheck::kQuick;
  } else if (value == "full") {
    settings.integrity = IntegrityCheck::kFull;
  } else {
    return absl::InvalidArgumentError(fmt::format(
        "sqlite: URI option integrity='{}' is not known; write integrity=off, integrity=quick or "
        "integrity=full",
        value));
  }
  return absl::OkStatus();
}

absl::Status ApplyQueryPair(std::string_view pair, OpenSettings& settings) {
  const size_t eq = pair.find('=');
  const std::string_view name = pair.substr(0, eq);
  const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
  if (name == "integrity") return ApplyIntegrity(value, settings);
  if (name != "synchronous") {
    return absl::InvalidArgumentError(fmt::format(
        "unknown sqlite: URI option '{}'; the options are synchronous=full|normal and "
        "integrity=off|quick|full",
        name));
  }
  if (value == "full") {
    settings.connection.synchronous_full = true;
  } else if (value == "normal") {
    settings.connection.synchronous_full = false;
  } else {
    return absl::InvalidArgumentError(fmt::format(
        "sqlite: URI option synchronous='{}' is not known; write synchronous=full or "
        "synchronous=normal",
        value));
  }
  return absl::OkStatus();
}

absl::Status CheckOptions(const StoreOptions& options) {
  if (options.max_connections < 1) {
    return absl::InvalidArgumentError(fmt::format(
        "max_connections is {}; the store needs at least 1", options.max_connections));
  }
  if (options.retention.count() <= 0) {
    return absl::InvalidArgumentError(fmt::format(
        "retention is {} ms; give a positive retention, e.g. 24h", options.retention.count()));
  }
  if (options.lock_timeout.count() < 0) {
    return absl::InvalidArgumentError(fmt::format(
        "lock_timeout is {} ms; give zero or more", options.lock_timeout.count()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OpenSettings> ResolveOpenSettings(std::string_view path,
                                                 std::string_view uri_query,
                                                 const StoreOptions& options) {
  IDEM_RETURN_IF_ERROR(CheckOptions(options));
  if (path.empty() || path == ":memory:" || path.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(fmt::format(
        "SQLite path '{}' names no file; the store needs a file path, e.g. sqlite:./idem.db",
        path));
  }
  OpenSettings settings;
  // A leading "file:" would be read as an SQLite URI where URIs are enabled; keep it a path.
  settings.path = path.starts_with("file:") ? fmt::format("./{}", path) : std::string(path);
  settings.connection.lock_timeout = options.lock_timeout;
  settings.connection.synchronous_full = options.durable_commits;
  settings.max_connections = options.max_connections;
  settings.create_if_missing = options.create_if_missing;
  settings.retention = options.retention;
  settings.clock = options.clock != nullptr ? options.clock : &SystemClock();
  if (settings.clock == &SystemClock()) settings.host_clock = &SystemHostClock();
  while (!uri_query.empty()) {
    const size_t amp = uri_query.find('&');
    IDEM_RETURN_IF_ERROR(ApplyQueryPair(uri_query.substr(0, amp), settings));
    uri_query = amp == std::string_view::npos ? "" : uri_query.substr(amp + 1);
  }
  return settings;
}

}  // namespace idem::sqlite

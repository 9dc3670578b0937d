#include "store/postgres/pg_uri.h"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <map>

namespace idem::postgres {

std::string RedactPassword(std::string_view conninfo) {
  std::string out(conninfo);
  if (size_t scheme = out.find("://"); scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t at = out.find('@', start);
    const size_t slash = out.find('/', start);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      if (size_t colon = out.find(':', start); colon != std::string::npos && colon < at) {
        out.replace(colon + 1, at - colon - 1, "***");
      }
    }
  }
  for (std::string_view key : {"password=", "password ="}) {
    size_t pos = out.find(key);
    while (pos != std::string::npos) {
      size_t value = pos + key.size();
      while (value < out.size() && out[value] == ' ') ++value;
      size_t end = out.find_first_of(" &", value);
      if (end == std::string::npos) end = out.size();
      out.replace(value, end - value, "***");
      pos = out.find(key, value + 3);
    }
  }
  return out;
}

absl::StatusOr<ParsedConninfo> ParseConninfo(std::string_view conninfo) {
  if (conninfo.empty()) {
    return absl::InvalidArgumentError(
        "the PostgreSQL store URI is empty: write postgresql://user@host:port/dbname");
  }
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(std::string(conninfo).c_str(), &error);
  if (options == nullptr) {
    std::string why = error != nullptr ? error : "libpq ran out of memory";
    if (error != nullptr) PQfreemem(error);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return absl::InvalidArgumentError(fmt::format(
        "store URI '{}' is malformed: {}; write postgresql://user@host:port/dbname[?param=value]",
        RedactPassword(conninfo), why));
  }
  std::map<std::string, std::string> values;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val != nullptr) values[o->keyword] = o->val;
  }
  PQconninfoFree(options);
  auto get = [&values](const char* key, const char* fallback) {
    auto it = values.find(key);
    return it == values.end() || it->second.empty() ? std::string(fallback) : it->second;
  };
  ParsedConninfo parsed;
  parsed.target = fmt::format("{}@{}:{}/{}", get("user", "(default user)"),
                              get("host", get("hostaddr", "(default socket)").c_str()),
                              get("port", "5432"), get("dbname", "(default database)"));
  return parsed;
}

}  // namespace idem::postgres

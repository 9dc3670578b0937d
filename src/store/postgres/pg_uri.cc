#include "store/postgres/pg_uri.h"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

#include "common/conninfo_secrets.h"

namespace idem::postgres {
namespace {

constexpr std::string_view kHidden = "***";

using Span = SecretSpan;

std::vector<Span> Secrets(std::string_view conninfo) { return ConninfoSecretSpans(conninfo); }

bool IsUri(std::string_view conninfo) { return conninfo.find("://") != std::string_view::npos; }

// What of a malformed `conninfo` may be secret. A URI's parts are delimited, so its secrets are
// exactly known. A malformed key=value string is not read by libpq as we read it ("password=se
// cret=1" makes "cret" a keyword): there every word from the first secret on may be a password.
std::vector<std::string> SecretsOfMalformed(std::string_view conninfo) {
  const std::vector<Span> spans = Secrets(conninfo);
  std::vector<std::string> secrets;
  if (!spans.empty() && !IsUri(conninfo)) {
    secrets.emplace_back(conninfo.substr(spans.front().begin));
    return secrets;
  }
  for (const Span& span : spans) {
    if (span.end > span.begin) {
      secrets.emplace_back(conninfo.substr(span.begin, span.end - span.begin));
    }
  }
  return secrets;
}

// `conninfo` as shown when libpq refused it: as RedactPassword, and for a key=value string all
// from the first secret on hidden.
std::string RedactMalformed(std::string_view conninfo) {
  const std::vector<Span> spans = Secrets(conninfo);
  if (spans.empty() || IsUri(conninfo)) return RedactPassword(conninfo);
  return fmt::format("{}{}", conninfo.substr(0, spans.front().begin), kHidden);
}

// libpq quotes the offending part of a malformed conninfo in its message ('missing "=" after
// "cret"'), sometimes the whole of it: each quoted part that holds or is part of a secret is
// hidden, and so is any longer secret found elsewhere in the message.
std::string ScrubLibpqMessage(std::string message, std::string_view conninfo) {
  const std::vector<std::string> secrets = SecretsOfMalformed(conninfo);
  std::string out;
  size_t i = 0;
  for (size_t open = message.find('"'); open != std::string::npos; open = message.find('"', i)) {
    const size_t close = message.find('"', open + 1);
    if (close == std::string::npos) break;
    const std::string quoted = message.substr(open + 1, close - open - 1);
    bool hide = false;
    for (const std::string& secret : secrets) {
      hide = hide || quoted.find(secret) != std::string::npos ||
             (!quoted.empty() && secret.find(quoted) != std::string::npos);
    }
    out += message.substr(i, open + 1 - i);
    out += hide ? std::string(kHidden) : quoted;
    out += '"';
    i = close + 1;
  }
  out += message.substr(i);
  for (const std::string& secret : secrets) {
    if (secret.size() < 3) continue;
    for (size_t at = out.find(secret); at != std::string::npos; at = out.find(secret, at)) {
      out.replace(at, secret.size(), kHidden);
    }
  }
  return out;
}

}  // namespace

std::string RedactPassword(std::string_view conninfo) { return RedactConninfo(conninfo); }

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
        RedactMalformed(conninfo), ScrubLibpqMessage(why, conninfo)));
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

#include "store/postgres/pg_uri.h"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

namespace idem::postgres {
namespace {

constexpr std::string_view kHidden = "***";

struct Span {
  size_t begin;
  size_t end;
};

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string Lower(std::string_view text) {
  std::string out;
  for (char c : text) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

// libpq's keywords that carry a secret: the password, and the passphrase of the client key.
bool IsSecretKeyword(std::string_view name) {
  const std::string lower = Lower(name);
  return lower == "password" || lower == "sslpassword";
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// libpq percent-decodes query keywords too ("pass%77ord=" is a password).
std::string PercentDecoded(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
        HexValue(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// postgresql://user:PASSWORD@host/db?password=PASSWORD&...: the user info's password (up to the
// last '@', so that an unencoded '@' in it stays hidden) and every secret query parameter.
std::vector<Span> UriSecrets(std::string_view uri, size_t authority) {
  std::vector<Span> spans;
  if (size_t at = uri.rfind('@'); at != std::string_view::npos && at > authority) {
    if (size_t colon = uri.find(':', authority); colon < at) spans.push_back({colon + 1, at});
  }
  size_t param = uri.find('?', authority);
  while (param != std::string_view::npos) {
    const size_t begin = param + 1;
    const size_t end = std::min(uri.find('&', begin), uri.size());
    const size_t eq = uri.find('=', begin);
    if (eq < end && IsSecretKeyword(PercentDecoded(uri.substr(begin, eq - begin)))) {
      spans.push_back({eq + 1, end});
    }
    param = end < uri.size() ? end : std::string_view::npos;
  }
  return spans;
}

// Skips a value of a key=value string from `i`: 'quoted' (with \' and \\) or up to whitespace.
// Returns its end, or npos when a quote is never closed.
size_t ValueEnd(std::string_view text, size_t i) {
  const bool quoted = i < text.size() && text[i] == '\'';
  if (quoted) ++i;
  while (i < text.size() && (quoted ? text[i] != '\'' : !IsSpace(text[i]))) {
    i += text[i] == '\\' && i + 1 < text.size() ? 2 : 1;
  }
  if (!quoted) return i;
  return i < text.size() ? i + 1 : std::string_view::npos;
}

// host=h password='se cret' ...: the value of every secret keyword. From a malformed part on
// (a keyword without '=', an unclosed quote) everything is hidden: libpq would not read it as
// we do, so no part of it is known not to be a password.
std::vector<Span> KeywordSecrets(std::string_view text) {
  std::vector<Span> spans;
  size_t i = 0;
  auto skip_spaces = [&] {
    while (i < text.size() && IsSpace(text[i])) ++i;
  };
  for (skip_spaces(); i < text.size(); skip_spaces()) {
    const size_t keyword = i;
    while (i < text.size() && !IsSpace(text[i]) && text[i] != '=') ++i;
    const std::string_view name = text.substr(keyword, i - keyword);
    skip_spaces();
    if (i >= text.size() || text[i] != '=') {
      spans.push_back({keyword, text.size()});
      break;
    }
    ++i;
    skip_spaces();
    const size_t value = i;
    const size_t end = ValueEnd(text, value);
    if (end == std::string_view::npos) {
      spans.push_back({value, text.size()});
      break;
    }
    if (IsSecretKeyword(name)) spans.push_back({value, end});
    i = end;
  }
  return spans;
}

// The secret spans, sorted and merged where they overlap.
std::vector<Span> Merged(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::vector<Span> merged;
  for (const Span& span : spans) {
    if (!merged.empty() && span.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, span.end);
    } else {
      merged.push_back(span);
    }
  }
  return merged;
}

std::vector<Span> Secrets(std::string_view conninfo) {
  if (size_t scheme = conninfo.find("://"); scheme != std::string_view::npos) {
    return Merged(UriSecrets(conninfo, scheme + 3));
  }
  // Not a URI: a key=value string, or a malformed one naming a password.
  if (conninfo.find('=') != std::string_view::npos ||
      Lower(conninfo).find("password") != std::string::npos) {
    return Merged(KeywordSecrets(conninfo));
  }
  return {};
}

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

std::string RedactPassword(std::string_view conninfo) {
  std::string out(conninfo);
  const std::vector<Span> spans = Secrets(conninfo);
  for (auto span = spans.rbegin(); span != spans.rend(); ++span) {
    out.replace(span->begin, span->end - span->begin, kHidden);
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

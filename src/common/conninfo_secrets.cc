#include "common/conninfo_secrets.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "common/hex_digit.h"

namespace idem {
namespace {

constexpr std::string_view kHidden = "***";

using Span = SecretSpan;

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

// libpq percent-decodes query keywords too ("pass%77ord=" is a password).
std::string PercentDecoded(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const int high = text[i] == '%' && i + 2 < text.size() ? HexDigitValue(text[i + 1]) : -1;
    const int low = high >= 0 ? HexDigitValue(text[i + 2]) : -1;
    if (low >= 0) {
      out.push_back(static_cast<char>(high * 16 + low));
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

}  // namespace

std::vector<SecretSpan> ConninfoSecretSpans(std::string_view conninfo) {
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

std::string RedactConninfo(std::string_view conninfo) {
  std::string out(conninfo);
  const std::vector<SecretSpan> spans = ConninfoSecretSpans(conninfo);
  for (auto span = spans.rbegin(); span != spans.rend(); ++span) {
    out.replace(span->begin, span->end - span->begin, kHidden);
  }
  return out;
}

}  // namespace idem

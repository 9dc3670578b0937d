// Finding the secrets in a store URI or a libpq connection string, so that no error message, log
// line or metric carries a password. Shared by OpenStore (RedactStoreUri) and the PostgreSQL
// store, which must hide passwords even in a libidem built without PostgreSQL.
//
// Thread-safety: pure functions.
#ifndef IDEM_COMMON_CONNINFO_SECRETS_H_
#define IDEM_COMMON_CONNINFO_SECRETS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace idem {

// A half-open byte range [begin, end) of a conninfo.
struct SecretSpan {
  size_t begin;
  size_t end;
};

// Returns the ranges of `conninfo` that hold a secret, sorted, merged where they overlap: the
// password of a URI's user info (up to its last '@'), password and sslpassword query parameters
// (names percent-decoded, as libpq does), and the values of password / sslpassword keywords of a
// key=value string, quoted or not. From a malformed part of a key=value string on (a word
// without '=', an unclosed quote), everything.
std::vector<SecretSpan> ConninfoSecretSpans(std::string_view conninfo);

// Returns `conninfo` with every range ConninfoSecretSpans finds replaced by "***".
std::string RedactConninfo(std::string_view conninfo);

}  // namespace idem

#endif  // IDEM_COMMON_CONNINFO_SECRETS_H_

// Internal: standard Base64 (RFC 4648, with padding), shared by the CLI's JSON output and the
// webhook signatures.
#ifndef IDEM_CORE_BASE64_H_
#define IDEM_CORE_BASE64_H_

#include <string>
#include <string_view>

namespace idem::core {

// `bytes` in standard Base64 with padding.
std::string EncodeBase64(std::string_view bytes);

}  // namespace idem::core

#endif  // IDEM_CORE_BASE64_H_

#include "gateway/lapsed_key.h"

#include <cctype>

#include "gateway/request_decision.h"

namespace idem::gateway {

LapsedKeyAction ActionOnLapsedKey(const Route& route) {
  return route.recover == RecoverMode::kStatus ? LapsedKeyAction::kAskStatus
                                               : LapsedKeyAction::kResend;
}

http::request<http::string_body> StatusRequest(const Route& route, const RecoveryNote& note,
                                               const std::string& key) {
  std::string target = route.status_url;
  const std::string encoded = PercentEncode(key);
  for (size_t at = target.find("{key}"); at != std::string::npos;
       at = target.find("{key}", at + encoded.size()))
    target.replace(at, 5, encoded);
  http::request<http::string_body> request{http::verb::get, target, 11};
  // The original request's credentials and other fields go along; its body's do not.
  for (const Header& h : note.headers) {
    if (beast::iequals(h.name, "Content-Length") || beast::iequals(h.name, "Content-Type") ||
        beast::iequals(h.name, "Content-Encoding") || beast::iequals(h.name, "Idempotency-Key"))
      continue;
    request.insert(h.name, h.value);
  }
  request.set("Idempotency-Key", FormatKeyHeader(key));
  return request;
}

std::string PercentEncode(std::string_view key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(key.size());
  for (const unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace idem::gateway

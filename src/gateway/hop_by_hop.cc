#include "gateway/hop_by_hop.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>

namespace idem::gateway {
namespace {

bool IsConnectionOption(std::string_view token) {
  return beast::iequals(token, "close") || beast::iequals(token, "keep-alive");
}

// Erases the fields named in `named` but those in `kept`.
void EraseNamed(http::fields& fields, const std::vector<std::string>& named,
                std::initializer_list<http::field> kept) {
  for (const std::string& name : named) {
    const http::field f = http::string_to_field(name);
    if (std::find(kept.begin(), kept.end(), f) == kept.end()) fields.erase(name);
  }
}

}  // namespace

bool HopByHop(http::field f) {
  switch (f) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::transfer_encoding:
    case http::field::te:
    case http::field::trailer:
    case http::field::upgrade:
    case http::field::proxy_authenticate:
    case http::field::proxy_authorization:
    case http::field::proxy_connection:
    case http::field::content_length:
      return true;
    default:
      return false;
  }
}

std::vector<std::string> ConnectionNamedFields(const http::fields& fields) {
  std::vector<std::string> named;
  for (auto [it, end] = fields.equal_range(http::field::connection); it != end; ++it) {
    for (const std::string_view token : http::token_list(it->value())) {
      if (!IsConnectionOption(token)) named.emplace_back(token);
    }
  }
  return named;
}

void DropClientHopByHopFields(http::request_header<>& h) {
  const std::vector<std::string> named = ConnectionNamedFields(h);
  if (!named.empty()) {
    std::string options;
    for (auto [it, end] = h.equal_range(http::field::connection); it != end; ++it) {
      for (const std::string_view token : http::token_list(it->value())) {
        if (IsConnectionOption(token)) options.append(options.empty() ? "" : ", ").append(token);
      }
    }
    EraseNamed(h, named,
               {http::field::content_length, http::field::transfer_encoding, http::field::host});
    h.erase(http::field::connection);
    if (!options.empty()) h.set(http::field::connection, options);
  }
  for (const http::field f : {http::field::keep_alive, http::field::te, http::field::upgrade,
                              http::field::proxy_connection})
    h.erase(f);
}

void DropUpstreamHopByHopFields(http::fields& fields) {
  EraseNamed(fields, ConnectionNamedFields(fields),
             {http::field::content_length, http::field::transfer_encoding});
  for (const http::field f : {http::field::connection, http::field::keep_alive,
                              http::field::upgrade, http::field::proxy_connection})
    fields.erase(f);
}

}  // namespace idem::gateway

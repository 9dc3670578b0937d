#include "idem/fingerprint.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>

#include "core/json_pointer.h"
#include "idem/canonical_json.h"

namespace idem {
namespace {

// Bump when the framing below changes: stored fingerprints then stop matching new ones, so a
// change means every in-flight key's retry would be refused with 422 until the records expire.
// Not bumped when numbers came to be written exactly (CanonicalJsonOptions::exact_numbers): a
// body whose numbers its doubles carry exactly is written as before, so its stored fingerprint
// still matches; only bodies whose numbers used to be rounded changed (docs/fingerprints-and-keys.md).
constexpr std::string_view kVersionTag = "idem-fingerprint-v1";

std::string ToHex(const unsigned char* bytes, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    hex[2 * i] = kDigits[bytes[i] >> 4];
    hex[2 * i + 1] = kDigits[bytes[i] & 0xF];
  }
  return hex;
}

struct FreeContext {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using Context = std::unique_ptr<EVP_MD_CTX, FreeContext>;

// SHA-256, looked up in OpenSSL's providers once: EVP_sha256() is looked up again (a locked
// search, string copies) on every EVP_DigestInit_ex, once per request in the gateway.
const EVP_MD* Sha256() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  if (md == nullptr) std::abort();
  return md;
}

// A digest context this thread used before and gave back, kept for the next Hasher (one
// allocation less per hash); nullptr when none is free.
Context& SpareContext() {
  thread_local Context spare;
  return spare;
}

// SHA-256 over length-prefixed fields. OpenSSL failures here mean the library itself is broken
// (SHA-256 is always available), a broken invariant: crash.
class Hasher final {
 public:
  Hasher() : ctx_(SpareContext() ? std::move(SpareContext()) : Context(EVP_MD_CTX_new())) {
    if (!ctx_ || EVP_DigestInit_ex2(ctx_.get(), Sha256(), nullptr) != 1) std::abort();
  }
  ~Hasher() {
    if (!SpareContext()) SpareContext() = std::move(ctx_);
  }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void Raw(std::string_view data) {
    if (EVP_DigestUpdate(ctx_.get(), data.data(), data.size()) != 1) std::abort();
  }
  void Number(std::uint64_t n) {
    std::array<char, 8> bytes;
    for (int i = 7; i >= 0; --i, n >>= 8)
      bytes[static_cast<std::size_t>(i)] = static_cast<char>(n & 0xFF);
    Raw(std::string_view(bytes.data(), bytes.size()));
  }
  void Field(std::string_view data) {
    Number(data.size());
    Raw(data);
  }
  std::string HexDigest() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest;
    unsigned int size = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &size) != 1) std::abort();
    return ToHex(digest.data(), size);
  }

 private:
  Context ctx_;
};

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool IsHttpTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::optional<std::string> CanonicalBody(std::string_view body, const FingerprintOptions& options) {
  // Two numbers the upstream may read differently must never make two requests one.
  CanonicalJsonOptions json_options;
  json_options.exact_numbers = true;
  for (const std::string& pointer : options.excluded_json_pointers) {
    if (core::ParseJsonPointer(pointer).ok()) json_options.excluded_pointers.push_back(pointer);
  }
  absl::StatusOr<std::string> canonical = CanonicalizeJson(body, json_options);
  if (!canonical.ok()) return std::nullopt;
  return *std::move(canonical);
}

void HashHeaders(Hasher& hasher, const FingerprintInput& input, const FingerprintOptions& options) {
  std::vector<std::string> names;
  for (const std::string& name : options.included_headers) names.push_back(Lower(name));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  hasher.Number(names.size());
  for (const std::string& name : names) {
    std::vector<std::string_view> values;
    for (const Header& header : input.headers) {
      if (Lower(header.name) == name) values.push_back(header.value);
    }
    hasher.Field(name);
    hasher.Number(values.size());
    for (std::string_view value : values) hasher.Field(value);
  }
}

}  // namespace

absl::Status ValidateFingerprintOptions(const FingerprintOptions& options) {
  for (const std::string& pointer : options.excluded_json_pointers) {
    if (absl::Status status = core::ParseJsonPointer(pointer).status(); !status.ok()) {
      return status;
    }
  }
  for (const std::string& name : options.included_headers) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), IsHttpTokenChar)) {
      return absl::InvalidArgumentError(
          fmt::format("header name \"{}\" is not a valid HTTP field name; use letters, digits and "
                      "!#$%&'*+-.^_`|~",
                      name));
    }
  }
  return absl::OkStatus();
}

std::string Fingerprint(const FingerprintInput& input, const FingerprintOptions& options) {
  Hasher hasher;
  hasher.Field(kVersionTag);
  hasher.Field(input.method);
  hasher.Field(input.target);
  if (std::optional<std::string> canonical = CanonicalBody(input.body, options)) {
    hasher.Field("json");
    hasher.Field(*canonical);
  } else {
    hasher.Field("raw");
    hasher.Field(input.body);
  }
  HashHeaders(hasher, input, options);
  return hasher.HexDigest();
}

std::string Sha256Hex(std::string_view data) {
  Hasher hasher;
  hasher.Raw(data);
  return hasher.HexDigest();
}

}  // namespace idem

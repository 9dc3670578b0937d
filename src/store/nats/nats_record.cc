#include "store/nats/nats_record.h"

#include <charconv>
#include <cstring>

#include "idem/fingerprint.h"

namespace idem::nats {
namespace {

constexpr std::string_view kMagic("IDEMKV1\n", 8);
// Version 2: version 1's fields, then the claim's nonce (KeyRecord::claim_nonce). Only an
// in_progress record with a nonce is written so, so older idem reads every other record.
constexpr std::string_view kMagicWithNonce("IDEMKV2\n", 8);

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutI64(std::string& out, int64_t value) {
  const auto v = static_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutString(std::string& out, std::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// Reads the fields back in order; any read past the end marks the reader bad.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool at_end() const { return in_.empty(); }

  uint64_t Unsigned(int bytes) {
    if (in_.size() < static_cast<size_t>(bytes)) return Fail();
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(in_[i])} << (8 * i);
    in_.remove_prefix(bytes);
    return v;
  }
  int64_t I64() { return static_cast<int64_t>(Unsigned(8)); }
  std::string String() {
    const uint64_t size = Unsigned(4);
    if (!ok_ || in_.size() < size) {
      Fail();
      return {};
    }
    std::string s(in_.substr(0, size));
    in_.remove_prefix(size);
    return s;
  }

 private:
  uint64_t Fail() {
    ok_ = false;
    in_ = {};
    return 0;
  }
  std::string_view in_;
  bool ok_ = true;
};

}  // namespace

HashedScope HashScope(const Scope& scope, int shards) {
  std::string input;
  PutString(input, scope.tenant);
  input.append(scope.key);
  HashedScope out;
  out.bucket_key = Sha256Hex(input);
  // The shard is drawn from the digest's first four bytes, read big-endian: its first eight hex
  // digits.
  uint32_t prefix = 0;
  std::from_chars(out.bucket_key.data(), out.bucket_key.data() + 8, prefix, 16);
  out.shard = static_cast<int>(prefix % static_cast<uint32_t>(shards));
  return out;
}

std::string EncodeRecord(const KeyRecord& r) {
  const bool nonce = r.state == KeyState::kInProgress && !r.claim_nonce.empty();
  std::string out(nonce ? kMagicWithNonce : kMagic);
  out.push_back(static_cast<char>(static_cast<int>(r.state)));
  PutI64(out, r.fence);
  PutI64(out, r.lease_until_ms);
  PutI64(out, r.created_ms);
  PutI64(out, r.updated_ms);
  PutI64(out, r.expires_ms);
  PutU32(out, static_cast<uint32_t>(r.response.status));
  PutString(out, r.scope.tenant);
  PutString(out, r.scope.key);
  PutString(out, r.fingerprint);
  PutString(out, r.owner);
  PutU32(out, static_cast<uint32_t>(r.response.headers.size()));
  for (const Header& h : r.response.headers) {
    PutString(out, h.name);
    PutString(out, h.value);
  }
  PutString(out, r.response.body);
  if (nonce) PutString(out, r.claim_nonce);
  return out;
}

absl::StatusOr<KeyRecord> DecodeRecord(std::string_view value) {
  const bool nonce = value.starts_with(kMagicWithNonce);
  if (!nonce && !value.starts_with(kMagic)) {
    return absl::FailedPreconditionError(
        "the bucket holds a value that is not an idem key record: the bucket is shared with "
        "another program; give idem a bucket of its own (bucket=NAME in the store URI)");
  }
  Reader in(value.substr(kMagic.size()));
  KeyRecord r;
  const uint64_t state = in.Unsigned(1);
  r.fence = in.I64();
  r.lease_until_ms = in.I64();
  r.created_ms = in.I64();
  r.updated_ms = in.I64();
  r.expires_ms = in.I64();
  r.response.status = static_cast<int>(static_cast<int32_t>(in.Unsigned(4)));
  r.scope.tenant = in.String();
  r.scope.key = in.String();
  r.fingerprint = in.String();
  r.owner = in.String();
  const uint64_t headers = in.Unsigned(4);
  for (uint64_t i = 0; in.ok() && i < headers; ++i) {
    Header h;
    h.name = in.String();
    h.value = in.String();
    r.response.headers.push_back(std::move(h));
  }
  r.response.body = in.String();
  if (nonce) r.claim_nonce = in.String();
  if (!in.ok() || !in.at_end() || state < 1 || state > 3) {
    return absl::DataLossError(
        "an idem key record in the bucket is truncated or malformed; purge the key");
  }
  r.state = static_cast<KeyState>(state);
  return r;
}

}  // namespace idem::nats

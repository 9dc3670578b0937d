// idem/record.h: the idempotency key record and its states (docs/design.md §1).
//
// Plain values; safe to copy between threads.
#ifndef IDEM_RECORD_H_
#define IDEM_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace idem {

// The scope of a key. (tenant, key) is the record's unique primary key: keys of two tenants never
// collide. The key is 1–255 visible ASCII characters (see idem/key.h); the tenant may be empty
// (one global scope).
struct Scope {
  std::string tenant;
  std::string key;

  friend bool operator==(const Scope&, const Scope&) = default;
};

// persisted: never renumber.
enum class KeyState : int {
  kInProgress = 1,   // claimed; the effect has not finished
  kCompleted = 2,    // the effect succeeded; its response is replayed until expiry
  kFailedFinal = 3,  // a deterministic failure; its error is replayed until expiry
};

// Returns "in_progress", "completed" or "failed_final" ("unknown" for a value out of range).
// persisted: the stores keep these names in their state column; never rename.
std::string_view KeyStateName(KeyState state);

struct Header {
  std::string name;
  std::string value;

  friend bool operator==(const Header&, const Header&) = default;
};

// What a replay returns: the status, the headers worth replaying, and the body byte for byte.
struct StoredResponse {
  int status = 0;
  std::vector<Header> headers;
  std::string body;  // raw bytes; may contain NUL

  friend bool operator==(const StoredResponse&, const StoredResponse&) = default;
};

struct KeyRecord {
  Scope scope;
  std::string fingerprint;  // lowercase hex SHA-256 of the request (see idem/fingerprint.h)
  KeyState state = KeyState::kInProgress;
  int64_t fence = 0;          // grows at every claim and takeover; guards every later write
  std::string owner;          // who holds an in_progress key
  int64_t lease_until_ms = 0; // an in_progress key whose lease has passed may be taken over
  // completed, failed_final: the outcome. in_progress: the claim's note (LeaseWrite::response of
  // a kClaim), empty unless the claimer wrote one.
  StoredResponse response;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
  int64_t expires_ms = 0;     // at and after this instant the record counts as absent
  // in_progress: the nonce of the claim that holds it (LeaseWrite::claim_nonce), empty when that
  // claim gave none (Store::Claim, Store::TakeOver, transaction mode). What tells a claim whose
  // acknowledgement was lost that the record is its own; `owner` is a label for people and
  // decides nothing. Finished records: unspecified (a store may keep or drop it).
  std::string claim_nonce;

  friend bool operator==(const KeyRecord&, const KeyRecord&) = default;
};

}  // namespace idem

#endif  // IDEM_RECORD_H_

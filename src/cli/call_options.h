// `idem call`'s command line, checked and turned into what one run needs (CallPlan).
// Kept apart from the CLI11 wiring so that every rule about flags lives in one place.
#ifndef IDEM_CLI_CALL_OPTIONS_H_
#define IDEM_CLI_CALL_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/call_output.h"
#include "http/exchange.h"
#include "http/url.h"
#include "idem/retry/backoff.h"
#include "idem/retry/retry_policy.h"

namespace idem::cli {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The request every attempt sends.
struct CallRequest {
  std::string method;
  http::Url url;
  HeaderList headers;  // sent as given, after Host and User-Agent
  std::string body;
  bool has_body = false;
};

// The flags as typed, before any checking.
struct CallFlags {
  std::string url;
  std::optional<std::string> method;       // -X; absent: GET, or POST with -d
  std::vector<std::string> headers;        // -H "Name: value"
  std::optional<std::string> data;         // -d DATA, -d @file, -d @- (stdin), byte for byte
  std::optional<std::string> data_binary;  // --data-binary: the same as -d (curl's name)
  std::optional<std::string> key;          // --key (given empty: an error, never a fresh key)
  bool no_key = false;                     // --no-key
  std::string cacert;                // --cacert FILE: CA certificates trusted besides the system's
  std::string max_body = "256MiB";   // --max-body: the largest answer body accepted
  std::string max_header = "64KiB";  // --max-header: the largest status line and headers
  int retries = 3;
  std::string backoff = "full";
  std::string base = "100ms";
  std::string cap = "20s";
  std::string deadline = "0";
  std::string timeout = "30s";
  std::string max_retry_after = "60s";
  double budget_ratio = 0.1;
  double budget_floor = 10;
  int breaker_failures = 0;
  std::optional<uint64_t> seed;
  bool include = false;
  bool verbose = false;
  std::string output;   // -o FILE
  bool silent = false;  // -s
  bool fail = false;    // --fail
  bool json = false;    // --json
};

// Everything one run needs, checked.
struct CallPlan {
  CallRequest request;
  std::string url;
  std::string cacert;   // PEM file of extra trusted CA certificates; empty: the system store only
  http::Limits limits;  // --max-body, --max-header
  std::optional<std::string> key;  // the key text; sent on every attempt when set
  bool key_generated = false;
  retry::RetryPolicyOptions policy;
  retry::BackoffOptions backoff;
  double budget_ratio = 0.1;
  double budget_floor = 10;
  int breaker_failures = 0;
  uint64_t seed = 0;
  bool include = false;
  bool verbose = false;
  bool silent = false;
  CallOutputOptions output;
};

// Returns the plan, or InvalidArgument with a message naming the flag and what to fix (bad
// durations, negative or non-finite counts, a malformed header, an unreadable -d @file or a
// directory, --key with --no-key, an empty --key, -X or Idempotency-Key header, two
// Idempotency-Key headers, a URL that is not http:// or https:// or whose port is not 1 to 65535).
absl::StatusOr<CallPlan> MakeCallPlan(const CallFlags& flags);

// Returns `key` as a Structured Fields string, the Idempotency-Key form of the IETF draft:
// abc -> "abc", with \ and " escaped.
std::string QuoteKey(const std::string& key);

}  // namespace idem::cli

#endif  // IDEM_CLI_CALL_OPTIONS_H_

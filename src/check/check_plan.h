// What one run of `idem check URL` does (docs/idem-check.md): the request to send, the scenarios
// to run, how often, and how effects are counted. Built from the command line by src/cli; read by
// the scenarios.
//
// Thread-safety: plain values.
#ifndef IDEM_CHECK_CHECK_PLAN_H_
#define IDEM_CHECK_CHECK_PLAN_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "http/url.h"
#include "idem/clock.h"

namespace idem::check {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The scenarios, in the order they run; their names are a contract (--only, --json).
inline constexpr std::array<std::string_view, 7> kScenarioNames = {
    "replay", "mismatch", "concurrent", "lost-answer", "retention", "no-key", "bad-key"};

// The scenarios whose key must take effect once: only they can show the API keeps its promise.
bool IsKeyed(std::string_view name);

// How the keys are written in the key header (--key-format).
enum class KeyFormat {
  kSfString,  // "0190c1a2-...": a Structured Fields string, the IETF draft's form
  kSfToken,   // k0190c1a2-...: a Structured Fields token (the key after a letter)
  kRaw,       // 0190c1a2-...: the key itself
};
// Returns the format named "sf", "token" or "raw", or InvalidArgument.
absl::StatusOr<KeyFormat> ParseKeyFormat(std::string_view name);
std::string_view KeyFormatName(KeyFormat format);  // "sf", "token", "raw"

// The request every scenario sends, without its key.
struct Target {
  std::string method = "POST";
  std::string url;  // as given, for messages
  http::Url parsed;
  HeaderList headers;  // sent as given, after Host and User-Agent
  std::string body;
  bool has_body = false;
};

// Where effects are counted: a GET of `url` answering a JSON number at `pointer`, or (no
// pointer) a plain integer or a JSON number.
struct CountSource {
  std::string url;
  http::Url parsed;
  std::string pointer;  // RFC 6901; empty: the whole body
};

struct Plan {
  Target target;
  std::string key_header = "Idempotency-Key";
  int concurrency = 8;  // requests sent at once by `concurrent` (2 to 256)
  int rounds = 1;       // the whole set, each time with fresh keys (1 to 1000)
  std::optional<CountSource> count;
  std::vector<std::string> scenarios;  // names from kScenarioNames, in their order
  Millis timeout{10'000};              // for one request: connect, send, the whole answer
  bool json = false;
  int bursts = 20;            // concurrent: bursts of `concurrency`, each with a new key
  Millis replay_after{5000};  // retention: the wait before the key is sent again (0: skipped)
  Millis deadline{120'000};   // the whole run
  KeyFormat key_format = KeyFormat::kSfString;
  std::string cacert;             // extra CA file for https
  uint64_t max_answer = uint64_t{16} << 20;  // the largest answer body read
};

// Returns the names `only` lists ("replay,mismatch"; spaces around names ignored), in the order
// of kScenarioNames, or all of them when `only` is empty. Returns InvalidArgument naming an
// unknown name, or for a list that names none.
absl::StatusOr<std::vector<std::string>> SelectScenarios(std::string_view only);

}  // namespace idem::check

#endif  // IDEM_CHECK_CHECK_PLAN_H_

#include "cli/call_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include "common/status_macros.h"
#include "gateway/gateway_config.h"
#include "idem/key.h"
#include "idem/retry/duration.h"
#include "idem/uuid.h"

namespace idem::cli {
namespace {

absl::StatusOr<Millis> FlagDuration(std::string_view flag, const std::string& text) {
  absl::StatusOr<Millis> d = retry::ParseDuration(text);
  if (!d.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", flag, std::string(d.status().message())));
  }
  return *d;
}

bool IsTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

absl::StatusOr<std::pair<std::string, std::string>> ParseHeader(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  if (colon == std::string::npos || name.empty() ||
      !std::all_of(name.begin(), name.end(), IsTokenChar)) {
    return absl::InvalidArgumentError(fmt::format(
        "-H '{}': write a header as 'Name: value', such as -H 'Content-Type: application/json'",
        text));
  }
  std::string value = text.substr(colon + 1);
  value.erase(0, value.find_first_not_of(" \t"));
  if (value.find_first_of("\r\n") != std::string::npos) {
    return absl::InvalidArgumentError(
        fmt::format("-H '{}': a header value cannot hold a line "
                    "break",
                    name));
  }
  return std::make_pair(name, value);
}

// Reads all of `file`. A read error (a directory, an I/O error) is never taken for the end.
absl::StatusOr<std::string> ReadAll(std::FILE* file, const std::string& name) {
  std::string out;
  std::array<char, 65536> buffer;
  for (;;) {
    const size_t got = std::fread(buffer.data(), 1, buffer.size(), file);
    out.append(buffer.data(), got);
    if (got < buffer.size()) break;
  }
  if (std::ferror(file) != 0) {
    return absl::InvalidArgumentError(
        fmt::format("-d @{}: cannot read it: {}", name, std::strerror(errno)));
  }
  return out;
}

absl::StatusOr<std::string> ReadFileData(const std::string& data) {
  if (data.empty() || data.front() != '@') return data;
  const std::string path = data.substr(1);
  if (path == "-") return ReadAll(stdin, "-");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(
        fmt::format("-d @{}: that is a directory; name a file (use -d @- for stdin)", path));
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("-d @{}: cannot read that file ({}); check the path (use -d @- for stdin)",
                    path, std::strerror(errno)));
  }
  return ReadAll(file.get(), path);
}

// The body from -d or --data-binary: the same, a file's or stdin's bytes exactly as they are.
// (curl drops CR and LF from -d @FILE; idem does not: the bytes are fingerprinted, and a body
// changed behind the user's back would be a different request.)
absl::StatusOr<std::optional<std::string>> ReadBody(const CallFlags& f) {
  if (f.data.has_value() && f.data_binary.has_value()) {
    return absl::InvalidArgumentError("-d and --data-binary both give the body; give one");
  }
  const std::optional<std::string>& given = f.data.has_value() ? f.data : f.data_binary;
  if (!given.has_value()) return std::nullopt;
  return ReadFileData(*given);
}

absl::Status CheckCounts(const CallFlags& f) {
  if (f.retries < 0) {
    return absl::InvalidArgumentError(
        fmt::format("--retries must be 0 or more, got {}", f.retries));
  }
  if (f.retries > 1000) {
    return absl::InvalidArgumentError(
        fmt::format("--retries must be at most 1000, got {}", f.retries));
  }
  if (f.breaker_failures < 0) {
    return absl::InvalidArgumentError(
        fmt::format("--breaker must be 0 (off) or more, got {}", f.breaker_failures));
  }
  if (!(f.budget_ratio >= 0) || !(f.budget_floor >= 0) || !std::isfinite(f.budget_ratio) ||
      !std::isfinite(f.budget_floor)) {
    return absl::InvalidArgumentError(
        "--budget-ratio and --budget-floor must be finite numbers, 0 or more");
  }
  if (f.key.has_value() && f.no_key) {
    return absl::InvalidArgumentError("--key and --no-key contradict each other; drop one");
  }
  return absl::OkStatus();
}

// --max-body and --max-header: sizes such as 512, 64KiB, 256MiB.
absl::Status FillLimits(const CallFlags& f, CallPlan& plan) {
  absl::StatusOr<int64_t> body = gateway::ParseByteSize(f.max_body);
  if (!body.ok() || *body < 1) {
    return absl::InvalidArgumentError(fmt::format(
        "--max-body '{}': give a size of at least 1 byte, such as 64KiB or 256MiB", f.max_body));
  }
  absl::StatusOr<int64_t> header = gateway::ParseByteSize(f.max_header);
  if (!header.ok() || *header < 1024 || *header > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(fmt::format(
        "--max-header '{}': give a size from 1KiB to 1GiB, such as 64KiB", f.max_header));
  }
  plan.limits.max_body = static_cast<uint64_t>(*body);
  plan.limits.max_header = static_cast<uint32_t>(*header);
  return absl::OkStatus();
}

absl::Status FillTiming(const CallFlags& f, CallPlan& plan) {
  IDEM_ASSIGN_OR_RETURN(plan.backoff.jitter, retry::ParseJitter(f.backoff));
  IDEM_ASSIGN_OR_RETURN(plan.backoff.base, FlagDuration("--base", f.base));
  IDEM_ASSIGN_OR_RETURN(plan.backoff.cap, FlagDuration("--cap", f.cap));
  absl::Status valid = retry::ValidateBackoffOptions(plan.backoff);
  if (!valid.ok())
    return absl::InvalidArgumentError(fmt::format("--cap: {}", std::string(valid.message())));
  plan.policy.max_attempts = f.retries + 1;
  IDEM_ASSIGN_OR_RETURN(plan.policy.deadline, FlagDuration("--deadline", f.deadline));
  IDEM_ASSIGN_OR_RETURN(plan.policy.attempt_timeout, FlagDuration("--timeout", f.timeout));
  IDEM_ASSIGN_OR_RETURN(plan.policy.max_retry_after,
                        FlagDuration("--max-retry-after", f.max_retry_after));
  return absl::OkStatus();
}

// The key given with -H 'Idempotency-Key: ...', if any. Exactly one such header, not empty:
// with two, which one -v shows and which one is sent could differ; an empty one names no request.
absl::StatusOr<std::optional<std::string>> KeyHeader(const HeaderList& headers) {
  std::optional<std::string> key;
  for (const auto& [name, value] : headers) {
    if (!EqualsIgnoreCase(name, "Idempotency-Key")) continue;
    if (key.has_value()) {
      return absl::InvalidArgumentError(
          "-H gives Idempotency-Key twice: give one key (or use --key)");
    }
    if (value.find_first_not_of(" \t") == std::string::npos) {
      return absl::InvalidArgumentError(
          "-H 'Idempotency-Key:' is empty: give a key, or drop the header to have one made");
    }
    key = value;
  }
  return key;
}

// Takes the key from --key, from an Idempotency-Key given with -H, or makes one for POST and
// PATCH (unless --no-key).
absl::Status FillKey(const CallFlags& f, CallPlan& plan) {
  IDEM_ASSIGN_OR_RETURN(std::optional<std::string> given, KeyHeader(plan.request.headers));
  if (given.has_value()) {
    if (f.key.has_value() || f.no_key) {
      return absl::InvalidArgumentError(
          "-H 'Idempotency-Key: ...' already sets the key; drop --key/--no-key");
    }
    plan.key = std::move(given);
    return absl::OkStatus();
  }
  if (f.key.has_value()) {
    if (f.key->empty()) {
      // As from --key "$UNSET": a fresh key at every run would never let a re-run be recognised.
      return absl::InvalidArgumentError(
          "--key is empty (an unset variable?): give the key, or drop --key to have one made");
    }
    absl::Status valid = ValidateKey(*f.key);
    if (!valid.ok())
      return absl::InvalidArgumentError(fmt::format("--key: {}", std::string(valid.message())));
    plan.key = f.key;
  } else if (!f.no_key && (plan.request.method == "POST" || plan.request.method == "PATCH")) {
    plan.key = NewUuidV7();
    plan.key_generated = true;
  }
  if (plan.key) plan.request.headers.emplace_back("Idempotency-Key", QuoteKey(*plan.key));
  return absl::OkStatus();
}

}  // namespace

std::string QuoteKey(const std::string& key) {
  std::string out = "\"";
  for (char c : key) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

absl::StatusOr<CallPlan> MakeCallPlan(const CallFlags& f) {
  IDEM_RETURN_IF_ERROR(CheckCounts(f));
  CallPlan plan;
  plan.url = f.url;
  IDEM_ASSIGN_OR_RETURN(plan.request.url, http::ParseUrl(f.url));
  plan.cacert = f.cacert;
  if (f.method.has_value() && f.method->empty()) {
    return absl::InvalidArgumentError("-X is empty: name the method, such as -X POST");
  }
  IDEM_ASSIGN_OR_RETURN(std::optional<std::string> body, ReadBody(f));
  std::string method = f.method.value_or(body ? "POST" : "GET");
  std::transform(method.begin(), method.end(), method.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (!std::all_of(method.begin(), method.end(), IsTokenChar)) {
    return absl::InvalidArgumentError(fmt::format("-X '{}' is not an HTTP method", *f.method));
  }
  plan.request.method = method;
  for (const std::string& h : f.headers) {
    IDEM_ASSIGN_OR_RETURN(auto header, ParseHeader(h));
    plan.request.headers.push_back(std::move(header));
  }
  if (body) {
    plan.request.body = std::move(*body);
    plan.request.has_body = true;
    const bool typed =
        std::any_of(plan.request.headers.begin(), plan.request.headers.end(),
                    [](const auto& h) { return EqualsIgnoreCase(h.first, "Content-Type"); });
    // As curl does, -d data is a form unless a Content-Type says otherwise.
    if (!typed) {
      plan.request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    }
  }
  IDEM_RETURN_IF_ERROR(FillTiming(f, plan));
  IDEM_RETURN_IF_ERROR(FillLimits(f, plan));
  IDEM_RETURN_IF_ERROR(FillKey(f, plan));
  plan.budget_ratio = f.budget_ratio;
  plan.budget_floor = f.budget_floor;
  plan.breaker_failures = f.breaker_failures;
  plan.seed = f.seed ? *f.seed : std::random_device{}();
  plan.include = f.include;
  plan.verbose = f.verbose;
  plan.silent = f.silent;
  plan.output =
      CallOutputOptions{.path = f.output, .include = f.include, .fail = f.fail, .json = f.json};
  return plan;
}

}  // namespace idem::cli

// `idem check URL`: proves from outside whether an HTTP API keeps its Idempotency-Key promises
// (docs/idem-check.md). The scenarios live in src/check; this file reads the command line.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "check/check_plan.h"
#include "check/check_report.h"
#include "check/check_run.h"
#include "check/prober.h"
#include "cli/call_options.h"
#include "cli/cli_output.h"
#include "cli/commands.h"
#include "common/status_macros.h"
#include "gateway/gateway_config.h"
#include "idem/retry/duration.h"
#include "idem/uuid.h"

namespace idem::cli {
namespace {

constexpr const char* kFooter = R"footer(Scenarios (each with fresh keys; --only picks some):
  replay       the same key and body twice: the second answer equals the first
  mismatch     the same key with another body: refused with a 4xx (422 per the IETF draft),
               and the first answer unchanged afterwards
  concurrent   --bursts bursts of --concurrency requests, each burst with one new key at once:
               one answer, or 409 (or a 5xx) then that answer
  lost-answer  a request whose connection is closed before its answer is read, then its retry:
               the retry gets the one answer, and a later replay agrees
  retention    the same key again after --replay-after: the first answer (0 skips it)
  no-key       without a key; reported, never counted as a pass
  bad-key      with malformed keys (empty, too long, a control character, a bad sf-string
               escape); reported, never counted as a pass
No pass without evidence: answers that agree pass only when a replay marker header showed the
replay or the effects were counted; else the scenario is "inconclusive (count effects with
--count-url, or send a replay marker)". With --count-url, each scenario counts the effects it
caused, once the count has settled (exactly one per key). Run it against an API nobody else is
using meanwhile: every effect counted is taken for the check's own. A request answered 409 is
sent again after its Retry-After (at most 5s, 10 times), one answered 5xx up to 4 times with its
key; no other request is ever sent twice by the tool.

Exit status:
  0  at least one keyed scenario passed with evidence, and none failed
  1  some scenario failed (or the report could not be written)
  2  usage error, or --count-url gives no count
  3  could not test: the URL could not be reached or never answered (or speaks TLS to
     http://), no keyed scenario reached a verdict, or the --deadline passed

Examples:
  idem check http://127.0.0.1:8080/charges -d '{"amount":4200}' -H 'Content-Type: application/json'
  idem check http://127.0.0.1:8080/charges -d '{"amount":1}' --count-url http://127.0.0.1:9000/stats \
      --count-pointer /charges --rounds 5 --json)footer";

struct CheckFlags {
  std::string url;
  std::optional<std::string> method;
  std::optional<std::string> data;
  std::vector<std::string> headers;
  std::string key_header = "Idempotency-Key";
  int concurrency = 8;
  int rounds = 1;
  std::optional<std::string> count_url;
  std::optional<std::string> count_pointer;
  std::string only;
  bool json = false;
  std::string timeout = "10s";
  int bursts = 20;
  std::string replay_after = "5s";
  std::string deadline = "2m";
  std::string key_format = "sf";
  std::string cacert;
  std::string max_answer = "16MiB";
};

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

absl::Status CheckNumbers(const CheckFlags& f) {
  if (f.concurrency < 2 || f.concurrency > 256) {
    return absl::InvalidArgumentError(
        fmt::format("--concurrency must be from 2 to 256, got {}", f.concurrency));
  }
  if (f.rounds < 1 || f.rounds > 1000) {
    return absl::InvalidArgumentError(
        fmt::format("--rounds must be from 1 to 1000, got {}", f.rounds));
  }
  if (f.bursts < 1 || f.bursts > 1000) {
    return absl::InvalidArgumentError(
        fmt::format("--bursts must be from 1 to 1000, got {}", f.bursts));
  }
  const bool token =
      !f.key_header.empty() && std::all_of(f.key_header.begin(), f.key_header.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
               std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
      });
  if (!token) {
    return absl::InvalidArgumentError(
        fmt::format("--key-header '{}' is not a header name", f.key_header));
  }
  for (const std::string& h : f.headers) {
    const std::string name = h.substr(0, h.find(':'));
    if (SameName(name, f.key_header) || SameName(name, "Idempotency-Key")) {
      return absl::InvalidArgumentError(fmt::format(
          "-H '{}': idem check makes a fresh key for every scenario; drop this header", name));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<check::CountSource>> CountSourceOf(const CheckFlags& f) {
  if (!f.count_url.has_value()) {
    if (f.count_pointer.has_value()) {
      return absl::InvalidArgumentError("--count-pointer needs --count-url");
    }
    return std::nullopt;
  }
  check::CountSource source{.url = *f.count_url, .pointer = f.count_pointer.value_or("")};
  absl::StatusOr<http::Url> parsed = http::ParseUrl(source.url);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("--count-url: {}", std::string(parsed.status().message())));
  }
  source.parsed = *parsed;
  if (f.count_pointer.has_value() && !f.count_pointer->starts_with("/")) {
    return absl::InvalidArgumentError(
        fmt::format("--count-pointer '{}': a JSON pointer starts with '/', such as /charges",
                    *f.count_pointer));
  }
  return source;
}

absl::StatusOr<Millis> DurationFlag(std::string_view flag, const std::string& text) {
  absl::StatusOr<Millis> d = retry::ParseDuration(text);
  if (!d.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{} '{}': {}", flag, text, std::string(d.status().message())));
  }
  return *d;
}

// --replay-after, --deadline, --key-format, --cacert, --max-answer.
absl::Status ReadRunFlags(const CheckFlags& f, check::Plan& plan) {
  IDEM_ASSIGN_OR_RETURN(plan.replay_after, DurationFlag("--replay-after", f.replay_after));
  if (plan.replay_after.count() == 0) {
    if (!f.only.empty() && f.only.find("retention") != std::string::npos) {
      return absl::InvalidArgumentError(
          "--replay-after 0 skips the retention scenario, which --only names");
    }
    std::erase(plan.scenarios, "retention");
  }
  IDEM_ASSIGN_OR_RETURN(plan.deadline, DurationFlag("--deadline", f.deadline));
  if (plan.deadline.count() <= 0) {
    return absl::InvalidArgumentError("--deadline must be more than 0: the whole run is bounded");
  }
  IDEM_ASSIGN_OR_RETURN(plan.key_format, check::ParseKeyFormat(f.key_format));
  absl::StatusOr<int64_t> size = gateway::ParseByteSize(f.max_answer);
  if (!size.ok() || *size < 1) {
    return absl::InvalidArgumentError(fmt::format(
        "--max-answer '{}': give a size of at least 1 byte, such as 64KiB or 16MiB",
        f.max_answer));
  }
  plan.max_answer = static_cast<uint64_t>(*size);
  plan.cacert = f.cacert;
  return absl::OkStatus();
}

// The checked plan: the request is read by idem call's own rules (-X, -d, -H, the URL).
absl::StatusOr<check::Plan> MakePlan(const CheckFlags& f) {
  IDEM_RETURN_IF_ERROR(CheckNumbers(f));
  CallFlags call;
  call.url = f.url;
  call.method = f.method.value_or("POST");
  call.data = f.data;
  call.headers = f.headers;
  call.no_key = true;
  call.timeout = f.timeout;
  IDEM_ASSIGN_OR_RETURN(CallPlan request, MakeCallPlan(call));
  check::Plan plan;
  if (request.policy.attempt_timeout.count() <= 0) {
    return absl::InvalidArgumentError("--timeout must be more than 0: every request is bounded");
  }
  plan.timeout = request.policy.attempt_timeout;
  plan.target = check::Target{.method = request.request.method,
                              .url = f.url,
                              .parsed = request.request.url,
                              .headers = request.request.headers,
                              .body = request.request.body,
                              .has_body = request.request.has_body};
  plan.key_header = f.key_header;
  plan.concurrency = f.concurrency;
  plan.rounds = f.rounds;
  IDEM_ASSIGN_OR_RETURN(plan.count, CountSourceOf(f));
  IDEM_ASSIGN_OR_RETURN(plan.scenarios, check::SelectScenarios(f.only));
  plan.json = f.json;
  plan.bursts = f.bursts;
  IDEM_RETURN_IF_ERROR(ReadRunFlags(f, plan));
  return plan;
}

int RunCheckCommand(const check::Plan& plan) {
  absl::StatusOr<std::unique_ptr<check::Prober>> prober =
      check::Prober::Create({.timeout = plan.timeout,
                             .cacert = plan.cacert,
                             .max_together = plan.concurrency,
                             .limits = {.max_body = plan.max_answer}});
  if (!prober.ok()) {
    std::fprintf(stderr, "idem check: %s\n", std::string(prober.status().message()).c_str());
    return check::kExitUsage;
  }
  const check::CheckReport report = check::RunCheck(plan, **prober, [] { return NewUuidV7(); });
  if (plan.json && !report.stopped.empty()) {
    std::fprintf(stderr, "idem check: %s\n", report.stopped.c_str());
  }
  const std::string out =
      plan.json ? check::FormatJson(plan, report) : check::FormatTable(plan, report);
  std::fputs(out.c_str(), stdout);
  if (!OutputWritten("idem check")) return check::kExitFailed;
  return report.exit_code;
}

void AddCheckFlags(CLI::App* check, CheckFlags& f) {
  check->footer(kFooter);
  check->add_option("url", f.url, "The http:// or https:// URL of the API to check")->required();
  check->add_option("-X,--request", f.method, "HTTP method (default POST)");
  check->add_option(
      "-d,--data", f.data,
      "The request body; @FILE reads a file, @- stdin, byte for byte (without a "
      "Content-Type header, application/x-www-form-urlencoded is sent, as curl does)");
  check->add_option("-H,--header", f.headers, "Add a header 'Name: value' (repeatable)");
  check->add_option("--key-header", f.key_header,
                    "The header that carries the key (default Idempotency-Key)");
  check->add_option("--concurrency", f.concurrency,
                    "Requests sent at once by the concurrent scenario, 2-256 (default 8)");
  check->add_option("--rounds", f.rounds,
                    "Run every scenario this many times, with fresh keys, 1-1000 (default 1)");
  check->add_option("--count-url", f.count_url,
                    "A URL whose GET answers the API's count of effects, to check one per key");
  check->add_option("--count-pointer", f.count_pointer,
                    "Where the count is in that JSON answer, e.g. /charges (default: the whole "
                    "answer is the number)");
  check->add_option("--only", f.only,
                    "Run only these scenarios, e.g. replay,concurrent (default: all)");
  check->add_flag("--json", f.json, "Print one JSON object instead of the table");
  check->add_option("--timeout", f.timeout, "Time for one request (default 10s)");
  check->add_option("--bursts", f.bursts,
                    "Bursts the concurrent scenario sends, each with a new key, 1-1000 "
                    "(default 20)");
  check->add_option("--replay-after", f.replay_after,
                    "retention: send the key again after this long, e.g. 24h for the retention "
                    "the API promises; 0 skips it (default 5s)");
  check->add_option("--deadline", f.deadline,
                    "Time for the whole run; when it passes, the run stops (exit 3) (default "
                    "2m)");
  check->add_option("--key-format", f.key_format,
                    "How keys are written: sf (\"key\", the IETF draft's form), token (an sf "
                    "token) or raw (the key as is) (default sf)");
  check->add_option("--cacert", f.cacert,
                    "Also trust the CA certificates in this PEM file for https://");
  check->add_option("--max-answer", f.max_answer,
                    "The largest answer body read, e.g. 64KiB; a larger one is no answer "
                    "(default 16MiB)");
}

}  // namespace

void AddCheckCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<CheckFlags>();
  CLI::App* check =
      app.add_subcommand("check", "Check whether an HTTP API keeps its Idempotency-Key promises");
  AddCheckFlags(check, *flags);
  check->callback([flags, &exit_code] {
    absl::StatusOr<check::Plan> plan = MakePlan(*flags);
    if (!plan.ok()) {
      std::fprintf(stderr, "idem check: %s\n", std::string(plan.status().message()).c_str());
      exit_code = check::kExitUsage;
      return;
    }
    exit_code = RunCheckCommand(*plan);
  });
}

}  // namespace idem::cli

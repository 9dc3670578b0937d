#include "cli/call_output.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <utility>

#include "cli/cli_output.h"

namespace idem::cli {

std::string_view StopReasonToken(retry::StopReason reason) {
  using retry::StopReason;
  switch (reason) {
    case StopReason::kRetry:
      return "retrying";
    case StopReason::kSucceeded:
      return "succeeded";
    case StopReason::kFinalAnswer:
      return "final_answer";
    case StopReason::kAttemptsExhausted:
      return "attempts_exhausted";
    case StopReason::kDeadline:
      return "deadline";
    case StopReason::kDoNotRetry:
      return "do_not_retry";
    case StopReason::kUnsafe:
      return "unsafe";
    case StopReason::kRetryAfterTooLong:
      return "retry_after_too_long";
    case StopReason::kBudget:
      return "budget";
    case StopReason::kCircuitOpen:
      return "circuit_open";
    case StopReason::kNotRetryable:
      return "not_retryable";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<CallOutput>> CallOutput::Open(const CallOutputOptions& options) {
  std::FILE* file = nullptr;
  if (!options.path.empty() && options.path != "-") {
    file = std::fopen(options.path.c_str(), "wb");
    if (file == nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("-o {}: cannot write that file ({})", options.path, std::strerror(errno)));
    }
  }
  return std::unique_ptr<CallOutput>(new CallOutput(options, file));
}

CallOutput::~CallOutput() {
  if (file_ != nullptr) std::fclose(file_);
}

namespace {

std::string SummaryJson(const CallSummary& s) {
  boost::json::object o;
  o["exit_code"] = s.exit_code;
  if (s.answer != nullptr) {
    o["status"] = s.answer->status;
  } else {
    o["status"] = nullptr;
  }
  o["attempts"] = s.attempts;
  o["stop"] = StopReasonToken(s.stop);
  o["stop_text"] = retry::StopReasonText(s.stop);
  o["elapsed_ms"] = s.elapsed_ms;
  if (s.key.has_value()) {
    o["key"] = *s.key;
  } else {
    o["key"] = nullptr;
  }
  return boost::json::serialize(o) + "\n";
}

}  // namespace

bool CallOutput::Write(const CallSummary& summary) {
  std::FILE* body_out = file_ != nullptr ? file_ : (options_.json ? nullptr : stdout);
  const CallAnswer* answer = summary.answer;
  if (answer != nullptr && body_out != nullptr && !(options_.fail && answer->status >= 400)) {
    if (options_.include) std::fwrite(answer->head.data(), 1, answer->head.size(), body_out);
    std::fwrite(answer->body.data(), 1, answer->body.size(), body_out);
  }
  if (file_ != nullptr) {
    const bool written = std::fflush(file_) == 0 && std::ferror(file_) == 0;
    const int error = errno;
    if (!written) {
      std::fprintf(stderr, "idem call: cannot write the output to '%s': %s\n",
                   options_.path.c_str(), std::strerror(error != 0 ? error : EIO));
      return false;
    }
  }
  if (options_.json) {
    const std::string json = SummaryJson(summary);
    std::fwrite(json.data(), 1, json.size(), stdout);
  }
  return OutputWritten("idem call");
}

}  // namespace idem::cli

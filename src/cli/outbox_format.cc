#include "cli/outbox_format.h"

#include <fmt/format.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <string_view>

#include "cli/cli_output.h"
#include "core/base64.h"
#include "idem/retry/duration.h"

namespace idem::cli {
namespace {

// The last error on one line, cut to `width` characters.
std::string OneLine(std::string text, size_t width) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (text.size() > width) text = text.substr(0, width - 3) + "...";
  return text.empty() ? "-" : text;
}

}  // namespace

std::string FormatOutboxTable(const std::vector<OutboxRecord>& records, int64_t now_ms) {
  std::string out = fmt::format("{:>8} {:<36} {:<7} {:>8} {:>8} {:<20} {:<24} {}\n", "SEQ", "ID",
                                "STATE", "ATTEMPTS", "AGE", "AGGREGATE", "TOPIC", "LAST-ERROR");
  for (const OutboxRecord& r : records) {
    out += fmt::format("{:>8} {:<36} {:<7} {:>8} {:>8} {:<20} {:<24} {}\n", r.seq, r.id,
                       OutboxStateName(r.state), r.attempts, Age(r.created_ms, now_ms),
                       r.aggregate_key, r.topic, OneLine(r.last_error, 60));
  }
  return out;
}

std::string FormatOutboxDetail(const OutboxRecord& r, int64_t now_ms) {
  std::string out;
  out += fmt::format("id:           {}\n", r.id);
  out += fmt::format("seq:          {}\n", r.seq);
  out += fmt::format("topic:        {}\n", r.topic);
  out += fmt::format("aggregate:    {}\n", r.aggregate_key);
  out += fmt::format("state:        {}\n", OutboxStateName(r.state));
  out += fmt::format("attempts:     {}\n", r.attempts);
  if (r.state == OutboxState::kPending) {
    out += fmt::format(
        "next attempt: {} ({} ms)\n",
        r.next_attempt_ms <= now_ms ? "due now" : "in " + Age(now_ms, r.next_attempt_ms),
        r.next_attempt_ms);
  }
  if (!r.last_error.empty()) out += fmt::format("last error:   {}\n", r.last_error);
  out += fmt::format("created:      {} ago ({} ms)\n", Age(r.created_ms, now_ms), r.created_ms);
  if (r.state == OutboxState::kSent) {
    out += fmt::format("sent:         {} ago ({} ms)\n", Age(r.sent_ms, now_ms), r.sent_ms);
  }
  out += "\n";
  for (const Header& h : r.headers) out += fmt::format("{}: {}\n", h.name, h.value);
  if (IsText(r.payload)) {
    out += "\n" + r.payload;
    if (!r.payload.empty() && r.payload.back() != '\n') out += "\n";
  } else {
    out += fmt::format("\n({} bytes of binary payload; --format json shows it in base64)\n",
                       r.payload.size());
  }
  return out;
}

std::string OutboxRecordJson(const OutboxRecord& r, bool with_payload) {
  boost::json::object o;
  o["seq"] = r.seq;
  o["id"] = r.id;
  o["topic"] = r.topic;
  o["aggregate_key"] = r.aggregate_key;
  o["state"] = std::string(OutboxStateName(r.state));
  o["attempts"] = r.attempts;
  o["next_attempt_ms"] = r.next_attempt_ms;
  o["last_error"] = r.last_error;
  o["created_ms"] = r.created_ms;
  o["sent_ms"] = r.sent_ms;
  boost::json::array headers;
  for (const Header& h : r.headers) headers.push_back({h.name, h.value});
  o["headers"] = std::move(headers);
  if (with_payload) {
    if (IsText(r.payload)) {
      o["payload"] = r.payload;
    } else {
      o["payload_base64"] = core::EncodeBase64(r.payload);
    }
  }
  return boost::json::serialize(o);
}

}  // namespace idem::cli

#include "cli/keys_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cctype>
#include <optional>
#include <string_view>

#include "cli/cli_output.h"
#include "core/base64.h"
#include "gateway/recovery_note.h"
#include "idem/retry/duration.h"

namespace idem::cli {
namespace {

std::string Expiry(const KeyRecord& r, int64_t now_ms) {
  return r.expires_ms <= now_ms ? "expired" : Age(now_ms, r.expires_ms);
}

// The headers of a note whose values are shown: they describe the request's form, never who sent
// it. Every other value (Authorization, Cookie, an API key, anything a route keeps) is withheld.
bool ShownInNote(std::string_view name) {
  for (std::string_view shown : {"Content-Type", "Content-Encoding", "Content-Language", "Accept",
                                 "Accept-Encoding", "Accept-Language", "User-Agent"}) {
    if (name.size() == shown.size() &&
        std::equal(name.begin(), name.end(), shown.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        }))
      return true;
  }
  return false;
}

// The target's path; its query (which may carry a token) is withheld.
std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }

// The note of an in_progress claim of a route with `recover` (docs/gateway.md), as people read it.
std::string FormatNote(const gateway::RecoveryNote& note) {
  const std::string_view path = PathOf(note.target);
  std::string out = fmt::format(
      "\nnote:        the request kept to recover this claim ({} recovery attempts so far)\n",
      note.attempts);
  out += fmt::format("request:     {} {}", note.method, path);
  if (path.size() < note.target.size())
    out += fmt::format(" (query of {} bytes withheld)", note.target.size() - path.size() - 1);
  out += "\n";
  for (const Header& h : note.headers) {
    if (ShownInNote(h.name)) {
      out += fmt::format("{}: {}\n", h.name, h.value);
    } else {
      out += fmt::format("{}: ({} bytes withheld)\n", h.name, h.value.size());
    }
  }
  out += fmt::format("body:        {} bytes (withheld)\n", note.body.size());
  return out;
}

boost::json::object NoteJson(const gateway::RecoveryNote& note) {
  boost::json::object o;
  o["method"] = note.method;
  const std::string_view path = PathOf(note.target);
  o["path"] = path;
  o["query_bytes"] = static_cast<int64_t>(
      path.size() < note.target.size() ? note.target.size() - path.size() - 1 : 0);
  o["attempts"] = note.attempts;
  boost::json::array headers;
  for (const Header& h : note.headers) {
    boost::json::array pair{boost::json::string(h.name)};
    if (ShownInNote(h.name)) {
      pair.push_back(boost::json::string(h.value));
    } else {
      pair.push_back(nullptr);
    }
    headers.push_back(std::move(pair));
  }
  o["headers"] = std::move(headers);
  o["body_bytes"] = static_cast<int64_t>(note.body.size());
  return o;
}

}  // namespace

std::string FormatKeyTable(const std::vector<KeyRecord>& records, int64_t now_ms) {
  std::string out = fmt::format("{:<16} {:<38} {:<12} {:>8} {:>6} {:>10}\n", "TENANT", "KEY",
                                "STATE", "AGE", "STATUS", "EXPIRES-IN");
  for (const KeyRecord& r : records) {
    const std::string status =
        r.state == KeyState::kInProgress ? std::string("-") : std::to_string(r.response.status);
    out += fmt::format("{:<16} {:<38} {:<12} {:>8} {:>6} {:>10}\n",
                       r.scope.tenant.empty() ? "-" : r.scope.tenant, r.scope.key,
                       KeyStateName(r.state), Age(r.created_ms, now_ms), status, Expiry(r, now_ms));
  }
  return out;
}

std::string FormatKeyDetail(const KeyRecord& r, int64_t now_ms) {
  std::string out;
  out += fmt::format("tenant:      {}\n", r.scope.tenant.empty() ? "-" : r.scope.tenant);
  out += fmt::format("key:         {}\n", r.scope.key);
  out += fmt::format("state:       {}\n", KeyStateName(r.state));
  out += fmt::format("fingerprint: {}\n", r.fingerprint);
  out += fmt::format("fence:       {}\n", r.fence);
  if (r.state == KeyState::kInProgress) {
    out += fmt::format("owner:       {}\n", r.owner);
    out += fmt::format("lease:       {}\n", r.lease_until_ms > now_ms
                                                ? "ends in " + Age(now_ms, r.lease_until_ms)
                                                : "lapsed " + Age(r.lease_until_ms, now_ms) +
                                                      " ago (the next retry takes it over)");
  }
  out += fmt::format("created:     {} ago ({} ms)\n", Age(r.created_ms, now_ms), r.created_ms);
  out += fmt::format("updated:     {} ago ({} ms)\n", Age(r.updated_ms, now_ms), r.updated_ms);
  out += fmt::format("expires:     {} ({} ms)\n",
                     r.expires_ms <= now_ms ? "expired" : "in " + Age(now_ms, r.expires_ms),
                     r.expires_ms);
  if (r.state == KeyState::kInProgress) {
    if (std::optional<gateway::RecoveryNote> note = gateway::DecodeNote(r.response))
      out += FormatNote(*note);
    return out;
  }
  out += fmt::format("\nstatus:      {}\n", r.response.status);
  for (const Header& h : r.response.headers) out += fmt::format("{}: {}\n", h.name, h.value);
  if (IsText(r.response.body)) {
    out += "\n" + r.response.body;
    if (!r.response.body.empty() && r.response.body.back() != '\n') out += "\n";
  } else {
    out += fmt::format("\n({} bytes of binary body; --format json shows it in base64)\n",
                       r.response.body.size());
  }
  return out;
}

std::string KeyRecordJson(const KeyRecord& r, int64_t now_ms, bool with_response) {
  boost::json::object o;
  o["tenant"] = r.scope.tenant;
  o["key"] = r.scope.key;
  o["state"] = std::string(KeyStateName(r.state));
  o["fingerprint"] = r.fingerprint;
  o["fence"] = r.fence;
  o["owner"] = r.owner;
  o["lease_until_ms"] = r.lease_until_ms;
  o["created_ms"] = r.created_ms;
  o["updated_ms"] = r.updated_ms;
  o["expires_ms"] = r.expires_ms;
  o["expired"] = r.expires_ms <= now_ms;
  if (with_response && r.state != KeyState::kInProgress) {
    boost::json::object res;
    res["status"] = r.response.status;
    boost::json::array headers;
    for (const Header& h : r.response.headers) headers.push_back({h.name, h.value});
    res["headers"] = std::move(headers);
    if (IsText(r.response.body)) {
      res["body"] = r.response.body;
    } else {
      res["body_base64"] = core::EncodeBase64(r.response.body);
    }
    o["response"] = std::move(res);
  }
  if (with_response && r.state == KeyState::kInProgress) {
    if (std::optional<gateway::RecoveryNote> note = gateway::DecodeNote(r.response))
      o["note"] = NoteJson(*note);
  }
  return boost::json::serialize(o);
}

}  // namespace idem::cli

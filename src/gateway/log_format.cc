#include "gateway/log_format.h"

#include <fmt/format.h>

#include <atomic>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <cstdint>
#include <ctime>

#include "idem/fingerprint.h"

namespace idem::gateway {
namespace {

std::atomic<LogFormat> format{LogFormat::kText};

// Starts a payload whose JSON members are rendered already (RequestLogLine).
constexpr char kMembersMarker = '\x1e';

std::string Quoted(std::string_view text) {
  return boost::json::serialize(boost::json::string(text));
}

}  // namespace

void SetLogFormat(LogFormat f) { format.store(f, std::memory_order_relaxed); }

LogFormat CurrentLogFormat() { return format.load(std::memory_order_relaxed); }

std::string LoggedKey(std::string_view key) {
  if (CurrentLogFormat() == LogFormat::kText) return fmt::format("'{}'", key);
  return "sha256:" + Sha256Hex(key).substr(0, 16);
}

std::string RequestLogLine(const RequestLogFields& f) {
  if (CurrentLogFormat() == LogFormat::kText) {
    return fmt::format("{} {} {} -> {} {} in {:.1f} ms", f.request_id, f.method, f.target, f.status,
                       f.decision, f.milliseconds);
  }
  std::string out(1, kMembersMarker);
  out +=
      fmt::format("\"message\":{},\"request_id\":{},\"method\":{},\"target\":{}",
                  Quoted(fmt::format("{} {} -> {} {}", f.method, f.target, f.status, f.decision)),
                  Quoted(f.request_id), Quoted(f.method), Quoted(f.target));
  out += fmt::format(",\"route\":{},\"decision\":{},\"status\":{},\"duration_ms\":{:.3f}",
                     f.route.empty() ? "null" : Quoted(f.route), Quoted(f.decision), f.status,
                     f.milliseconds);
  if (!f.key.empty()) out += ",\"key_sha256\":" + Quoted(LoggedKey(f.key).substr(7));
  return out;
}

void AppendJsonLogLine(std::chrono::system_clock::time_point time, std::string_view level,
                       std::string_view payload, std::string& out) {
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  out +=
      fmt::format("{{\"time\":\"{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z\",\"level\":{},",
                  utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                  utc.tm_sec, ms % 1000, Quoted(level));
  if (!payload.empty() && payload.front() == kMembersMarker) {
    out.append(payload.substr(1));
  } else {
    out += "\"message\":" + Quoted(payload);
  }
  out += "}\n";
}

}  // namespace idem::gateway

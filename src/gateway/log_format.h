// Internal: how idem serve's log lines are written: text (the default) or one JSON object per
// line (--log-format json, for log shippers), and how a key appears in them (docs/gateway.md,
// "Logs").
//
// Thread-safety: SetLogFormat is called once at start, before any thread logs; every other
// function may be called from any thread.
#ifndef IDEM_GATEWAY_LOG_FORMAT_H_
#define IDEM_GATEWAY_LOG_FORMAT_H_

#include <chrono>
#include <string>
#include <string_view>

namespace idem::gateway {

enum class LogFormat {
  kText,  // "2026-11-27T19:20:56.046 info message" (default)
  kJson,  // {"time":"2026-11-27T19:20:56.046Z","level":"info","message":"...",...}
};

void SetLogFormat(LogFormat format);
LogFormat CurrentLogFormat();

// A key as a log line names it: quoted ('order-17') in text logs; in JSON logs only as a hash,
// sha256:<the first 16 hex digits of the key's SHA-256>, so a log shipper never stores a key.
std::string LoggedKey(std::string_view key);

// What the line logged for one request carries.
struct RequestLogFields {
  std::string_view request_id;
  std::string_view method;
  std::string_view target;
  std::string_view route;  // the guarding route's path prefix; empty: none (not guarded)
  std::string_view decision;
  int status = 0;  // 0: nothing was answered
  double milliseconds = 0;
  std::string_view key;  // empty: no key; logged as LoggedKey
};

// Returns the line to log for one request: in text, "ID METHOD TARGET -> STATUS DECISION in N ms";
// in JSON, the fields as members (request_id, method, target, route, decision, status,
// duration_ms, key_sha256), marked for AppendJsonLogLine.
std::string RequestLogLine(const RequestLogFields& fields);

// Appends one JSON object and a newline to `out` for a line logged at `time` and `level` with
// text `payload`: {"time", "level", "message"}, or, for a payload made by RequestLogLine in JSON,
// its members after time and level.
void AppendJsonLogLine(std::chrono::system_clock::time_point time, std::string_view level,
                       std::string_view payload, std::string& out);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_LOG_FORMAT_H_

#include "cli/log_setup.h"

#include <fmt/format.h>
#include <spdlog/async.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "gateway/log_format.h"

namespace idem::cli {
namespace {

// --log-format json: each line one JSON object (gateway/log_format.h), never colored.
class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line;
    const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
    gateway::AppendJsonLogLine(msg.time, std::string_view(level.data(), level.size()),
                               std::string_view(msg.payload.data(), msg.payload.size()), line);
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLogFormatter>();
  }
};

// Under journald: "<N>" before each line, which journald reads as the line's priority and strips
// (so `journalctl -p warning` finds warnings, and a JSON line stays one JSON object).
class JournalPriorityFormatter final : public spdlog::formatter {
 public:
  explicit JournalPriorityFormatter(std::unique_ptr<spdlog::formatter> inner)
      : inner_(std::move(inner)) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const char prefix[] = {'<', static_cast<char>('0' + JournalPriority(msg.level)), '>'};
    dest.append(prefix, prefix + sizeof prefix);
    inner_->format(msg, dest);
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JournalPriorityFormatter>(inner_->clone());
  }

 private:
  std::unique_ptr<spdlog::formatter> inner_;
};

}  // namespace

absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(std::string_view name) {
  using spdlog::level::level_enum;
  struct Name {
    std::string_view name;
    level_enum level;
  };
  static constexpr Name kNames[] = {
      {"trace", level_enum::trace},  {"debug", level_enum::debug},       {"info", level_enum::info},
      {"warning", level_enum::warn}, {"warn", level_enum::warn},         {"error", level_enum::err},
      {"err", level_enum::err},      {"critical", level_enum::critical}, {"off", level_enum::off}};
  for (const Name& n : kNames) {
    if (n.name == name) return n.level;
  }
  return absl::InvalidArgumentError(
      fmt::format("log level '{}' is not known: use {}", name, kLogLevelHelp));
}

void AddLogFlags(CLI::App& cmd, LogSettings& settings) {
  cmd.add_option("--log-format", settings.format,
                 "text, or json: one object per line, keys only as hashes (text)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd.add_option("--log-level", settings.level, std::string(kLogLevelHelp))
      ->check([](const std::string& name) {
        absl::StatusOr<spdlog::level::level_enum> level = ParseLogLevel(name);
        return level.ok() ? std::string() : std::string(level.status().message());
      });
}

int JournalPriority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return 7;
    case spdlog::level::info:
      return 6;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::err:
      return 3;
    default:
      return 2;
  }
}

bool StderrIsJournal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  struct stat st {};
  return std::sscanf(stream, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
         static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

// Log lines are written by a thread of their own: an io thread never waits for stderr (a file on
// a slow disk, a full pipe). When the queue is full the oldest line is dropped, not the request
// held; spdlog::shutdown() at the end of the command flushes what is queued.
void SetUpLogging(const LogSettings& settings) {
  spdlog::init_thread_pool(16384, 1);
  auto logger = spdlog::create_async_nb<spdlog::sinks::stderr_color_sink_mt>("idem");
  std::unique_ptr<spdlog::formatter> formatter;
  if (settings.format == "json") {
    gateway::SetLogFormat(gateway::LogFormat::kJson);
    formatter = std::make_unique<JsonLogFormatter>();
  } else {
    formatter = std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  if (StderrIsJournal())
    formatter = std::make_unique<JournalPriorityFormatter>(std::move(formatter));
  logger->set_formatter(std::move(formatter));
  spdlog::set_default_logger(logger);
  SetLogLevel(ParseLogLevel(settings.level).value_or(spdlog::level::info));
}

void SetLogLevel(spdlog::level::level_enum level) { spdlog::set_level(level); }

}  // namespace idem::cli

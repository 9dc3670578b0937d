// `idem outbox list|show|redrive|purge --store URI`: see and repair the outbox's messages
// (docs/outbox.md).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_output.h"
#include "cli/commands.h"
#include "cli/outbox_format.h"
#include "idem/clock.h"
#include "idem/outbox_admin.h"
#include "idem/retry/duration.h"
#include "idem/store.h"

namespace idem::cli {
namespace {

// Exit codes: a contract (docs/outbox.md); never renumber.
constexpr int kExitOk = 0;
constexpr int kExitNotFound = 1;
constexpr int kExitUsage = 2;
constexpr int kExitStore = 3;
constexpr int kExitRefused = 4;

constexpr const char* kFooter = R"(Exit status:
  0  done
  1  show, redrive or purge: no message has that id
  2  usage error: bad flag, state, id or store URI; a store file that does not exist
  3  the store failed: unreachable, locked, corrupt, not idem's, or newer than this idem
  4  refused: redrive of a message that is not dead; purge of pending messages without --force

Examples:
  idem outbox list --store sqlite:./idem.db --state dead
  idem outbox show --store sqlite:./idem.db 0190a5c4-1f2e-7d3a-8b4c-5d6e7f809102 --format json
  idem outbox redrive --store postgresql://idem@127.0.0.1/idem --all-dead --aggregate order-42
  idem outbox purge --store sqlite:./idem.db --state dead)";

struct OutboxFlags {
  std::string store;
  std::string lock_timeout;  // a duration; StoreOptions' default when empty
  std::string format = "text";
  // list
  std::optional<std::string> state;
  std::string aggregate, topic;
  int64_t limit = 100;
  // show / redrive / purge
  std::string id;
  bool all_dead = false;
  bool force = false;
};

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "idem outbox: %s\n", message.c_str());
  return code;
}

int StoreFailure(const absl::Status& s) {
  if (absl::IsNotFound(s) && s.message().find("no outbox message") != std::string_view::npos) {
    return Fail(kExitNotFound, std::string(s.message()));
  }
  if (absl::IsFailedPrecondition(s) && s.message().find("not dead") != std::string_view::npos) {
    return Fail(kExitRefused, std::string(s.message()));
  }
  const bool usage = absl::IsInvalidArgument(s) || absl::IsNotFound(s);
  std::string message(s.message());
  if (absl::IsUnavailable(s)) message += " (give a longer --lock-timeout to wait longer)";
  return Fail(usage ? kExitUsage : kExitStore, message);
}

int Print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  return OutputWritten("idem outbox") ? kExitOk : kExitStore;
}

absl::StatusOr<std::unique_ptr<Store>> Open(const OutboxFlags& f) {
  StoreOptions options;
  options.create_if_missing = false;  // a mistyped path is an error, not a new empty store
  options.max_connections = 1;
  if (!f.lock_timeout.empty()) {
    absl::StatusOr<Millis> wait = retry::ParseDuration(f.lock_timeout);
    if (!wait.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("--lock-timeout: {}", std::string(wait.status().message())));
    }
    options.lock_timeout = *wait;
  }
  return OpenStore(f.store, options);
}

absl::StatusOr<std::optional<OutboxState>> StateFlag(const std::optional<std::string>& state) {
  if (!state) return std::optional<OutboxState>();
  absl::StatusOr<OutboxState> parsed = ParseOutboxState(*state);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("--state '{}': use pending, sent or dead", *state));
  }
  return std::optional<OutboxState>(*parsed);
}

int RunList(const OutboxFlags& f) {
  if (f.format != "text" && f.format != "json") return Fail(kExitUsage, "--format is text or json");
  if (f.limit < 0) return Fail(kExitUsage, "--limit is 0 (all) or more");
  absl::StatusOr<std::optional<OutboxState>> state = StateFlag(f.state);
  if (!state.ok()) return Fail(kExitUsage, std::string(state.status().message()));
  absl::StatusOr<std::unique_ptr<Store>> store = Open(f);
  if (!store.ok()) return StoreFailure(store.status());
  OutboxQuery query{.state = *state, .aggregate_key = f.aggregate, .topic = f.topic};
  std::vector<OutboxRecord> records;
  while (f.limit == 0 || static_cast<int64_t>(records.size()) < f.limit) {
    const int64_t want = f.limit == 0 ? 1000 : f.limit - static_cast<int64_t>(records.size());
    query.limit = std::min<int64_t>(want, 1000);
    absl::StatusOr<std::vector<OutboxRecord>> page = ListOutbox(**store, query);
    if (!page.ok()) return StoreFailure(page.status());
    records.insert(records.end(), page->begin(), page->end());
    if (static_cast<int64_t>(page->size()) < query.limit) break;
    query.after_seq = records.back().seq;
  }
  if (f.format == "text") return Print(FormatOutboxTable(records, SystemClock().NowMillis()));
  std::string out = "[";
  for (size_t i = 0; i < records.size(); ++i) {
    out += (i == 0 ? "" : ",\n ") + OutboxRecordJson(records[i], false);
  }
  return Print(out + "]\n");
}

int RunShow(const OutboxFlags& f) {
  if (f.format != "text" && f.format != "json") return Fail(kExitUsage, "--format is text or json");
  absl::StatusOr<std::unique_ptr<Store>> store = Open(f);
  if (!store.ok()) return StoreFailure(store.status());
  absl::StatusOr<OutboxRecord> record = GetOutboxMessage(**store, f.id);
  if (!record.ok()) return StoreFailure(record.status());
  if (f.format == "json") return Print(OutboxRecordJson(*record, true) + "\n");
  return Print(FormatOutboxDetail(*record, SystemClock().NowMillis()));
}

int RunRedrive(const OutboxFlags& f) {
  if (f.id.empty() == !f.all_dead) {
    return Fail(kExitUsage, "redrive takes one message ID or --all-dead");
  }
  if (!f.id.empty() && !f.aggregate.empty()) {
    return Fail(kExitUsage, "--aggregate goes with --all-dead, not with a message ID");
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Open(f);
  if (!store.ok()) return StoreFailure(store.status());
  OutboxSelection selection{.id = f.id, .aggregate_key = f.aggregate};
  if (f.all_dead) selection.state = OutboxState::kDead;
  absl::StatusOr<int64_t> changed = RedriveOutbox(**store, selection, SystemClock().NowMillis());
  if (!changed.ok()) return StoreFailure(changed.status());
  return Print(fmt::format("re-drove {} dead message{}\n", *changed, *changed == 1 ? "" : "s"));
}

// Pending messages are never sent once purged: refused without --force.
int RunPurge(const OutboxFlags& f) {
  absl::StatusOr<std::optional<OutboxState>> state = StateFlag(f.state);
  if (!state.ok()) return Fail(kExitUsage, std::string(state.status().message()));
  if (f.id.empty() == !state->has_value()) {
    return Fail(kExitUsage, "purge takes one message ID or --state");
  }
  if (!f.id.empty() && !f.aggregate.empty()) {
    return Fail(kExitUsage, "--aggregate goes with --state, not with a message ID");
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Open(f);
  if (!store.ok()) return StoreFailure(store.status());
  std::optional<OutboxState> target = *state;
  if (!f.id.empty()) {
    absl::StatusOr<OutboxRecord> record = GetOutboxMessage(**store, f.id);
    if (!record.ok()) return StoreFailure(record.status());
    target = record->state;
  }
  if (target == OutboxState::kPending && !f.force) {
    return Fail(kExitRefused,
                "purging pending messages means they are never sent: add --force to purge anyway");
  }
  absl::StatusOr<int64_t> deleted =
      PurgeOutbox(**store, {.id = f.id, .state = *state, .aggregate_key = f.aggregate});
  if (!deleted.ok()) return StoreFailure(deleted.status());
  return Print(fmt::format("purged {} message{}\n", *deleted, *deleted == 1 ? "" : "s"));
}

void AddStoreFlags(CLI::App* sub, OutboxFlags& f) {
  sub->add_option("--store", f.store, "The store: sqlite:PATH or postgresql://...")->required();
  sub->add_option("--lock-timeout", f.lock_timeout,
                  "How long to wait for a store locked by another process, e.g. 500ms, 30s "
                  "(default 5s)")
      ->type_name("DURATION");
}

}  // namespace

void AddOutboxCommand(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<OutboxFlags>();
  CLI::App* outbox = app.add_subcommand("outbox", "See, re-drive and drop outbox messages");
  outbox->require_subcommand(1);
  outbox->footer(kFooter);
  CLI::App* list = outbox->add_subcommand("list", "List messages in order, filtered");
  AddStoreFlags(list, *f);
  list->add_option("--state", f->state, "Only pending, sent or dead messages");
  list->add_option("--aggregate", f->aggregate, "Only this aggregate key's messages");
  list->add_option("--topic", f->topic, "Only this topic's messages");
  list->add_option("--limit", f->limit, "At most N messages (default 100; 0: all)");
  list->add_option("--format", f->format, "text (default) or json");
  list->callback([f, &exit_code] { exit_code = RunList(*f); });
  CLI::App* show = outbox->add_subcommand("show", "Show one message with its payload");
  AddStoreFlags(show, *f);
  show->add_option("id", f->id, "The message id (a UUID)")->required();
  show->add_option("--format", f->format, "text (default) or json");
  show->callback([f, &exit_code] { exit_code = RunShow(*f); });
  CLI::App* redrive = outbox->add_subcommand("redrive", "Send dead messages again");
  AddStoreFlags(redrive, *f);
  redrive->add_option("id", f->id, "The dead message's id");
  redrive->add_flag("--all-dead", f->all_dead, "Every dead message (or --aggregate's)");
  redrive->add_option("--aggregate", f->aggregate, "With --all-dead: only this aggregate key");
  redrive->callback([f, &exit_code] { exit_code = RunRedrive(*f); });
  CLI::App* purge = outbox->add_subcommand("purge", "Delete messages: they are never sent");
  AddStoreFlags(purge, *f);
  purge->add_option("id", f->id, "The message's id");
  purge->add_option("--state", f->state, "Every message of this state: pending, sent or dead");
  purge->add_option("--aggregate", f->aggregate, "With --state: only this aggregate key");
  purge->add_flag("--force", f->force, "Purge pending messages too");
  purge->callback([f, &exit_code] { exit_code = RunPurge(*f); });
}

}  // namespace idem::cli

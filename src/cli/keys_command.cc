// `idem keys list|show|purge|sweep|migrate --store URI`: inspect and repair the key records of a
// store, or bring its schema up to date (docs/keys.md).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_output.h"
#include "cli/commands.h"
#include "cli/keys_format.h"
#include "idem/clock.h"
#include "idem/key.h"
#include "idem/retry/duration.h"
#include "idem/store.h"

namespace idem::cli {
namespace {

// Exit codes: a contract (docs/keys.md); never renumber.
constexpr int kExitOk = 0;
constexpr int kExitNotFound = 1;
constexpr int kExitUsage = 2;
constexpr int kExitStore = 3;
constexpr int kExitInFlight = 4;

constexpr const char* kFooter = R"(Exit status:
  0  done
  1  show or purge: the key has no record (show: no live record)
  2  usage error: bad flag, duration, state, key, or store URI; a store file that does not exist
  3  the store failed: unreachable, locked, corrupt, not idem's, or newer than this idem
  4  purge refused: the key is in flight (in_progress with a live lease); --force purges anyway

Examples:
  idem keys list --store sqlite:./idem.db --state in_progress --older-than 10m
  idem keys show --store sqlite:./idem.db --tenant acme order-42 --format json
  idem keys purge --store postgresql://idem@127.0.0.1/idem --tenant acme order-42
  idem keys sweep --store sqlite:./idem.db
  idem keys migrate --store postgresql://idem@127.0.0.1/idem)";

struct KeysFlags {
  std::string store;
  std::string lock_timeout;  // a duration; StoreOptions' default when empty
  std::string tenant;        // the global scope when empty
  std::string format = "text";
  // list
  std::optional<std::string> state, older_than, newer_than;
  bool include_expired = false;
  bool lapsed = false;
  int64_t limit = 100;
  // show / purge
  std::string key;
  bool force = false;
  // sweep
  int64_t batch = 1000;
  // migrate
  bool create = false;  // a store that does not exist yet may be created
};

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "idem keys: %s\n", message.c_str());
  return code;
}

int StoreFailure(const absl::Status& s) {
  const bool usage = absl::IsInvalidArgument(s) || absl::IsNotFound(s);
  std::string message(s.message());
  // A store another process holds locked: say which flag waits longer.
  if (absl::IsUnavailable(s)) message += " (give a longer --lock-timeout to wait longer)";
  return Fail(usage ? kExitUsage : kExitStore, message);
}

int Print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  return OutputWritten("idem keys") ? kExitOk : kExitStore;
}

absl::StatusOr<std::unique_ptr<Store>> Open(const KeysFlags& f) {
  StoreOptions options;
  options.create_if_missing = f.create;  // a mistyped path is an error, not a new empty store
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

absl::StatusOr<KeyQuery> MakeQuery(const KeysFlags& f, CLI::App* list) {
  KeyQuery q;
  if (list->count("--tenant") > 0) q.tenant = f.tenant;
  if (f.state) {
    if (*f.state == "in_progress")
      q.state = KeyState::kInProgress;
    else if (*f.state == "completed")
      q.state = KeyState::kCompleted;
    else if (*f.state == "failed_final")
      q.state = KeyState::kFailedFinal;
    else {
      return absl::InvalidArgumentError(
          fmt::format("--state '{}': use in_progress, completed or failed_final", *f.state));
    }
  }
  for (auto [text, field, flag] : {std::tuple{&f.older_than, &q.older_than, "--older-than"},
                                   std::tuple{&f.newer_than, &q.newer_than, "--newer-than"}}) {
    if (!text->has_value()) continue;
    absl::StatusOr<Millis> d = retry::ParseDuration(**text);
    if (!d.ok())
      return absl::InvalidArgumentError(
          fmt::format("{}: {}", flag, std::string(d.status().message())));
    *field = *d;
  }
  q.include_expired = f.include_expired;
  q.lapsed = f.lapsed;
  return q;
}

int RunList(const KeysFlags& f, CLI::App* list) {
  if (f.format != "text" && f.format != "json") {
    return Fail(kExitUsage, "--format is text or json");
  }
  if (f.limit < 0) return Fail(kExitUsage, "--limit is 0 (all) or more");
  absl::StatusOr<KeyQuery> query = MakeQuery(f, list);
  if (!query.ok()) return Fail(kExitUsage, std::string(query.status().message()));
  absl::StatusOr<std::unique_ptr<Store>> store = Open(f);
  if (!store.ok()) return StoreFailure(store.status());
  std::vector<KeyRecord> records;
  while (f.limit == 0 || static_cast<int64_t>(records.size()) < f.limit) {
    const int64_t want = f.limit == 0 ? 1000 : f.limit - static_cast<int64_t>(records.size());
    query->limit = std::min<int64_t>(want, 1000);
    absl::StatusOr<std::vector<KeyRecord>> page = (*store)->List(*query);
    if (!page.ok()) return StoreFailure(page.status());
    records.insert(records.end(), page->begin(), page->end());
    if (static_cast<int64_t>(page->size()) < query->limit) break;
    query->after = records.back().scope;
  }
  const int64_t now = SystemClock().NowMillis();
  if (f.format == "text") return Print(FormatKeyTable(records, now));
  std::string out = "[";
  for (size_t i = 0; i < records.size(); ++i) {
    out += (i == 0 ? "" : ",\n ") + KeyRecordJson(records[i], now, false);
  }
  return Print(out + "]\n");
}

// Returns the scope of show/purge, or an error naming what is wrong with it.
absl::StatusOr<Scope> ScopeOf(const KeysFlags& f) {
  Scope scope{f.tenant, f.key};
  absl::Status valid = ValidateScope(scope);
  if (!valid.ok()) return valid;
  return scope;
}

int RunShow(const KeysFlags& f) {
  if (f.format != "text" && f.format != "json") {
    return Fail(kExitUsage, "--format is text or json");
  }
  absl::StatusOr<Scope> scope = ScopeOf(f);
  if (!scope.ok()) return Fail(kExitUsage, std::string(scope.status().message()));
  absl::StatusOr<std::unique_ptr<Store>> store = Open(f);
  if (!store.ok()) return StoreFailure(store.status());
  absl::StatusOr<KeyRecord> record = (*store)->Get(*scope);
  if (absl::IsNotFound(record.status()))
    return Fail(kExitNotFound, std::string(record.status().message()));
  if (!record.ok()) return StoreFailure(record.status());
  const int64_t now = SystemClock().NowMillis();
  if (f.format == "json") return Print(KeyRecordJson(*record, now, true) + "\n");
  return Print(FormatKeyDetail(*record, now));
}

int RunPurge(const KeysFlags& f) {
  absl::StatusOr<Scope> scope = ScopeOf(f);
  if (!scope.ok()) return Fail(kExitUsage, std::string(scope.status().message()));
  absl::StatusOr<std::unique_ptr<Store>> store = Open(f);
  if (!store.ok()) return StoreFailure(store.status());
  absl::StatusOr<KeyRecord> live = (*store)->Get(*scope);
  if (live.ok() && live->state == KeyState::kInProgress && !f.force &&
      live->lease_until_ms > SystemClock().NowMillis()) {
    return Fail(kExitInFlight,
                fmt::format("key '{}' of tenant '{}' is in flight (owner {}, lease live); "
                            "purging it lets a retry run the effect again while the first may "
                            "still succeed: add --force to purge anyway",
                            scope->key, scope->tenant, live->owner));
  }
  absl::Status purged = (*store)->Purge(*scope);
  if (absl::IsNotFound(purged)) return Fail(kExitNotFound, std::string(purged.message()));
  if (!purged.ok()) return StoreFailure(purged);
  return Print(fmt::format("purged key '{}' of tenant '{}'\n", scope->key, scope->tenant));
}

int RunSweep(const KeysFlags& f) {
  if (f.batch < 1) return Fail(kExitUsage, "--batch is 1 or more");
  absl::StatusOr<std::unique_ptr<Store>> store = Open(f);
  if (!store.ok()) return StoreFailure(store.status());
  int64_t total = 0;
  while (true) {
    absl::StatusOr<int64_t> swept = (*store)->SweepExpired(f.batch);
    if (!swept.ok()) return StoreFailure(swept.status());
    total += *swept;
    if (*swept < f.batch) break;
  }
  return Print(fmt::format("swept {} expired record{}\n", total, total == 1 ? "" : "s"));
}

// Opening a store applies the migrations it lacks (on PostgreSQL, also the SQL functions of
// schema idem, docs/sql.md): migrate is an open that says so.
int RunMigrate(const KeysFlags& f) {
  absl::StatusOr<std::unique_ptr<Store>> store = Open(f);
  if (!store.ok()) return StoreFailure(store.status());
  const bool postgres = f.store.starts_with("postgres");
  return Print(fmt::format("store {} is at this idem's newest schema{}\n", RedactStoreUri(f.store),
                           postgres ? ", with the SQL functions idem.begin, idem.finish, "
                                      "idem.acquire, idem.heartbeat, idem.complete and "
                                      "idem.release (/usr/share/doc/idem/sql.md.gz)"
                                    : ""));
}

void AddStoreFlags(CLI::App* sub, KeysFlags& f) {
  sub->add_option("--store", f.store, "The store: sqlite:PATH, postgresql://... or nats://...")
      ->required();
  sub->add_option("--lock-timeout", f.lock_timeout,
                  "How long to wait for a store locked by another process, at open and at each "
                  "statement, e.g. 500ms, 30s (default 5s)")
      ->type_name("DURATION");
}

void AddScopeFlags(CLI::App* sub, KeysFlags& f) {
  sub->add_option("--tenant", f.tenant, "The key's tenant (default: the global scope)");
  sub->add_option("key", f.key, "The Idempotency-Key")->required();
}

}  // namespace

void AddKeysCommand(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<KeysFlags>();
  CLI::App* keys = app.add_subcommand("keys", "Inspect and repair the key records of a store");
  keys->require_subcommand(1);
  keys->footer(kFooter);
  CLI::App* list = keys->add_subcommand("list", "List key records, filtered");
  AddStoreFlags(list, *f);
  list->add_option("--tenant", f->tenant, "Only this tenant ('' for the global scope)");
  list->add_option("--state", f->state, "Only in_progress, completed or failed_final");
  list->add_option("--older-than", f->older_than, "Only records created at least DUR ago");
  list->add_option("--newer-than", f->newer_than, "Only records created less than DUR ago");
  list->add_flag("--include-expired", f->include_expired, "Also expired, unswept records");
  list->add_flag("--lapsed", f->lapsed,
                 "Only in_progress records whose lease lapsed (what idem serve recovers)");
  list->add_option("--limit", f->limit, "At most N records (default 100; 0: all)");
  list->add_option("--format", f->format, "text (default) or json");
  list->callback([f, list, &exit_code] { exit_code = RunList(*f, list); });
  CLI::App* show = keys->add_subcommand("show", "Show one live record and its stored response");
  AddStoreFlags(show, *f);
  AddScopeFlags(show, *f);
  show->add_option("--format", f->format, "text (default) or json");
  show->callback([f, &exit_code] { exit_code = RunShow(*f); });
  CLI::App* purge = keys->add_subcommand("purge", "Delete one record: its next arrival runs again");
  AddStoreFlags(purge, *f);
  AddScopeFlags(purge, *f);
  purge->add_flag("--force", f->force, "Purge even a key in flight");
  purge->callback([f, &exit_code] { exit_code = RunPurge(*f); });
  CLI::App* sweep = keys->add_subcommand("sweep", "Delete every expired record now");
  AddStoreFlags(sweep, *f);
  sweep->add_option("--batch", f->batch, "Records deleted per transaction (default 1000)");
  sweep->callback([f, &exit_code] { exit_code = RunSweep(*f); });
  CLI::App* migrate = keys->add_subcommand(
      "migrate", "Bring the store's schema to this idem's newest (PostgreSQL: and idem.* SQL)");
  AddStoreFlags(migrate, *f);
  migrate->callback([f, &exit_code] {
    f->create = true;  // a SQLite file that does not exist yet is created
    exit_code = RunMigrate(*f);
  });
}

}  // namespace idem::cli

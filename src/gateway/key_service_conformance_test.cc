// The lease-mode half of the store conformance suite, run through the group-committing
// KeyService: a Store whose lease-mode calls and batches are submitted to the service (each
// blocking on its result), over SQLite, or over the "postgres" CTest fixture's server when
// IDEM_E2E_STORE=postgres is in the environment (CMakeLists.txt registers the binary once per
// store, the PostgreSQL tests with the prefix "Postgres"). Calls the service does not carry
// (TakeOver, sweeping, listing, purging, transactions) go to the store directly. The suite runs
// twice: through one writer ("KeyService", idem serve's default) and through four
// ("KeyServiceWriters", --store-writers 4; a batch's writes of different keys then go to different
// writers, so the one test of the fence order across the keys of one batch is left out there).
// CMakeLists.txt filters out the suite's transaction-mode and operator tests, and the one test of
// a difference ApplyLeaseBatch documents (a claim there takes over a lapsed lease of the same
// request itself).
#include <gtest/gtest.h>

#include <cstdlib>
#include <future>
#include <memory>
#include <string_view>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/thread_pool.hpp>
#pragma GCC diagnostic pop

#include "gateway/group_commit_key_service.h"
#include "gateway/testing/forwarding_store.h"
#include "store/testing/sqlite_store_factory.h"
#include "store/testing/store_conformance.h"
#ifdef IDEM_TEST_WITH_POSTGRES
#include "pg_test_support.h"
#endif

namespace idem::gateway {
namespace {

KeyOp ToKeyOp(const LeaseWrite& w) {
  static constexpr KeyOp::Kind kKinds[] = {KeyOp::Kind::kClaim, KeyOp::Kind::kHeartbeat,
                                           KeyOp::Kind::kComplete, KeyOp::Kind::kFailFinal,
                                           KeyOp::Kind::kRelease};
  return {.kind = kKinds[static_cast<int>(w.kind)],
          .scope = w.scope,
          .fingerprint = w.fingerprint,
          .owner = w.owner,
          .lease = w.lease,
          .fence = w.fence,
          .response = w.response};
}

class KeyServiceStore final : public testing::ForwardingStore {
 public:
  KeyServiceStore(std::unique_ptr<Store> real, int writers)
      : ForwardingStore(*real),
        owned_(std::move(real)),
        service_(NewGroupCommitKeyService(*owned_, metrics_, {.writers = writers})) {}
  ~KeyServiceStore() override { service_->Shutdown(); }

  absl::StatusOr<ClaimResult> Claim(const ClaimRequest& request) override {
    KeyOpResult r = RunAll({{.kind = KeyOp::Kind::kClaim,
                             .scope = request.scope,
                             .fingerprint = request.fingerprint,
                             .owner = request.owner,
                             .lease = request.lease}})[0];
    if (!r.status.ok()) return r.status;
    return ClaimResult{.claimed = r.claimed, .record = std::move(r.record)};
  }
  absl::Status Heartbeat(const Scope& scope, int64_t fence, Millis lease) override {
    return Fenced(KeyOp::Kind::kHeartbeat, scope, fence, {}, lease);
  }
  absl::Status Complete(const Scope& scope, int64_t fence, const StoredResponse& r) override {
    return Fenced(KeyOp::Kind::kComplete, scope, fence, r);
  }
  absl::Status FailFinal(const Scope& scope, int64_t fence, const StoredResponse& r) override {
    return Fenced(KeyOp::Kind::kFailFinal, scope, fence, r);
  }
  absl::Status Release(const Scope& scope, int64_t fence) override {
    return Fenced(KeyOp::Kind::kRelease, scope, fence);
  }
  absl::StatusOr<KeyRecord> Get(const Scope& scope) override {
    KeyOpResult r = RunAll({{.kind = KeyOp::Kind::kGet, .scope = scope}})[0];
    if (!r.status.ok()) return r.status;
    return std::move(r.record);
  }
  // Every write submitted at once (they share batches), each result awaited.
  absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) override {
    std::vector<KeyOp> ops;
    for (const LeaseWrite& w : writes) ops.push_back(ToKeyOp(w));
    std::vector<LeaseWriteResult> out;
    for (KeyOpResult& r : RunAll(std::move(ops))) {
      if (absl::IsUnavailable(r.status)) return r.status;
      out.push_back({.status = std::move(r.status),
                     .claimed = r.claimed,
                     .taken_over = r.taken_over,
                     .record = std::move(r.record),
                     .lease_until_ms = r.lease_until_ms,
                     .now_ms = r.now_ms});
    }
    return out;
  }

 private:
  absl::Status Fenced(KeyOp::Kind kind, const Scope& scope, int64_t fence,
                      StoredResponse response = {}, Millis lease = Millis(0)) {
    return RunAll({{.kind = kind,
                    .scope = scope,
                    .lease = lease,
                    .fence = fence,
                    .response = std::move(response)}})[0]
        .status;
  }
  std::vector<KeyOpResult> RunAll(std::vector<KeyOp> ops) {
    std::vector<std::promise<KeyOpResult>> promises(ops.size());
    std::vector<std::future<KeyOpResult>> futures;
    for (size_t i = 0; i < ops.size(); ++i) {
      futures.push_back(promises[i].get_future());
      service_->Submit(std::move(ops[i]), pool_.get_executor(),
                       [p = &promises[i]](KeyOpResult r) { p->set_value(std::move(r)); });
    }
    std::vector<KeyOpResult> out;
    for (auto& f : futures) out.push_back(f.get());
    return out;
  }

  std::unique_ptr<Store> owned_;
  Metrics metrics_;
  boost::asio::thread_pool pool_{1};
  std::unique_ptr<KeyService> service_;
};

using Open = std::function<absl::StatusOr<std::unique_ptr<Store>>(const StoreOptions&)>;

Open ThroughKeyService(Open open, int writers) {
  return [open, writers](const StoreOptions& options) -> absl::StatusOr<std::unique_ptr<Store>> {
    absl::StatusOr<std::unique_ptr<Store>> real = open(options);
    if (!real.ok()) return real.status();
    return std::make_unique<KeyServiceStore>(*std::move(real), writers);
  };
}

bool OnPostgres() {
  const char* store = std::getenv("IDEM_E2E_STORE");
  return store != nullptr && std::string_view(store) == "postgres";
}

// The store under the service, as this run's environment names it.
::idem::testing::StoreFactory UnderlyingStore() {
  if (!OnPostgres()) return ::idem::testing::SqliteStoreFactory();
#ifdef IDEM_TEST_WITH_POSTGRES
  return pgtest::PostgresStoreFactory();
#else
  Open unavailable = [](const StoreOptions&) -> absl::StatusOr<std::unique_ptr<Store>> {
    return absl::FailedPreconditionError(
        "IDEM_E2E_STORE=postgres, but this test was built without PostgreSQL");
  };
  return {.name = "postgres", .open_fresh = unavailable, .open_again = unavailable};
#endif
}

// One name on every store, so the test names CTest discovered match whatever the environment
// chooses when they run.
::idem::testing::StoreFactory ThroughKeyService(int writers) {
  ::idem::testing::StoreFactory store = UnderlyingStore();
  return {.name = "through_key_service",
          .open_fresh = ThroughKeyService(store.open_fresh, writers),
          .open_again = ThroughKeyService(store.open_again, writers)};
}

using ::idem::testing::StoreConformanceTest;
INSTANTIATE_TEST_SUITE_P(KeyService, StoreConformanceTest, ::testing::Values(ThroughKeyService(1)),
                         ::idem::testing::StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(KeyServiceWriters, StoreConformanceTest,
                         ::testing::Values(ThroughKeyService(4)),
                         ::idem::testing::StoreFactoryName);

}  // namespace
}  // namespace idem::gateway

// idem/lease_recoverer.h: drives lapsed lease-mode claims to a definitive state (docs/guard.md,
// "Recovering lapsed claims"), the library's counterpart of idem serve's completer.
//
// A LeaseGuard holder that dies leaves its key in_progress; without more, nothing happens until
// the same request arrives again and runs the effect again. A recoverer instead lists the store's
// lapsed in_progress claims, takes each over through the store with a new fence, exactly as a
// retry's claim would (of any number of recoverers and guards on one store, one wins each key;
// the dead holder, should it come back, fails its fenced writes with Aborted), and hands what the
// claim stored (its scope, fingerprint and note: LeaseGuard::Acquire's `note`) to the caller's
// resolver, which finds out what became of the effect (asks the downstream by key, reads its own
// tables) and answers:
//  - Completed / FailedFinal: the effect's outcome, recorded and replayed as a holder's Finish;
//  - NeverHappened: the key is released, so the next arrival runs the effect (once);
//  - Later: nothing known yet; the key stays held for a while (the hold), and once that lapses a
//    pass of any recoverer asks again, with the next attempt number.
// A resolver error (a non-OK status, or an exception) counts as Later with the backoff's hold.
//
// Thread-safety: a LeaseRecoverer is safe to use from many threads; its resolver is called from
// the thread running the pass, one claim at a time.
#ifndef IDEM_LEASE_RECOVERER_H_
#define IDEM_LEASE_RECOVERER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/record.h"
#include "idem/retry/backoff.h"
#include "idem/store.h"

namespace idem {

// A lapsed claim, held by the recoverer while its resolver runs.
struct LapsedClaim {
  Scope scope;
  std::string fingerprint;  // the request's, as claimed
  // What the claim stored beside it (LeaseGuard::Acquire's note, or a kClaim's response), as the
  // claimer wrote it.
  StoredResponse note;
  std::string lapsed_owner;  // the owner whose lease lapsed
  int64_t created_ms = 0;    // when the key was first claimed, by the store's clock
  int attempt = 1;           // 1 on the first recovery of this claim, then 2, 3, ...
  int64_t fence = 0;         // the recoverer's fence (the lapsed holder's is void from now on)
  // The end of the recoverer's hold, by the store's clock: answer before it (see
  // RecoverOptions::lease), or another recoverer may take the key over and ask again.
  int64_t lease_until_ms = 0;
};

// A resolver's answer about one claim. Make it with the functions below.
struct Resolution {
  enum class Kind { kCompleted, kFailedFinal, kNeverHappened, kLater };
  Kind kind = Kind::kLater;
  StoredResponse response;  // kCompleted, kFailedFinal: the outcome to record
  Millis hold{0};           // kLater: how long the key stays held; 0: RecoverOptions::backoff

  // The effect happened and succeeded: `response` is recorded (completed) and replayed.
  static Resolution Completed(StoredResponse response);
  // The effect ended in a deterministic failure: `response` is recorded (failed_final).
  static Resolution FailedFinal(StoredResponse response);
  // The effect never happened: the key is released; the next arrival runs it.
  static Resolution NeverHappened();
  // Not known yet: keep the key held for `hold` (default: the backoff of the attempt), then ask
  // again.
  static Resolution Later(Millis hold = Millis(0));
};

// Finds out what became of a lapsed claim's effect. Errors are the resolver's own: the key is
// kept held for the backoff and asked about again (RecoveryReport counts them).
using Resolver = std::function<absl::StatusOr<Resolution>(const LapsedClaim&)>;

struct RecoverOptions {
  // Only claims of this tenant (the empty string: the global scope). Default: every tenant.
  std::optional<std::string> tenant;
  // Only claims this accepts (e.g. by their note: a store shared with idem serve or other
  // services holds their claims too). It sees the lapsed record as listed. Default: every claim.
  std::function<bool(const KeyRecord&)> filter;
  // How long the recoverer holds a key while its resolver runs. Default 30 s.
  Millis lease = 30s;
  // The hold after a Later() without a hold, or a resolver error: for the n-th attempt,
  // min(cap, base * 2^(n-1)) with equal jitter by default. Default: base 5 s, cap 5 min.
  retry::BackoffOptions backoff{
      .jitter = retry::Jitter::kEqual, .base = Millis(5'000), .cap = Millis(300'000)};
  // Seeds the jitter. Default 0: a seed drawn from the time.
  uint64_t seed = 0;
  // Names the recoverer in the records it takes over, as "OWNER/recover-N". Default (empty):
  // "HOST:PID:N", unique per recoverer.
  std::string owner;
  // A stop request ends a pass before its next claim. Default: none.
  std::stop_token stop;
};

// What one pass did. Every claim it took over is counted once in completed, failed_final,
// never_happened, later or unsettled.
struct RecoveryReport {
  int64_t lapsed = 0;   // lapsed claims listed (of the tenant) that the filter accepted
  int64_t skipped = 0;  // gone, finished, or taken by another holder before this pass's claim
  int64_t completed = 0;
  int64_t failed_final = 0;
  int64_t never_happened = 0;  // released
  int64_t later = 0;           // held for another attempt (resolver errors included)
  int64_t resolver_errors = 0;
  // Taken over, but the answer could not be written (the store down twice in a row, or the key
  // taken over by another recoverer after this one's hold lapsed): the key lapses again.
  int64_t unsettled = 0;
  absl::Status last_error;  // the last resolver error or failed write, for the log; OK when none
};

class LeaseRecoverer {
 public:
  // REQUIRES: `store` outlives the recoverer.
  explicit LeaseRecoverer(Store& store, RecoverOptions options = {});
  LeaseRecoverer(const LeaseRecoverer&) = delete;
  LeaseRecoverer& operator=(const LeaseRecoverer&) = delete;

  // One pass: lists the lapsed in_progress claims (Store::List with KeyQuery::lapsed, in pages),
  // and takes each the options select over and settles it by `resolver`'s answer. A claim that is
  // gone, finished or live again by then is skipped. Call it every few seconds (a thread or
  // timer of the caller's); recoverers in many processes may run at once.
  // Errors: InvalidArgument for a lease that is not positive or invalid backoff options (nothing
  // read); Unimplemented for a store that cannot list; Unavailable when a list fails (claims
  // already settled stay settled; the next pass carries on). A resolver's error or exception and
  // a failed write of a claim are counted in the report, not returned.
  absl::StatusOr<RecoveryReport> RecoverLapsedOnce(const Resolver& resolver);

  const RecoverOptions& options() const { return options_; }

 private:
  // Takes `record` over, asks `resolver` and writes its answer.
  void Recover(const KeyRecord& record, const Resolver& resolver, RecoveryReport& report);
  Millis BackoffHold(int attempt);

  Store& store_;
  RecoverOptions options_;
  std::atomic<uint64_t> takeovers_{0};
  std::mutex rng_mu_;
  std::mt19937_64 rng_;
};

}  // namespace idem

#endif  // IDEM_LEASE_RECOVERER_H_

// Internal: what an upstream's answer lets the holder of a key record, decided in one place for
// every path that asks the upstream under a held key: a client's forward (record_outcome.cc) and
// the completer's re-send or status question (completer.cc), and a client's takeover of a lapsed
// key on a `status` route (status_takeover.cc). Two paths deciding the same thing apart is how a
// request whose answer had arrived came to be sent again by one of them.
//
// Thread-safety: pure functions.
#ifndef IDEM_GATEWAY_ANSWER_VERDICT_H_
#define IDEM_GATEWAY_ANSWER_VERDICT_H_

#include <string>

#include "gateway/forward.h"
#include "gateway/gateway_config.h"
#include "idem/record.h"

namespace idem::gateway {

struct AnswerVerdict {
  enum class Kind {
    kCompleted,    // record `stored` as the key's completed outcome
    kFailedFinal,  // record `stored` as its failed_final outcome (a final failure status)
    // The upstream ran the request (its answer's head arrived) but the answer cannot be kept (too
    // large, cut off, malformed or too slow after the head): record `stored`, the 502
    // upstream-answer-not-kept problem, as failed_final, and never send the request again.
    kNotKept,
    kTransient,      // a transient status: nothing is recorded (`why` says which)
    kNotReached,     // no answer head: nothing is known, nothing is recorded (`why`)
    kNeverHappened,  // a status URL's 404: the effect never happened; the key may be run again
  };
  Kind kind = Kind::kNotReached;
  StoredResponse stored;  // kCompleted, kFailedFinal, kNotKept
  std::string why;        // kTransient, kNotReached: what the upstream gave, for logs and problems
};

// The verdict on the answer to the request itself (a forward or a re-send) on `route`: a final
// status is recorded (ClassifyOutcome, trimmed by ToStored), a transient one is not, and an answer
// whose head arrived but which cannot be kept is the 502 upstream-answer-not-kept (kNotKept).
AnswerVerdict VerdictOnAnswer(const Route& route, const UpstreamAnswer& answer);

// The verdict on the answer of `route`'s status URL (recover = "status"): 200 is kCompleted with
// that answer (its status replaced by route.recovered_status when set), 404 kNeverHappened, any
// other status or none kTransient or kNotReached. A 200 whose answer cannot be kept (its head
// arrived, then it proved too large, cut off or too slow) is what VerdictOnAnswer makes of it,
// kNotKept: the effect happened and asking again would only get the same answer; any other status
// URL answer that cannot be kept is kNotReached (the question has no effect and is asked again).
AnswerVerdict VerdictOnStatusAnswer(const Route& route, const UpstreamAnswer& answer);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_ANSWER_VERDICT_H_

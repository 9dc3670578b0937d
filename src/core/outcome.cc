#include "idem/outcome.h"

namespace idem {

OutcomeClassifier OutcomeClassifier::With(int status, OutcomeClass outcome) const {
  OutcomeClassifier copy = *this;
  copy.overrides_[status] = outcome;
  return copy;
}

OutcomeClass OutcomeClassifier::Classify(int status) const {
  if (auto it = overrides_.find(status); it != overrides_.end()) return it->second;
  // A 1xx is never a final answer, so it is never stored.
  if (status >= 200 && status < 400) return OutcomeClass::kCompleted;
  if (status >= 400 && status < 500) {
    // Timeout, too early and rate limited: the same request may succeed later. Conflict: an
    // upstream that deduplicates by the same key answers 409 while the first attempt is still in
    // flight (e.g. re-sent after a takeover); stored, it would be replayed for the whole
    // retention.
    if (status == 408 || status == 409 || status == 425 || status == 429) {
      return OutcomeClass::kTransient;
    }
    return OutcomeClass::kFailedFinal;
  }
  return OutcomeClass::kTransient;
}

}  // namespace idem

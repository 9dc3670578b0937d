#include "idem/outcome.h"

namespace idem {

OutcomeClassifier OutcomeClassifier::With(int status, OutcomeClass outcome) const {
  OutcomeClassifier copy = *this;
  copy.overrides_[status] = outcome;
  return copy;
}

OutcomeClass OutcomeClassifier::Classify(int status) const {
  if (auto it = overrides_.find(status); it != overrides_.end()) return it->second;
  if (status >= 100 && status < 400) return OutcomeClass::kCompleted;
  if (status >= 400 && status < 500) {
    // Timeout, too early and rate limited: the same request may succeed later.
    if (status == 408 || status == 425 || status == 429) return OutcomeClass::kTransient;
    return OutcomeClass::kFailedFinal;
  }
  return OutcomeClass::kTransient;
}

}  // namespace idem

// idem/outcome.h: which outcomes are stored and replayed, and which are never cached
// (docs/design.md §1).
//
// Thread-safety: an OutcomeClassifier is immutable once built; share it freely.
#ifndef IDEM_OUTCOME_H_
#define IDEM_OUTCOME_H_

#include <map>

namespace idem {

enum class OutcomeClass {
  kCompleted,    // stored as completed and replayed
  kFailedFinal,  // a deterministic failure: stored as failed_final and replayed
  kTransient,    // retrying may change it: never stored; the key becomes absent again
};

class OutcomeClassifier {
 public:
  // The default rules: 2xx and 3xx completed; 4xx failed_final, except 408, 409, 425 and 429,
  // which are transient; 1xx (never a final answer), 5xx and anything else transient, so never
  // stored.
  OutcomeClassifier() = default;

  // Returns a copy that classifies `status` as `outcome`, overriding the default rule.
  OutcomeClassifier With(int status, OutcomeClass outcome) const;

  OutcomeClass Classify(int status) const;

 private:
  std::map<int, OutcomeClass> overrides_;
};

}  // namespace idem

#endif  // IDEM_OUTCOME_H_

// The cases of the zoo (check_zoo_test.cc): which zoo API (tests/check/zoo_api.h), how it is
// checked, what the truth is, and the verdicts and exit status that truth calls for.
#ifndef IDEM_TESTS_CHECK_ZOO_CASES_H_
#define IDEM_TESTS_CHECK_ZOO_CASES_H_

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace idem::check_zoo {

struct ZooCase {
  std::string name;  // the test's name
  std::string flaw;
  std::string truth;  // "correct", "broken" or "untestable" (as the run is set up)
  std::vector<std::string> flags;
  int exit_code = 0;
  // scenario -> "verdict" or "verdict/reason"
  std::map<std::string, std::string> verdicts;
  bool counted = false;  // --count-url GET /count --count-pointer /effects
  std::string path = "/charges";
  std::string in_output;  // a phrase the output must hold
};

inline void PrintTo(const ZooCase& c, std::ostream* os) { *os << c.name; }

// Every case of the zoo, in the order of docs/idem-check.md's items.
const std::vector<ZooCase>& ZooCases();

// --only replay,mismatch,lost-answer --bursts 3: the keyed scenarios that take no time.
const std::vector<std::string>& KeyedFast();

// `a` then `b`.
std::vector<std::string> Flags(std::vector<std::string> a, const std::vector<std::string>& b);

}  // namespace idem::check_zoo

#endif  // IDEM_TESTS_CHECK_ZOO_CASES_H_

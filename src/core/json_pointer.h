// Internal: RFC 6901 JSON pointers, gathered into a tree so that a document can be written
// without the values they name.
#ifndef IDEM_CORE_JSON_POINTER_H_
#define IDEM_CORE_JSON_POINTER_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace idem::core {

// Returns the unescaped reference tokens of `pointer` ("/a~1b/0" → {"a/b", "0"}). Returns
// InvalidArgument for "" (the whole document cannot be excluded), a pointer that does not start
// with '/', or a '~' not followed by '0' or '1'.
absl::StatusOr<std::vector<std::string>> ParseJsonPointer(std::string_view pointer);

// The excluded locations below one value: a child is excluded, or holds excluded descendants.
struct PointerTree {
  bool excluded = false;
  std::map<std::string, PointerTree, std::less<>> children;

  // Returns the subtree for member name or array index `token`, or null when nothing below it
  // is excluded.
  const PointerTree* Find(std::string_view token) const;
};

// Adds the location named by `tokens` to `tree`.
void AddExcluded(PointerTree& tree, const std::vector<std::string>& tokens);

}  // namespace idem::core

#endif  // IDEM_CORE_JSON_POINTER_H_

#include "core/json_pointer.h"

#include <fmt/format.h>

namespace idem::core {

absl::StatusOr<std::vector<std::string>> ParseJsonPointer(std::string_view pointer) {
  if (pointer.empty()) {
    return absl::InvalidArgumentError(
        "JSON pointer \"\" names the whole document, which cannot be excluded; name a member, "
        "e.g. \"/request_id\"");
  }
  if (pointer.front() != '/') {
    return absl::InvalidArgumentError(
        fmt::format("JSON pointer \"{}\" must start with '/', e.g. \"/{}\"", pointer, pointer));
  }
  std::vector<std::string> tokens;
  for (std::size_t i = 0; i < pointer.size(); ++i) {
    const char c = pointer[i];
    if (c == '/') {
      tokens.emplace_back();
    } else if (c != '~') {
      tokens.back().push_back(c);
    } else if (i + 1 < pointer.size() && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
      tokens.back().push_back(pointer[++i] == '0' ? '~' : '/');
    } else {
      return absl::InvalidArgumentError(fmt::format(
          "JSON pointer \"{}\" has '~' at position {} not followed by 0 or 1; write ~0 for '~' "
          "and ~1 for '/'",
          pointer, i));
    }
  }
  return tokens;
}

const PointerTree* PointerTree::Find(std::string_view token) const {
  auto it = children.find(token);
  return it == children.end() ? nullptr : &it->second;
}

void AddExcluded(PointerTree& tree, const std::vector<std::string>& tokens) {
  PointerTree* node = &tree;
  for (const std::string& token : tokens) node = &node->children[token];
  node->excluded = true;
}

}  // namespace idem::core

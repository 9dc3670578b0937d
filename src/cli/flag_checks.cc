#include "cli/flag_checks.h"

#include <charconv>
#include <cstdint>
#include <string>

namespace idem::cli {

CLI::Validator Uint64Flag() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (!text.empty() && error == std::errc() && rest == text.data() + text.size()) return "";
        return "must be a whole number from 0 to 18446744073709551615, got '" + text + "'";
      },
      "UINT64", "Uint64");
}

}  // namespace idem::cli

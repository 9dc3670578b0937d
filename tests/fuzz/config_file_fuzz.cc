// Fuzz target: any text as `idem serve`'s TOML config file (ParseConfigText), then the meaning
// checks (ValidateConfig) of whatever parsed. Neither may crash, hang or throw; an error must
// name the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gateway/config_file.h"
#include "gateway/gateway_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<idem::gateway::GatewayConfig> config =
      idem::gateway::ParseConfigText(text, "fuzz.toml", {});
  if (!config.ok()) {
    if (!absl::IsInvalidArgument(config.status())) std::abort();
    return 0;
  }
  (void)idem::gateway::ValidateConfig(*config);
  return 0;
}

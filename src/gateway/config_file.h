// Internal: the TOML config file of `idem serve` (--config FILE; docs/gateway.md "Config file").
// It carries the command line's settings plus [[route]] tables.
//
// Thread-safety: pure functions (they read the file given).
#ifndef IDEM_GATEWAY_CONFIG_FILE_H_
#define IDEM_GATEWAY_CONFIG_FILE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "gateway/gateway_config.h"

namespace idem::gateway {

// Returns `base` with every setting the TOML text `text` names replaced by the file's value.
// `name` is the file name used in messages. Errors: InvalidArgument "NAME:LINE:COLUMN: what is
// wrong" for a TOML syntax error, an unknown key, a value of the wrong type or form (a duration,
// size, enum word or status that does not parse). Routes are checked for meaning later, by
// ValidateConfig.
absl::StatusOr<GatewayConfig> ParseConfigText(std::string_view text, std::string_view name,
                                              GatewayConfig base);

// As ParseConfigText on the file's contents. Errors: also NotFound / PermissionDenied when the
// file cannot be read.
absl::StatusOr<GatewayConfig> LoadConfigFile(const std::string& path, GatewayConfig base);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_CONFIG_FILE_H_

#include "gateway/config_file.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "idem/retry/duration.h"

namespace idem::gateway {
namespace {

// Reads one file's values; every error names the file and the node's line and column.
class Reader {
 public:
  explicit Reader(std::string_view name) : name_(name) {}

  absl::Status Error(const toml::source_region& where, std::string_view what) const {
    const toml::source_position at = where.begin;
    return absl::InvalidArgumentError(fmt::format("{}:{}:{}: {}", name_, at.line, at.column, what));
  }
  absl::Status Error(const toml::node& node, std::string_view what) const {
    return Error(node.source(), what);
  }

  absl::Status String(const toml::node& node, std::string_view key, std::string& out) const {
    std::optional<std::string> v = node.value<std::string>();
    if (!v.has_value()) return Error(node, fmt::format("{} must be a string", key));
    out = std::move(*v);
    return absl::OkStatus();
  }

  absl::Status Bool(const toml::node& node, std::string_view key, bool& out) const {
    if (!node.is_boolean()) return Error(node, fmt::format("{} must be true or false", key));
    out = *node.value<bool>();
    return absl::OkStatus();
  }

  absl::Status Int(const toml::node& node, std::string_view key, int& out) const {
    // Only an integer node is read as one: toml++ converting a float such as 2e41 to an integer
    // is undefined behaviour (found by fuzz_config_file).
    const toml::value<int64_t>* v = node.as_integer();
    if (v == nullptr || v->get() < 0 || v->get() > 1'000'000)
      return Error(node, fmt::format("{} must be a whole number from 0 to 1000000", key));
    out = static_cast<int>(v->get());
    return absl::OkStatus();
  }

  absl::Status Duration(const toml::node& node, std::string_view key, Millis& out) const {
    std::string text;
    if (absl::Status s = String(node, key, text); !s.ok()) return s;
    absl::StatusOr<Millis> d = retry::ParseDuration(text);
    if (!d.ok()) return Error(node, fmt::format("{}: {}", key, std::string(d.status().message())));
    out = *d;
    return absl::OkStatus();
  }

  // A number from 0 to 1, written as a float (0.25) or an integer (0, 1).
  absl::Status Fraction(const toml::node& node, std::string_view key, double& out) const {
    std::optional<double> v;
    if (const toml::value<double>* f = node.as_floating_point(); f != nullptr)
      v = f->get();
    else if (const toml::value<int64_t>* i = node.as_integer(); i != nullptr)
      v = static_cast<double>(i->get());
    if (!v.has_value() || !(*v >= 0 && *v <= 1))
      return Error(node,
                   fmt::format("{} must be a number from 0 to 1 (0.1: one request in ten)", key));
    out = *v;
    return absl::OkStatus();
  }

  absl::Status Size(const toml::node& node, std::string_view key, int64_t& out) const {
    std::string text;
    if (node.is_integer())
      text = std::to_string(*node.value<int64_t>());
    else if (absl::Status s = String(node, key, text); !s.ok())
      return s;
    absl::StatusOr<int64_t> size = ParseByteSize(text);
    if (!size.ok())
      return Error(node, fmt::format("{}: {}", key, std::string(size.status().message())));
    out = *size;
    return absl::OkStatus();
  }

  absl::Status Strings(const toml::node& node, std::string_view key,
                       std::vector<std::string>& out) const {
    const toml::array* array = node.as_array();
    if (array == nullptr) return Error(node, fmt::format("{} must be an array of strings", key));
    out.clear();
    for (const toml::node& item : *array) {
      std::string s;
      if (absl::Status st = String(item, key, s); !st.ok()) return st;
      out.push_back(std::move(s));
    }
    return absl::OkStatus();
  }

  absl::Status Statuses(const toml::node& node, std::string_view key, std::vector<int>& out) const {
    const toml::array* array = node.as_array();
    if (array == nullptr) return Error(node, fmt::format("{} must be an array of statuses", key));
    out.clear();
    for (const toml::node& item : *array) {
      const toml::value<int64_t>* v = item.as_integer();  // never converted from a float
      if (v == nullptr || v->get() < 100 || v->get() > 599)
        return Error(item,
                     fmt::format("{}: each entry must be an HTTP status from 100 to 599", key));
      out.push_back(static_cast<int>(v->get()));
    }
    return absl::OkStatus();
  }

  absl::Status Route(const toml::table& table, gateway::Route& route) const;
  absl::Status Top(const toml::table& table, GatewayConfig& config) const;

 private:
  std::string name_;
};

absl::Status Reader::Route(const toml::table& table, gateway::Route& route) const {
  for (const auto& [k, node] : table) {
    const std::string_view key = k.str();
    absl::Status s;
    std::string word;
    if (key == "methods")
      s = Strings(node, key, route.methods);
    else if (key == "path_prefix")
      s = String(node, key, route.path_prefix);
    else if (key == "key" && (s = String(node, key, word)).ok()) {
      if (word != "required" && word != "optional")
        return Error(node, "key must be \"required\" or \"optional\"");
      route.key_required = word == "required";
    } else if (key == "key_header")
      s = String(node, key, route.key_header);
    else if (key == "key_pointer" && (s = String(node, key, route.key_pointer)).ok())
      route.key_source = KeySource::kJsonPointer;
    else if (key == "in_flight" && (s = String(node, key, word)).ok()) {
      if (word != "conflict" && word != "wait")
        return Error(node, "in_flight must be \"conflict\" (409) or \"wait\"");
      route.in_flight = word == "wait" ? InFlightPolicy::kWait : InFlightPolicy::kConflict;
    } else if (key == "wait_max")
      s = Duration(node, key, route.wait_max);
    else if (key == "replay_headers")
      s = Strings(node, key, route.replay_headers);
    else if (key == "recover_credentials")
      s = Strings(node, key, route.recover_credentials);
    else if (key == "final_statuses")
      s = Statuses(node, key, route.final_statuses);
    else if (key == "transient_statuses")
      s = Statuses(node, key, route.transient_statuses);
    else if (key == "recover" && (s = String(node, key, word)).ok()) {
      if (word != "off" && word != "resend" && word != "status")
        return Error(node, "recover must be \"off\", \"resend\" or \"status\"");
      route.recover = word == "resend"   ? RecoverMode::kResend
                      : word == "status" ? RecoverMode::kStatus
                                         : RecoverMode::kOff;
    } else if (key == "status_url")
      s = String(node, key, route.status_url);
    else if (key == "recovered_status")
      s = Int(node, key, route.recovered_status);
    else if (key == "lose_answer_fraction")
      s = Fraction(node, key, route.lose_answer_fraction);
    else if (key == "delay_answer_fraction")
      s = Fraction(node, key, route.delay_answer_fraction);
    else if (key == "delay_answer")
      s = Duration(node, key, route.delay_answer);
    else if (key == "fence_header")
      s = String(node, key, route.fence_header);
    else if (key != "key" && key != "key_pointer" && key != "in_flight" && key != "recover")
      return Error(k.source(),
                   fmt::format("unknown route setting '{}'; see idem-serve.toml(5)", key));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Reader::Top(const toml::table& table, GatewayConfig& config) const {
  for (const auto& [k, node] : table) {
    const std::string_view key = k.str();
    absl::Status s;
    if (key == "listen")
      s = String(node, key, config.listen);
    else if (key == "upstream")
      s = String(node, key, config.upstream);
    else if (key == "store")
      s = String(node, key, config.store);
    else if (key == "admin")
      s = String(node, key, config.admin);
    else if (key == "lease")
      s = Duration(node, key, config.lease);
    else if (key == "cacert")
      s = String(node, key, config.cacert);
    else if (key == "upstream_timeout")
      s = Duration(node, key, config.upstream_timeout);
    else if (key == "retention")
      s = Duration(node, key, config.retention);
    else if (key == "max_body")
      s = Size(node, key, config.max_body);
    else if (key == "cache_bytes")
      s = Size(node, key, config.cache_bytes);
    else if (key == "require_key")
      s = Bool(node, key, config.require_key);
    else if (key == "log_format" && (s = String(node, key, config.log_format)).ok()) {
      if (config.log_format != "text" && config.log_format != "json")
        return Error(node, "log_format must be \"text\" or \"json\"");
    } else if (key == "log_level" && (s = String(node, key, config.log_level)).ok()) {
      static constexpr std::string_view kLevels[] = {"trace", "debug", "info",     "warning",
                                                     "warn",  "error", "critical", "off"};
      if (std::find(std::begin(kLevels), std::end(kLevels), config.log_level) == std::end(kLevels))
        return Error(node,
                     "log_level must be trace, debug, info, warning (or warn), error, critical "
                     "or off");
    } else if (key == "unmatched") {
      std::string word;
      if ((s = String(node, key, word)).ok()) {
        if (word != "guard" && word != "pass")
          return Error(node,
                       "unmatched must be \"guard\" (paths no route covers are guarded as "
                       "without routes, the default) or \"pass\" (they pass through)");
        config.unmatched = word == "pass" ? Unmatched::kPass : Unmatched::kGuard;
      }
    } else if (key == "tenant_header")
      s = String(node, key, config.tenant_header);
    else if (key == "io_threads")
      s = Int(node, key, config.io_threads);
    else if (key == "store_threads")
      s = Int(node, key, config.store_threads);
    else if (key == "store_writers")
      s = Int(node, key, config.store_writers);
    else if (key == "max_connections")
      s = Int(node, key, config.max_connections);
    else if (key == "max_requests_per_connection")
      s = Int(node, key, config.max_requests_per_connection);
    else if (key == "header_timeout")
      s = Duration(node, key, config.header_timeout);
    else if (key == "body_timeout")
      s = Duration(node, key, config.body_timeout);
    else if (key == "drain_timeout")
      s = Duration(node, key, config.drain_timeout);
    else if (key == "record_wait")
      s = Duration(node, key, config.record_wait);
    else if (key == "max_pending_outcomes")
      s = Int(node, key, config.max_pending_outcomes);
    else if (key == "max_pending_bytes")
      s = Size(node, key, config.max_pending_bytes);
    else if (key == "recover_interval")
      s = Duration(node, key, config.recover_interval);
    else if (key == "recover_attempts")
      s = Int(node, key, config.recover_attempts);
    else if (key == "route") {
      const toml::array* routes = node.as_array();
      if (routes == nullptr || !routes->is_array_of_tables())
        return Error(node, "route must be an array of tables: write [[route]]");
      config.routes.clear();
      for (const toml::node& r : *routes) {
        config.routes.emplace_back();
        if (absl::Status rs = Route(*r.as_table(), config.routes.back()); !rs.ok()) return rs;
      }
    } else if (key != "log_format" && key != "log_level") {
      return Error(k.source(), fmt::format("unknown setting '{}'; see idem-serve.toml(5)", key));
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GatewayConfig> ParseConfigText(std::string_view text, std::string_view name,
                                              GatewayConfig base) {
  toml::table table;
  try {
    table = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    const toml::source_position at = e.source().begin;
    return absl::InvalidArgumentError(
        fmt::format("{}:{}:{}: {}", name, at.line, at.column, e.description()));
  }
  const Reader reader(name);
  if (absl::Status s = reader.Top(table, base); !s.ok()) return s;
  // A route's settings that only make sense together: named at the route's [[route]] line.
  if (const toml::array* routes = table["route"].as_array(); routes != nullptr) {
    for (size_t i = 0; i < base.routes.size() && i < routes->size(); ++i) {
      absl::Status s = ValidateRoute(base.routes[i], base.lease, i);
      if (!s.ok()) return reader.Error((*routes)[i], std::string(s.message()));
    }
  }
  return base;
}

absl::StatusOr<GatewayConfig> LoadConfigFile(const std::string& path, GatewayConfig base) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string why = fmt::format("cannot read config file {}: {}", path, std::strerror(err));
    return err == EACCES ? absl::PermissionDeniedError(why) : absl::NotFoundError(why);
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseConfigText(text.str(), path, std::move(base));
}

}  // namespace idem::gateway

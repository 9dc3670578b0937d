#include "check/effect_counter.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#pragma GCC diagnostic pop

#include "idem/version.h"

namespace idem::check {
namespace {

namespace json = boost::json;

std::string Shown(std::string_view text) {
  constexpr size_t kMax = 80;
  std::string out(text.substr(0, kMax));
  if (text.size() > kMax) out += "...";
  return out;
}

absl::StatusOr<int64_t> CountOf(const json::value& v, std::string_view where) {
  if (v.is_int64() && v.get_int64() >= 0) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(v.get_uint64());
  }
  if (v.is_double()) {
    const double d = v.get_double();
    if (d >= 0 && d < 9.0e18 && std::floor(d) == d) return static_cast<int64_t>(d);
  }
  return absl::InvalidArgumentError(fmt::format(
      "{} is {}, not a whole number of effects (0 or more)", where, Shown(json::serialize(v))));
}

}  // namespace

absl::StatusOr<int64_t> ParseCount(std::string_view body, std::string_view pointer) {
  json::error_code ec;
  const json::value doc = json::parse(body, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        fmt::format("the answer is not {} ('{}')",
                    pointer.empty() ? "an integer or a JSON number" : "JSON", Shown(body)));
  }
  if (pointer.empty()) {
    absl::StatusOr<int64_t> count = CountOf(doc, "the answer");
    if (count.ok() || !(doc.is_object() || doc.is_array())) return count;
    return absl::InvalidArgumentError(
        fmt::format("{}; give --count-pointer the place of the count in it",
                    std::string(count.status().message())));
  }
  const json::value* at = doc.find_pointer(pointer, ec);
  if (ec || at == nullptr) {
    return absl::InvalidArgumentError(fmt::format(
        "the answer has nothing at {} ('{}'); give --count-pointer the place of the count", pointer,
        Shown(body)));
  }
  return CountOf(*at, fmt::format("the value at {}", pointer));
}

absl::StatusOr<int64_t> ReadCount(Prober& prober, const CountSource& source) {
  http::Request req{boost::beast::http::verb::get, source.parsed.target, 11};
  req.set(boost::beast::http::field::user_agent, "idem/" IDEM_VERSION);
  req.set(boost::beast::http::field::accept, "application/json, text/plain");
  const Answer a = prober.Send(source.parsed, std::move(req));
  if (a.status == 0) {
    return absl::UnavailableError(fmt::format("GET {} got no answer: {}", source.url, a.error));
  }
  if (a.status / 100 != 2) {
    return absl::UnavailableError(fmt::format("GET {} answered {}, not 2xx", source.url, a.status));
  }
  absl::StatusOr<int64_t> count = ParseCount(a.body, source.pointer);
  if (!count.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("GET {}: {}", source.url, std::string(count.status().message())));
  }
  return count;
}

}  // namespace idem::check

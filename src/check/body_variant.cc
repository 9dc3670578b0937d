#include "check/body_variant.h"

#include <fmt/format.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#pragma GCC diagnostic pop

namespace idem::check {
namespace {

namespace json = boost::json;

json::value Changed(const json::value& v) {
  switch (v.kind()) {
    case json::kind::int64:
      return v.get_int64() == INT64_MAX ? json::value(v.get_int64() - 1)
                                        : json::value(v.get_int64() + 1);
    case json::kind::uint64:
      return json::value(v.get_uint64() - 1);  // a uint64 is above INT64_MAX: never 0
    case json::kind::double_: {
      const double d = v.get_double();
      return json::value(d + 1 != d ? d + 1 : -d);  // 1e300 + 1 is 1e300
    }
    case json::kind::string:
      return json::value(std::string(v.get_string()) + "-other");
    case json::kind::bool_:
      return json::value(!v.get_bool());
    default:
      return json::value("idem-check");
  }
}

}  // namespace

BodyVariant OtherBody(std::string_view body) {
  json::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec || !doc.is_object()) return {std::string(body) + "x", "one byte appended"};
  json::object& object = doc.as_object();
  if (object.empty()) {
    object["idem_check"] = 1;
    return {json::serialize(doc), "field \"idem_check\" added"};
  }
  json::key_value_pair& first = *object.begin();
  const json::value before = first.value();
  first.value() = Changed(before);
  return {json::serialize(doc),
          fmt::format("field \"{}\" changed ({} -> {})", std::string_view(first.key()),
                      json::serialize(before), json::serialize(first.value()))};
}

}  // namespace idem::check

#include "outbox/outbox_headers.h"

#include <fmt/format.h>

#include <boost/json.hpp>

namespace idem::outbox {

std::string EncodeHeaders(const std::vector<Header>& headers) {
  boost::json::array array;
  for (const Header& header : headers) {
    array.push_back(
        boost::json::array{boost::json::string(header.name), boost::json::string(header.value)});
  }
  return boost::json::serialize(array);
}

absl::StatusOr<std::vector<Header>> DecodeHeaders(std::string_view text) {
  boost::system::error_code error;
  const boost::json::value value = boost::json::parse(text, error);
  if (error || !value.is_array()) {
    return absl::DataLossError(
        fmt::format("stored outbox headers are not a JSON array: {}", text.substr(0, 80)));
  }
  std::vector<Header> headers;
  for (const boost::json::value& pair : value.get_array()) {
    const boost::json::array* items = pair.if_array();
    if (items == nullptr || items->size() != 2 || !(*items)[0].is_string() ||
        !(*items)[1].is_string()) {
      return absl::DataLossError(
          fmt::format("stored outbox headers hold an entry that is not a [name, value] pair: {}",
                      boost::json::serialize(pair).substr(0, 80)));
    }
    headers.push_back(
        {std::string((*items)[0].get_string()), std::string((*items)[1].get_string())});
  }
  return headers;
}

}  // namespace idem::outbox

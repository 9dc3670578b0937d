#include "gateway/trailer_filter.h"

#include <algorithm>
#include <iterator>

namespace idem::gateway {

void TrailerFilter::operator()(std::uint64_t size, beast::string_view, beast::error_code&) {
  if (size != 0 || fields_ == nullptr) return;
  last_chunk_ = true;
  head_.clear();
  for (const auto& field : *fields_) head_.push_back(&field);
}

// The parser keeps a field next to an earlier one of the same name, so the trailer's fields are
// told apart by identity, not by position.
void TrailerFilter::Drop() {
  if (!last_chunk_ ||
      static_cast<size_t>(std::distance(fields_->begin(), fields_->end())) == head_.size())
    return;
  for (auto it = fields_->begin(); it != fields_->end();) {
    if (std::find(head_.begin(), head_.end(), &*it) == head_.end()) {
      it = fields_->erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace idem::gateway

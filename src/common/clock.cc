#include "idem/clock.h"

namespace idem {
namespace {

class WallClock final : public Clock {
 public:
  int64_t NowMillis() const override {
    return std::chrono::duration_cast<Millis>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

Clock& SystemClock() {
  static WallClock clock;
  return clock;
}

}  // namespace idem

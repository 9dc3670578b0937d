#include "idem/record.h"

namespace idem {

std::string_view KeyStateName(KeyState state) {
  switch (state) {
    case KeyState::kInProgress:
      return "in_progress";
    case KeyState::kCompleted:
      return "completed";
    case KeyState::kFailedFinal:
      return "failed_final";
  }
  // Only a value cast from a corrupted integer gets here; name it rather than crash a logger.
  return "unknown";
}

}  // namespace idem

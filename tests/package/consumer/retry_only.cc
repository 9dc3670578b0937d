// Uses only the retry toolkit (idem::retry / idem-retry.pc): no store, no SQLite, no libpq.
#include <cstdio>

#include "idem/retry/backoff.h"

int main() {
  const idem::retry::BackoffOptions options{
      .jitter = idem::retry::Jitter::kNone, .base = idem::Millis(100), .cap = idem::Millis(1000)};
  const bool ok = idem::retry::CappedExponential(options, 0) == idem::Millis(100) &&
                  idem::retry::CappedExponential(options, 3) == idem::Millis(800) &&
                  idem::retry::CappedExponential(options, 10) == idem::Millis(1000);
  std::printf("%s capped exponential backoff\n", ok ? "ok  " : "FAIL");
  return ok ? 0 : 1;
}

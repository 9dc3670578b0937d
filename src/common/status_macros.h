// Internal helpers for propagating absl::Status, the one error type of libidem.
#ifndef IDEM_COMMON_STATUS_MACROS_H_
#define IDEM_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define IDEM_STATUS_CONCAT_INNER_(a, b) a##b
#define IDEM_STATUS_CONCAT_(a, b) IDEM_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define IDEM_RETURN_IF_ERROR(expr)                   \
  do {                                               \
    ::absl::Status idem_status_ = (expr);            \
    if (!idem_status_.ok()) return idem_status_;     \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, else moves the value
// into `lhs` (a declaration such as `auto x` or an existing variable).
#define IDEM_ASSIGN_OR_RETURN(lhs, rexpr) \
  IDEM_ASSIGN_OR_RETURN_IMPL_(IDEM_STATUS_CONCAT_(idem_statusor_, __LINE__), lhs, rexpr)

#define IDEM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // IDEM_COMMON_STATUS_MACROS_H_

// The two error-propagation macros used everywhere in orca.
//
//   ORCA_RETURN_IF_ERROR(expr);          // expr yields absl::Status
//   ORCA_ASSIGN_OR_RETURN(lhs, expr);    // expr yields absl::StatusOr<T>
//
// Both return the failing Status unchanged from the enclosing function.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ORCA_STATUS_CONCAT_INNER_(a, b) a##b
#define ORCA_STATUS_CONCAT_(a, b) ORCA_STATUS_CONCAT_INNER_(a, b)

#define ORCA_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::absl::Status orca_status_ = (expr);        \
    if (!orca_status_.ok()) return orca_status_; \
  } while (0)

#define ORCA_ASSIGN_OR_RETURN(lhs, expr) \
  ORCA_ASSIGN_OR_RETURN_IMPL_(ORCA_STATUS_CONCAT_(orca_statusor_, __LINE__), lhs, expr)

#define ORCA_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)   \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

// Kubernetes resource quantities ("500m", "16Gi", "1e3", 4) in the canonical form the
// API server stores and returns (k8s.io/apimachinery resource.Quantity.String()).
//
// The controller compares the objects it renders with the live ones field by field
// (ContainsAll); the API server returns every quantity of a Pod template in canonical
// string form ("1", "1Gi", "500m"), so rendered quantities must already be in that form
// or every reconcile re-applies. Pure functions; thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace orca::controller {

// Returns the canonical string of the quantity `text`, as kube-apiserver would store it:
// "1024Mi" -> "1Gi", "0.5" -> "500m", "1000" -> "1k", "1.5Gi" -> "1536Mi"; values finer
// than 1n round up (away from zero) to the next nano unit, as ParseQuantity does.
// Returns InvalidArgument when `text` is not a quantity ("1.1.M", " 1", "1i") or does not
// fit the 128-bit arithmetic used here (beyond about 10^29).
absl::StatusOr<std::string> CanonicalQuantity(const std::string& text);

// Returns the canonical string of a JSON quantity: an integer or a quantity string.
// Returns InvalidArgument for other JSON types and for strings CanonicalQuantity rejects.
absl::StatusOr<std::string> CanonicalQuantity(const nlohmann::json& value);

}  // namespace orca::controller

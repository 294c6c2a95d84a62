// Decoding of the API server's watch stream (GET ...?watch=true): newline-delimited
// JSON events, {"type": "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR",
// "object": {...}}. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/client/kube_client.h"

namespace orca::controller {

// Decodes one line of a watch stream. Returns:
//   - the event, whose object is a JSON object with an object `metadata` in which
//     name, namespace and resourceVersion are strings and labels an object of strings
//     where present (what the informers read, so they never meet another shape);
//   - nullopt for a blank line or an event type the controller does not know (skipped);
//   - for an ERROR event, the error its metav1.Status code means (StatusFromHttp; 410
//     Gone is OutOfRange), Internal when the code is missing, not an HTTP error code or a
//     success: never OK;
//   - Internal "<what>: malformed watch event: <why>" for any other line.
absl::StatusOr<std::optional<WatchEvent>> DecodeWatchEventLine(absl::string_view line,
                                                               const std::string& what);

}  // namespace orca::controller

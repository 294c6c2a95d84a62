#include "controller/client/watch_event.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "controller/client/kube_errors.h"

namespace orca::controller {
namespace {

absl::Status Malformed(const std::string& what, absl::string_view why) {
  return absl::InternalError(absl::StrCat(what, ": malformed watch event: ", why));
}

// Returns the member `key` of object `j`, or nullptr.
const Json* Member(const Json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// Returns the error an ERROR event's metav1.Status carries.
absl::Status ErrorEventStatus(const Json* status, const std::string& what) {
  const Json* code = status != nullptr && status->is_object() ? Member(*status, "code") : nullptr;
  if (code == nullptr || !code->is_number_integer() || code->get<int64_t>() < 300 ||
      code->get<int64_t>() > 599) {
    return absl::InternalError(absl::StrCat(what,
                                            ": watch ended with an ERROR event without an "
                                            "HTTP error code: ",
                                            status != nullptr ? status->dump() : "null"));
  }
  return StatusFromHttp(static_cast<int>(code->get<int64_t>()), status->dump(), what);
}

// Checks that `object` has the shape the informers read: an object with an object
// `metadata` whose name, namespace and resourceVersion are strings and whose labels are
// an object of strings (where present).
absl::Status CheckObjectShape(const Json* object, const std::string& what) {
  if (object == nullptr || !object->is_object())
    return Malformed(what, "\"object\" is not an object");
  const Json* meta = Member(*object, "metadata");
  if (meta == nullptr || !meta->is_object()) return Malformed(what, "the object has no metadata");
  for (const char* field : {"name", "namespace", "resourceVersion"}) {
    const Json* value = Member(*meta, field);
    if (value != nullptr && !value->is_string()) {
      return Malformed(what, absl::StrCat("metadata.", field, " is not a string"));
    }
  }
  if (const Json* labels = Member(*meta, "labels"); labels != nullptr) {
    if (!labels->is_object()) return Malformed(what, "metadata.labels is not an object");
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string())
        return Malformed(what, absl::StrCat("label ", key, " is not a string"));
    }
  }
  return absl::OkStatus();
}

std::optional<WatchEventType> EventType(const std::string& type) {
  if (type == "ADDED") return WatchEventType::kAdded;
  if (type == "MODIFIED") return WatchEventType::kModified;
  if (type == "DELETED") return WatchEventType::kDeleted;
  if (type == "BOOKMARK") return WatchEventType::kBookmark;
  return std::nullopt;
}

}  // namespace

absl::StatusOr<std::optional<WatchEvent>> DecodeWatchEventLine(absl::string_view line,
                                                               const std::string& what) {
  if (absl::StripAsciiWhitespace(line).empty()) return std::nullopt;
  Json event = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (event.is_discarded() || !event.is_object()) return Malformed(what, "not a JSON object");
  const Json* type = Member(event, "type");
  if (type == nullptr || !type->is_string()) return Malformed(what, "no string \"type\"");
  const Json* object = Member(event, "object");
  if (*type == "ERROR") return ErrorEventStatus(object, what);
  std::optional<WatchEventType> known = EventType(type->get<std::string>());
  if (!known) return std::nullopt;  // a type added after this controller was written
  if (absl::Status shape = CheckObjectShape(object, what); !shape.ok()) return shape;
  return WatchEvent{*known, std::move(event["object"])};
}

}  // namespace orca::controller

// Fuzzes the watch stream decoder (controller/client/watch_event.h) that RestClient::Watch
// runs on every line the API server streams, and what the controller's informers then
// read of each event: metadata.namespace, .name and .resourceVersion, and the labels
// (controller/reconcile/informer.cc, manager.cc).
//
// The input is a stream: it is split into lines as RestClient::Watch splits it. The
// contract checked besides "no crash, no hang": an ERROR event never decodes to OK, and
// every event delivered can be read by the informers without an exception.

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "controller/client/watch_event.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using orca::controller::Json;

// Reads the event as the informers do (const access, value() with defaults).
void ReadAsInformersDo(const orca::controller::WatchEvent& event) {
  const Json& object = event.object;
  if (!object.is_object() || !object.contains("metadata")) __builtin_trap();
  const Json& meta = object["metadata"];
  std::string key = meta.value("namespace", "") + "/" + meta.value("name", "");
  std::string version = meta.value("resourceVersion", "");
  if (meta.contains("labels") && meta["labels"].is_object()) {
    for (const auto& [name, value] : meta["labels"].items()) key += value.get<std::string>();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view stream(reinterpret_cast<const char*>(data), size);
  while (!stream.empty()) {
    const size_t end = std::min(stream.find('\n'), stream.size());
    const absl::string_view line = stream.substr(0, end);
    stream.remove_prefix(std::min(end + 1, stream.size()));
    auto event = orca::controller::DecodeWatchEventLine(line, "watch pods");
    if (!event.ok()) return 0;  // the stream ends with the error, as in RestClient::Watch
    if (event->has_value()) ReadAsInformersDo(**event);
  }
  return 0;
}

// Pieces of the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): name validation,
// escaping and number formatting. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "engine/metrics/labels.h"

namespace orca::metrics::internal {

// Returns true when `name` matches [a-zA-Z_:][a-zA-Z0-9_:]*.
bool IsValidMetricName(absl::string_view name);
// Returns true when `name` matches [a-zA-Z_][a-zA-Z0-9_]* and does not start with
// "__" (reserved for Prometheus' internal use).
bool IsValidLabelName(absl::string_view name);
// Returns true when `s` is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF); Prometheus rejects a scrape with any other label value.
bool IsValidUtf8(absl::string_view s);

// Returns the TYPE-line spelling of `type` ("counter", "gauge", "histogram").
absl::string_view MetricTypeName(MetricType type);

// Returns `v` in the shortest form that parses back to the same double, with the
// special values spelled "+Inf", "-Inf" and "NaN".
std::string FormatDouble(double v);

// Appends `help` with backslash and newline escaped (the HELP-line rules).
void AppendEscapedHelp(absl::string_view help, std::string* out);
// Appends `value` with backslash, double quote and newline escaped (label values).
void AppendEscapedLabelValue(absl::string_view value, std::string* out);

// Appends one sample line: `name{k="v",...} value\n`. When `le` is non-null, a final
// label le="*le" follows the others (histogram buckets). Braces are left out when
// there are no labels.
void AppendSample(absl::string_view name, const Labels& labels, const std::string* le,
                  absl::string_view value, std::string* out);

}  // namespace orca::metrics::internal

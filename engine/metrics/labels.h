// Labels: the label set of one time series, name -> value. A std::map so that a
// series' labels are kept (and exposed) sorted by name, as prometheus-cpp does.
#pragma once

#include <map>
#include <string>

namespace orca::metrics {

using Labels = std::map<std::string, std::string>;

// The kinds of metric orca exposes (the TYPE line of the text format).
enum class MetricType { kCounter, kGauge, kHistogram };

}  // namespace orca::metrics

// orca's metrics library: Prometheus' data model after prometheus-cpp (a Registry of
// Families built with builders; Counter, Gauge and Histogram series keyed by
// labels) rendered in the text exposition format 0.0.4. prometheus-cpp itself is not
// packaged for our distribution; this is the small subset orca needs.
//
//   metrics::Registry registry;
//   auto& latency = metrics::BuildHistogram()
//                       .Name("orca_time_to_first_token_seconds")
//                       .Help("Time to first token.")
//                       .Labels({{"model_name", model}})
//                       .Register(registry);
//   metrics::Histogram& ttft = latency.Add({}, metrics::ExponentialBuckets(0.001, 2, 16));
//   ttft.Observe(0.042);                       // hot path: lock-free or one short lock
//   server.Get("/metrics", ...registry.Serialize(), metrics::kTextContentType...);
//
// Everything here is thread-safe (see each header). Naming mistakes are programming
// errors: Try* functions return absl::Status, the others assert in debug builds.
#pragma once

#include "engine/metrics/builder.h"    // IWYU pragma: export
#include "engine/metrics/counter.h"    // IWYU pragma: export
#include "engine/metrics/family.h"     // IWYU pragma: export
#include "engine/metrics/gauge.h"      // IWYU pragma: export
#include "engine/metrics/histogram.h"  // IWYU pragma: export
#include "engine/metrics/labels.h"     // IWYU pragma: export
#include "engine/metrics/registry.h"   // IWYU pragma: export

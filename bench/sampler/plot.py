#!/usr/bin/env python3
"""Plots orca-bench-sampler's Google Benchmark JSON: time per row of orca's sampler
next to the full-sort sampler, per knob set and vocabulary (log scale).

usage: plot.py RESULT.json OUT.png
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plot_util  # noqa: E402

KNOBS = ["greedy", "T 0.8", "top-p 0.9", "top-k 50", "min-p 0.05", "top-k 50 + top-p 0.9"]
IMPLS = ((-0.2, "BM_Sample", "orca"), (0.2, "BM_FullSort", "full sort"))


def draw(doc):
    times = {}  # (impl, knobs, vocab) -> microseconds per row
    for r in doc["benchmarks"]:
        impl, *args = r["name"].split("/")
        if impl not in ("BM_Sample", "BM_FullSort") or r.get("run_type") == "aggregate":
            continue
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[r["time_unit"]]
        times[(impl, int(args[0]), int(args[1]))] = r["real_time"] * scale
    return plot_util.bars_per_vocabulary(times, KNOBS, IMPLS, "µs per row", 0.4)


if __name__ == "__main__":
    plot_util.run(draw, __doc__)

#!/usr/bin/env python3
"""Plots orca-bench-sampler's Google Benchmark JSON: time per row of orca's sampler
next to the full-sort sampler, per knob set and vocabulary (log scale).

usage: plot.py RESULT.json OUT.png
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plot_util  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

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
    vocabs = sorted({v for _, _, v in times})
    fig, axes = plt.subplots(1, len(vocabs), figsize=(6 * len(vocabs), 4), squeeze=False)
    for ax, vocab in zip(axes[0], vocabs):
        xs = range(len(KNOBS))
        for offset, impl, label in IMPLS:
            ys = [times.get((impl, k, vocab), 0) for k in xs]
            ax.bar([x + offset for x in xs], ys, width=0.4, label=label)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(KNOBS, rotation=30, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel("µs per row")
        ax.set_title(f"vocabulary {vocab}")
        ax.legend()
    return fig


if __name__ == "__main__":
    plot_util.run(draw, __doc__)

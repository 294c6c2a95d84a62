#!/usr/bin/env python3
"""Plots what a sweep's normalized-latency figure (orca bench plot) hides: per curve and
seed, the inter-token latency's p99 (left out for a curve whose responses arrive whole,
as static batching holds them), the time to first token's median and the median
normalized latency against the throughput reached. One line style per result file
(e.g. one per seed), one colour per label.

usage: plot_latency_tails.py OUT.png RESULT.json...
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = (
    ("itl_ms", "p99", "inter-token latency p99 (ms)"),
    ("ttft_ms", "p50", "time to first token p50 (ms)"),
    ("normalized_latency_ms", "p50", "median normalized latency (ms/token)"),
)
STYLES = ("-o", "--s", ":^", "-.v")


def curves(doc):
    """{label: [(req/s, results)]} in sweep order."""
    out = {}
    for run in doc["runs"]:
        r = run["results"]
        out.setdefault(run["label"], []).append((r["request_throughput"], r))
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    docs = []
    for path in sys.argv[2:]:
        with open(path) as f:
            docs.append((path, json.load(f)))
    fig, axes = plt.subplots(1, len(PANELS), figsize=(6 * len(PANELS), 4.5))
    colours = {}
    for i, (path, doc) in enumerate(docs):
        seed = doc["runs"][0]["config"]["trace"].get("seed", i)
        for label, points in curves(doc).items():
            colour = colours.setdefault(label, f"C{len(colours)}")
            for ax, (key, q, title) in zip(axes, PANELS):
                xs = [x for x, r in points if key in r]
                ys = [r[key][q] for _, r in points if key in r]
                if key == "itl_ms" and max(ys, default=0) < 1:
                    continue  # responses held until the batch is done: no stream to time
                ax.plot(xs, ys, STYLES[i % len(STYLES)], color=colour,
                        label=f"{label} (seed {seed})")
                ax.set_xlabel("throughput (req/s)")
                ax.set_ylabel(title)
                ax.set_yscale("log")
                ax.grid(True, which="both", alpha=0.3)
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=110)


if __name__ == "__main__":
    main()

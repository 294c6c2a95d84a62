#!/usr/bin/env python3
"""Plots orca-bench-guided-mask's BM_ServedRequests from one or more builds: microseconds
of token masks per token of 32 requests, after a guide served 0, 32 or 320 requests, per
grammar (log scale), a bar per build.

usage: plot_served.py OUT.png LABEL=RESULT.json [LABEL=RESULT.json ...]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

GRAMMARS = ["nested outline", "json_object", "tree schema", "arithmetic", "story schema"]


def served(doc):
    """(grammar, requests served before) -> µs of masks per token."""
    out = {}
    for r in doc["benchmarks"]:
        impl, *args = r["name"].split("/")
        if impl != "BM_ServedRequests" or r.get("run_type") == "aggregate":
            continue
        out[(int(args[0]), int(args[2]))] = r["per_token_us"] * 1e6
    return out


def main():
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[2:]):
        sys.exit(__doc__)
    builds = []
    for arg in sys.argv[2:]:
        label, path = arg.split("=", 1)
        with open(path) as f:
            builds.append((label, served(json.load(f))))
    keys = sorted({k for _, b in builds for k in b})
    fig, ax = plt.subplots(figsize=(12, 4))
    width = 0.8 / len(builds)
    for i, (label, b) in enumerate(builds):
        xs = [j + (i - (len(builds) - 1) / 2) * width for j in range(len(keys))]
        ax.bar(xs, [b.get(k, 0) for k in keys], width=width, label=label)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([f"{GRAMMARS[g]}\nafter {n}" for g, n in keys], fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("µs of masks per token")
    ax.set_title("a guide serving 32 requests of 256 tokens, after it served 0 / 32 / 320")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=110)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Plots orca-bench-guided-mask's Google Benchmark JSON: microseconds per token mask of
a grammar, one walk of the vocabulary's trie against masks made from kept stack tops
(and a fresh guide's first request each way, per token), per grammar and vocabulary
(log scale).

usage: plot_masks.py RESULT.json OUT.png
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plot_util  # noqa: E402

GRAMMARS = ["nested outline", "json_object", "recursive schema", "arithmetic"]
IMPLS = ((-0.3, "BM_MaskByWalk", "one trie walk"),
         (-0.1, "BM_MaskFromTops", "kept tops"),
         (0.1, "BM_FirstRequestByWalk", "one trie walk, fresh guide (per token)"),
         (0.3, "BM_FirstRequest", "kept tops, fresh guide (per token)"))


def draw(doc):
    times = {}  # (impl, grammar, vocab) -> microseconds per mask
    for r in doc["benchmarks"]:
        impl, *args = r["name"].split("/")
        if r.get("run_type") == "aggregate" or len(args) < 2 or impl == "BM_ServedRequests":
            continue
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[r["time_unit"]]
        us = r["real_time"] * scale
        if impl.startswith("BM_FirstRequest"):
            us = r["per_token_us"] * 1e6
        times[(impl, int(args[0]), int(args[1]))] = us
    return plot_util.bars_per_vocabulary(times, GRAMMARS, IMPLS, "µs per mask", 0.2)


if __name__ == "__main__":
    plot_util.run(draw, __doc__)

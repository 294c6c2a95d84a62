#!/usr/bin/env python3
"""Plots orca-bench-plan-bytes' JSON: control-plane bytes per decode plan over the
decode iterations, whole plans against deltas (log scale).

usage: plot.py RESULT.json OUT.png
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plot_util  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402


def draw(doc):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for run in doc["runs"]:
        label = f'{run["running"]} seqs{", penalty" if run["penalty"] else ""}'
        xs = [s["decode_step"] for s in run["steps"]]
        line, = ax.plot(xs, [s["full_bytes"] for s in run["steps"]], label=f"whole, {label}")
        ax.plot(xs, [s["delta_bytes"] for s in run["steps"]], "--", color=line.get_color(),
                label=f"delta, {label}")
    ax.set_yscale("log")
    ax.set_xlabel(f'decode iteration (context {doc["prompt_tokens"]} + iteration)')
    ax.set_ylabel("bytes per plan")
    ax.legend(fontsize=7, ncol=2, loc="center right")
    return fig


if __name__ == "__main__":
    plot_util.run(draw, __doc__)

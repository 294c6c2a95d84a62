#!/usr/bin/python3
"""Each rank's computing share over the busy stretches of whole runs: one orca
per-iteration trace (--trace-file) per server, cut into 1-second windows; the windows in
which some rank computes more than half the time count (a server measured interleaved
with others idles between its points), and each track's mean and median share over them
are printed, written as JSON and drawn as bars, one group per trace.

usage: busy_shares.py OUT.png TRACE.json LABEL [TRACE.json LABEL ...] [--title TEXT]
  (OUT with .json: the numbers)

Computing is what plot_trace.py counts: every span but waits, less the time in recv,
send and all-reduce.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_trace import busy, load  # noqa: E402

WINDOW_US = 1_000_000
WAITING = {"recv", "send", "all-reduce"}


def shares(path):
    names, spans = load(path)
    per = {pid: [s for s in spans if s["pid"] == pid] for pid in names}
    t0 = min(s["ts"] for s in spans)
    t1 = max(s["ts"] + s["dur"] for s in spans)
    rows = {names[pid]: [] for pid in names}
    lo = t0
    while lo + WINDOW_US <= t1:
        hi = lo + WINDOW_US
        got = {}
        for pid, ss in per.items():
            mine = [s for s in ss if s["ts"] < hi and s["ts"] + s["dur"] > lo]
            computing = busy([s for s in mine if s["name"] != "wait"], lo, hi) - busy(
                [s for s in mine if s["name"] in WAITING], lo, hi)
            got[names[pid]] = max(0.0, computing) / WINDOW_US
        if max(v for k, v in got.items() if k.startswith("rank")) > 0.5:
            for k, v in got.items():
                rows[k].append(v)
        lo = hi
    return {k: {"mean": sum(v) / len(v), "median": sorted(v)[len(v) // 2], "windows": len(v)}
            for k, v in rows.items() if v}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("pairs", nargs="+", help="TRACE.json LABEL, repeated")
    ap.add_argument("--title", default="each rank's computing share over busy 1-s windows")
    a = ap.parse_args()
    if len(a.pairs) % 2:
        ap.error("give each trace a label")
    runs = {a.pairs[i + 1]: shares(a.pairs[i]) for i in range(0, len(a.pairs), 2)}
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump(runs, f, indent=1)
    ranks = sorted({k for r in runs.values() for k in r if k.startswith("rank")})
    fig, ax = plt.subplots(figsize=(7, 3.2))
    width = 0.8 / max(1, len(ranks))
    for i, track in enumerate(ranks):
        xs = [g + (i - (len(ranks) - 1) / 2) * width for g in range(len(runs))]
        vals = [100 * r.get(track, {"mean": 0})["mean"] for r in runs.values()]
        bars = ax.bar(xs, vals, width * 0.95, label=track)
        for b, v in zip(bars, vals):
            ax.text(b.get_x() + b.get_width() / 2, v + 1, f"{v:.0f}%", ha="center", fontsize=8)
    for label, r in runs.items():
        print(label + ": " + ", ".join(f"{k} {v['mean']:.0%} (median {v['median']:.0%})"
                                       for k, v in r.items()) +
              f" over {next(iter(r.values()))['windows']} windows")
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels(list(runs))
    ax.set_ylabel("computing, % of a window")
    ax.set_ylim(0, 110)
    ax.set_title(a.title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print("wrote", a.out)


if __name__ == "__main__":
    main()

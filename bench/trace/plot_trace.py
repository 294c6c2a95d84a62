#!/usr/bin/python3
"""Draws a window of an orca per-iteration trace (--trace-file) as one row per track,
and prints each track's busy share of the window.

usage: plot_trace.py TRACE.json OUT.png [--start-ms MS] [--window-ms MS]
  --start-ms   where the window starts, in ms after the first span (default: the middle
               of the trace minus half the window)
  --window-ms  how long the window is (default 100)

Per track it prints the share of the window spent computing (schedule, submit, update;
layers less their all-reduces, lm-head, sample) and communicating or waiting (wait,
recv, send, all-reduce): the union of those spans, clipped to the window.
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {
    "schedule": "#17becf", "submit": "#8172b3", "wait": "#dddddd", "update": "#bcbd22",
    "recv": "#c44e52", "layers": "#4c72b0", "all-reduce": "#dd8452", "send": "#937860",
    "lm-head": "#da8bc3", "sample": "#55a868",
}


def load(path):
    with open(path) as f:
        text = f.read().rstrip()
    if not text.endswith("]"):  # cut short: drop the last comma, close the array
        text = text.rstrip(",") + "]"
    events = json.loads(text)
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    return names, spans


def busy(spans, lo, hi):
    """Length of the union of [ts, ts + dur) clipped to [lo, hi)."""
    total, end = 0, lo
    for s in sorted(spans, key=lambda s: s["ts"]):
        a, b = max(s["ts"], end), min(s["ts"] + s["dur"], hi)
        if b > a:
            total += b - a
            end = b
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--start-ms", type=float)
    ap.add_argument("--window-ms", type=float, default=100)
    a = ap.parse_args()
    names, spans = load(a.trace)
    t0 = min(s["ts"] for s in spans)
    t1 = max(s["ts"] + s["dur"] for s in spans)
    width = a.window_ms * 1000
    lo = t0 + a.start_ms * 1000 if a.start_ms is not None else (t0 + t1) / 2 - width / 2
    hi = lo + width
    tracks = sorted(names)
    fig, ax = plt.subplots(figsize=(11, 0.55 * len(tracks) + 1.4))
    seen = set()
    for row, pid in enumerate(tracks):
        mine = [s for s in spans if s["pid"] == pid and s["ts"] < hi and s["ts"] + s["dur"] > lo]
        nested = {"all-reduce"}
        waiting = {"wait", "recv", "send", "all-reduce"}
        comm = busy([s for s in mine if s["name"] in waiting], lo, hi)
        share = max(0.0, busy([s for s in mine if s["name"] != "wait"], lo, hi) -
                    busy([s for s in mine if s["name"] in waiting - {"wait"}], lo, hi)) / width
        print(f"{names[pid]}: computing {share:.0%}, communicating or waiting "
              f"{comm / width:.0%} of the window")
        for s in mine:
            inner = s["name"] in nested
            h = 0.35 if inner else 0.7
            y = row - h / 2
            label = s["name"] if s["name"] not in seen else None
            seen.add(s["name"])
            ax.broken_barh([((s["ts"] - lo) / 1000, s["dur"] / 1000)], (y, h),
                           color=COLORS.get(s["name"], "#999999"), label=label,
                           edgecolor="black" if inner else None, linewidth=0.3)
        ax.text((hi - lo) / 1000 * 1.005, row, f"{share:.0%}", va="center", fontsize=8)
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels([names[p] for p in tracks])
    ax.invert_yaxis()
    ax.set_xlim(0, (hi - lo) / 1000)
    ax.set_xlabel("ms (the share of the window each track computes at the right)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=5, fontsize=8)
    ax.set_title(f"orca per-iteration trace, {a.window_ms:.0f} ms window")
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()

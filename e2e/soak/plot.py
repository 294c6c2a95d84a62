#!/usr/bin/env python3
"""Plots a soak run (e2e/soak/soak.mjs --out DIR): RSS of the scheduler and each worker
rank, request latency and time to first token (p50/p99 per second, 10 s rolling
median), and requests finished per second by outcome, with the injected faults marked.

    /usr/bin/python3 e2e/soak/plot.py DIR OUT.png

Needs matplotlib (Debian: python3-matplotlib)."""
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

FAULT_COLORS = {"kill": "tab:red", "stop_cont": "tab:orange", "stop_leave": "tab:purple", "stop_late": "tab:brown"}
OUTCOME_COLORS = {"ok": "tab:green", "retriable": "tab:orange", "rejected": "tab:blue", "aborted": "tab:gray",
                  "violation": "tab:red"}


def rolling_median(values, window=10):
    out = []
    for i in range(len(values)):
        xs = [v for v in values[max(0, i - window + 1):i + 1] if v is not None]
        out.append(statistics.median(xs) if xs else None)
    return out


def main(run_dir, png):
    with open(os.path.join(run_dir, "timeseries.json")) as f:
        rows = json.load(f)
    summary = {}
    if os.path.exists(os.path.join(run_dir, "summary.json")):
        with open(os.path.join(run_dir, "summary.json")) as f:
            summary = json.load(f)
    t = [r["t"] for r in rows]
    fig, (ax_rss, ax_lat, ax_req) = plt.subplots(3, 1, figsize=(10, 8.5), sharex=True)

    roles = sorted({k for r in rows if r["rss_mib"] for k in r["rss_mib"]}, key=lambda k: (k != "scheduler", k))
    for role in roles:
        ax_rss.plot(t, [(r["rss_mib"] or {}).get(role) for r in rows], label=role, linewidth=1)
    ax_rss.set_ylabel("RSS (MiB)")
    ax_rss.legend(loc="upper left", fontsize=8, ncol=len(roles))
    ax_rss.set_ylim(bottom=0)

    for key, label, style in (("latency_ms", "latency", "-"), ("ttft_ms", "TTFT", "--")):
        for p, width in (("p50", 1.2), ("p99", 0.8)):
            ys = rolling_median([r[key][p] for r in rows])
            ax_lat.plot(t, [y / 1000 if y is not None else None for y in ys], style, linewidth=width,
                        label=f"{label} {p}")
    ax_lat.set_ylabel("seconds (10 s rolling median)")
    ax_lat.set_yscale("log")
    ax_lat.legend(loc="upper left", fontsize=8, ncol=4)

    bottom = [0] * len(rows)
    for outcome, color in OUTCOME_COLORS.items():
        ys = [r["done"][outcome] for r in rows]
        if not any(ys):
            continue
        ax_req.bar(t, ys, bottom=bottom, width=1.0, color=color, label=outcome, linewidth=0)
        bottom = [b + y for b, y in zip(bottom, ys)]
    ax_req.set_ylabel("requests finished / s")
    ax_req.set_xlabel("seconds since start")
    ax_req.legend(loc="upper left", fontsize=8, ncol=5)

    seen = set()
    for r in rows:
        for fault in r["faults"]:
            kind = fault["kind"]
            for ax in (ax_rss, ax_lat, ax_req):
                ax.axvline(r["t"], color=FAULT_COLORS.get(kind, "black"), linewidth=0.6, alpha=0.6,
                           label=None)
            if kind not in seen:
                seen.add(kind)
                ax_rss.plot([], [], color=FAULT_COLORS.get(kind, "black"), linewidth=0.8, label=f"fault: {kind}")
    if seen:
        ax_rss.legend(loc="upper left", fontsize=8, ncol=4)

    req = summary.get("requests", {}).get("total", {})
    title = f"orca soak, TP=2 on stories260K: {summary.get('duration_s', len(rows))} s"
    if req:
        title += f", {sum(req.values())} requests ({req.get('violation', 0)} violations)"
    if summary.get("faults"):
        title += f", {len(summary['faults']['list'])} faults"
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(png, dpi=80)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py RUN_DIR OUT.png")
    main(sys.argv[1], sys.argv[2])

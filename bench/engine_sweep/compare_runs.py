#!/usr/bin/python3
"""Compares `orca bench engine` results taken in one session (interleaved runs of
several builds or options): median decode iteration and prefill per batch size, each
label's best of its runs, as a table on stdout, one JSON and a bar chart.

usage: compare_runs.py OUT.json OUT.png RESULT.json...
"""
import collections
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out_json, out_png, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    meta = {}
    for f in files:
        with open(f) as fh:
            d = json.load(fh)
        meta.setdefault("machine", d["machine"])
        meta.setdefault("model", d["model"]["dir"])
        meta.setdefault("input_len", d["options"]["input_len"])
        for p in d["points"]:
            runs[d["label"]][p["batch"]].append({
                "decode_p50_ms": p["decode_iter_ms"]["p50"], "prefill_s": p["prefill_s"],
                "floor_bandwidth_ms": p["floor_decode_bandwidth_ms"],
                "floor_flops_ms": p["floor_decode_flops_ms"]})
    summary = {"machine": meta["machine"], "model": meta["model"],
               "input_len": meta["input_len"], "files": files, "labels": {}}
    for label, batches in runs.items():
        summary["labels"][label] = {
            str(b): {"decode_p50_ms": min(r["decode_p50_ms"] for r in rs),
                     "prefill_s": min(r["prefill_s"] for r in rs),
                     "runs": rs}
            for b, rs in sorted(batches.items())}
    with open(out_json, "w") as f:
        json.dump(summary, f, indent=1)
    labels = list(summary["labels"])
    batches = sorted({int(b) for v in summary["labels"].values() for b in v})
    print("label " + " ".join(f"| decode B={b} (ms) | prefill B={b} (s)" for b in batches))
    for label in labels:
        row = summary["labels"][label]
        print(label + " " + " ".join(
            f"| {row[str(b)]['decode_p50_ms']:.1f} | {row[str(b)]['prefill_s']:.2f}" for b in batches))
    fig, axes = plt.subplots(1, len(batches), figsize=(5 * len(batches), 3.6))
    for ax, b in zip(axes if len(batches) > 1 else [axes], batches):
        values = [summary["labels"][l][str(b)]["decode_p50_ms"] for l in labels]
        ax.bar(labels, values, color="#4c72b0")
        for i, v in enumerate(values):
            ax.text(i, v, f"{v:.1f}", ha="center", va="bottom", fontsize=8)
        ax.set_title(f"decode iteration, batch {b}, {meta['input_len']}-token contexts")
        ax.set_ylabel("ms (median; best of the runs)")
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle(f"{meta['model']} on {meta['machine']['cpu_model']}, "
                 f"{meta['machine']['logical_cores']} cores")
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    print(f"wrote {out_json} and {out_png}")


if __name__ == "__main__":
    main()

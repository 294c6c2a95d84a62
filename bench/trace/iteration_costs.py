#!/usr/bin/python3
"""What an iteration's rows cost in a serving run: one orca per-iteration trace
(--trace-file) in, each iteration's computing time on one rank (its top-level spans:
layers, lm-head, masks, sample) set against the shape the scheduler's `schedule` span
carries (decodes, prompt_tokens, context_tokens; docs/engine.md, "Per-iteration trace").

Prints the iterations grouped by how many prompt tokens they hold (count, mean decodes,
prompt tokens and context, mean time, time per row), and a least-squares fit

    time = fixed + per_decode * decodes + per_prompt_token * prompt_tokens

so a serving run's cost per prompt token can be set beside `orca bench engine`'s
prefill (docs/benchmarks.md section 29). --json writes the same numbers.

usage: iteration_costs.py TRACE.json [--rank R] [--json OUT.json]
       iteration_costs.py --self-test
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_trace import load  # noqa: E402

COMPUTING = {"layers", "lm-head", "masks", "sample"}  # top-level: all-reduce nests in layers
BUCKETS = [(0, 0), (1, 64), (65, 256), (257, 511), (512, 1 << 30)]


def iterations(spans, rank):
    """[(decodes, prompt_tokens, context_tokens, ms)] per iteration with both a shape
    and computing time on `rank`."""
    shape, ms = {}, {}
    for s in spans:
        it = s.get("args", {}).get("iteration")
        if it is None:
            continue
        if s["pid"] == 1 and s["name"] == "schedule" and "decodes" in s["args"]:
            shape[it] = s["args"]
        elif s["pid"] == 100 + rank and s["name"] in COMPUTING:
            ms[it] = ms.get(it, 0.0) + s["dur"] / 1e3
    return [(shape[i]["decodes"], shape[i]["prompt_tokens"], shape[i]["context_tokens"], ms[i])
            for i in sorted(shape) if i in ms]


def fit(rows):
    """Least squares of ms on (1, decodes, prompt_tokens) by the normal equations."""
    xs = [(1.0, float(d), float(p)) for d, p, _, _ in rows]
    ys = [m for _, _, _, m in rows]
    a = [[sum(x[i] * x[j] for x in xs) for j in range(3)] for i in range(3)]
    b = [sum(x[i] * y for x, y in zip(xs, ys)) for i in range(3)]
    for c in range(3):  # Gauss-Jordan with partial pivoting
        p = max(range(c, 3), key=lambda r: abs(a[r][c]))
        if abs(a[p][c]) < 1e-12:
            return None  # a column never varies (e.g. no prompt tokens at all)
        a[c], a[p], b[c], b[p] = a[p], a[c], b[p], b[c]
        for r in range(3):
            if r != c:
                f = a[r][c] / a[c][c]
                a[r] = [u - f * v for u, v in zip(a[r], a[c])]
                b[r] -= f * b[c]
    return {"fixed_ms": b[0] / a[0][0], "per_decode_ms": b[1] / a[1][1],
            "per_prompt_token_ms": b[2] / a[2][2]}


def summarize(rows):
    groups = []
    for lo, hi in BUCKETS:
        g = [r for r in rows if lo <= r[1] <= hi]
        if not g:
            continue
        n = len(g)
        tokens = sum(d + p for d, p, _, _ in g)
        groups.append({"prompt_tokens": [lo, hi], "iterations": n,
                       "decodes": sum(r[0] for r in g) / n, "prompt": sum(r[1] for r in g) / n,
                       "context": sum(r[2] for r in g) / n, "ms": sum(r[3] for r in g) / n,
                       "ms_per_row": sum(r[3] for r in g) / tokens if tokens else 0.0})
    return {"iterations": len(rows), "computing_s": sum(r[3] for r in rows) / 1e3,
            "prompt_tokens": sum(r[1] for r in rows), "decodes": sum(r[0] for r in rows),
            "groups": groups, "fit": fit(rows)}


def report(s):
    print(f"{s['iterations']} iterations, {s['computing_s']:.2f} s computing, "
          f"{s['prompt_tokens']} prompt tokens, {s['decodes']} decodes")
    for g in s["groups"]:
        lo, hi = g["prompt_tokens"]
        print(f"  prompt tokens {lo}-{hi if hi < 1 << 30 else 'more'}: {g['iterations']} iterations,"
              f" {g['decodes']:.1f} decodes + {g['prompt']:.0f} prompt tokens, context"
              f" {g['context']:.0f}: {g['ms']:.1f} ms ({g['ms_per_row']:.2f} ms a row)")
    f = s["fit"]
    if f:
        print(f"  fit: {f['fixed_ms']:.2f} ms + {f['per_decode_ms']:.3f} ms a decode + "
              f"{f['per_prompt_token_ms']:.3f} ms a prompt token")


def self_test():
    """A synthetic trace whose iterations cost 5 + 2 d + 1.5 p ms: the fit must give
    those back, and iterations without a shape or without rank time are left out."""
    spans = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "scheduler"}}]
    shapes = [(0, 512), (16, 0), (12, 100), (3, 400), (15, 17), (8, 0)]
    for it, (d, p) in enumerate(shapes):
        spans.append({"name": "schedule", "ph": "X", "pid": 1, "ts": it * 1000, "dur": 1,
                      "args": {"iteration": it, "sequences": d + 1, "decodes": d,
                               "prompt_tokens": p, "context_tokens": d * 100 + p}})
        total_us = (5 + 2 * d + 1.5 * p) * 1e3
        spans.append({"name": "layers", "ph": "X", "pid": 100, "ts": it * 1000, "dur": total_us * 0.75,
                      "args": {"iteration": it}})
        spans.append({"name": "all-reduce", "ph": "X", "pid": 100, "ts": it * 1000, "dur": 999.0,
                      "args": {"iteration": it}})  # nested in layers: not counted again
        spans.append({"name": "sample", "ph": "X", "pid": 100, "ts": it * 1000, "dur": total_us * 0.25,
                      "args": {"iteration": it}})
    spans.append({"name": "layers", "ph": "X", "pid": 100, "ts": 9e6, "dur": 7e6,
                  "args": {"iteration": 99}})  # no schedule span: left out
    rows = iterations([s for s in spans if s["ph"] == "X"], 0)
    assert len(rows) == len(shapes), rows
    f = summarize(rows)["fit"]
    for key, want in (("fixed_ms", 5.0), ("per_decode_ms", 2.0), ("per_prompt_token_ms", 1.5)):
        assert abs(f[key] - want) < 1e-6, (key, f[key], want)
    assert fit([r for r in rows if r[1] == 0]) is None  # prompt tokens never vary
    print("iteration_costs self-test: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", nargs="?")
    ap.add_argument("--rank", type=int, default=0, help="the rank whose computing time counts")
    ap.add_argument("--json", help="write the numbers here too")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.trace:
        ap.error("a trace file is required")
    _, spans = load(a.trace)
    rows = iterations(spans, a.rank)
    if not rows:
        sys.exit(f"{a.trace}: no iteration has both a schedule span with its shape and rank "
                 f"{a.rank}'s computing spans (a trace from an orca before the shape was traced?)")
    s = summarize(rows)
    report(s)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(s, f, indent=1)


if __name__ == "__main__":
    main()

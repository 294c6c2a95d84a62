#!/usr/bin/python3
"""What guided decoding costs per output token: decode throughput with and without a
guided_regex that allows (nearly) every token, so both runs sample the same kind of text
and only the mechanism differs (the scheduler's mask copy into each plan, the sampler's
pass over the vocabulary; the automaton's masks are built on the warm-up request).

usage: guided_overhead.py --orca BIN --model DIR [--concurrency 1,32] [--tokens 64]
                          [--rounds 2] [--schema | --grammar] --out result.json
                          [--png plot.png] [--serve-args "--device cuda ..."]

Starts `orca serve` on a free port, then per concurrency level runs rounds of
(unconstrained, guided) batches of `concurrency` requests of --tokens tokens each
(ignore_eos), interleaved so machine noise hits both alike; prints and writes tokens/s
and the guided/unconstrained ratio of the best round. CPU model in the JSON.
"""
import argparse
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request

GUIDED = "[\\s\\S]*"
# --schema: a title and a story of at least 300 characters, so that no request completes
# within --tokens (early finishers would shrink the batch and flatter nothing).
SCHEMA = {"type": "object", "properties": {
          "title": {"type": "string", "maxLength": 20},
          "mood": {"enum": ["happy", "sad", "scary"]},
          "story": {"type": "string", "minLength": 300, "maxLength": 600}},
          "required": ["title", "mood", "story"], "additionalProperties": False}
# --grammar: a recursive GBNF grammar (an outline whose items may open nested outlines),
# run on the pushdown automaton; at least 20 items and no end, so no request completes.
GRAMMAR = r"""root ::= item{20,}
item ::= "- " [a-zA-Z ,.']{1,40} "\n" | "(" root ")\n"
"""


def post(base, body):
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def batch(base, concurrency, tokens, guide, seed):
    """tokens/s of `concurrency` requests at once; `guide`: the guided fields (or {})."""
    out = [0] * concurrency

    def one(i):
        body = {"prompt": "Once upon a time", "max_tokens": tokens, "ignore_eos": True,
                "temperature": 1.0, "seed": seed + i, **guide}
        out[i] = post(base, body)["usage"]["completion_tokens"]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(concurrency)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(out) / (time.perf_counter() - start)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        m = re.search(r"model name\s*:\s*(.*)", f.read())
    return m.group(1) if m else "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--orca", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--concurrency", default="1,32")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", required=True)
    ap.add_argument("--png")
    ap.add_argument("--serve-args", default="",
                    help="more orca serve flags, e.g. '--device cuda --no-device-sampling'")
    ap.add_argument("--schema", action="store_true",
                    help="guide with a realistic JSON schema (title/mood/story) instead")
    ap.add_argument("--grammar", action="store_true",
                    help="guide with a recursive GBNF grammar (a nested outline) instead")
    a = ap.parse_args()
    guide = ({"guided_json": SCHEMA} if a.schema else
             {"guided_grammar": GRAMMAR} if a.grammar else {"guided_regex": GUIDED})
    label = ("guided_json (title/mood/story schema)" if a.schema else
             "guided_grammar (nested outline)" if a.grammar else "guided_regex")
    levels = [int(c) for c in a.concurrency.split(",")]
    server = subprocess.Popen([a.orca, "serve", "--model", a.model, "--host", "127.0.0.1",
                               "--port", "0", "--grpc-port", "0",
                               "--max-batch-size", str(max(levels)), *a.serve_args.split()],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        base = None
        for line in server.stdout:
            m = re.search(r"serving \S+ on (http://[\d.]+:\d+)", line)
            if m:
                base = m.group(1)
                break
        if base is None:
            sys.exit("orca serve did not start")
        print(f"[guided] server at {base}; warming up (compiles the pattern)", flush=True)
        batch(base, 2, 8, guide, 0)
        batch(base, 2, 8, {}, 0)
        results = []
        for c in levels:
            best = {"unconstrained": 0.0, "guided": 0.0}
            for r in range(a.rounds):
                for kind in ("unconstrained", "guided"):
                    tps = batch(base, c, a.tokens, guide if kind == "guided" else {}, 1000 * r)
                    best[kind] = max(best[kind], tps)
                    print(f"[guided] concurrency {c:3d} round {r + 1} {kind:13s} {tps:8.1f} tok/s",
                          flush=True)
            ratio = best["guided"] / best["unconstrained"]
            results.append({"concurrency": c, **{k + "_tok_s": v for k, v in best.items()},
                            "guided_over_unconstrained": ratio,
                            "overhead_pct": (1 / ratio - 1) * 100})
            print(f"[guided] concurrency {c}: guided {best['guided']:.1f} vs "
                  f"{best['unconstrained']:.1f} tok/s: {results[-1]['overhead_pct']:+.1f} % per token",
                  flush=True)
    finally:
        server.terminate()
        server.wait()
    doc = {"cpu": cpu_model(), "model": a.model, "tokens": a.tokens,
           "serve_args": a.serve_args,
           "guide": guide,
           "results": results}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=2)
    if a.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 3.5))
        xs = range(len(results))
        ax.bar([x - 0.2 for x in xs], [r["unconstrained_tok_s"] for r in results], 0.4,
               label="unconstrained")
        ax.bar([x + 0.2 for x in xs], [r["guided_tok_s"] for r in results], 0.4,
               label=label)
        ax.set_xticks(list(xs), [f"{r['concurrency']} clients" for r in results])
        ax.set_ylabel("output tokens/s")
        ax.set_title(f"Guided decoding overhead ({doc['cpu'][:40]})", fontsize=9)
        ax.legend()
        fig.tight_layout()
        fig.savefig(a.png, dpi=120)


if __name__ == "__main__":
    main()

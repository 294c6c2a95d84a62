#!/usr/bin/python3
"""Independent PyTorch reference for prompt logprobs (OpenAI `echo` + `logprobs`).

usage: reference_logprobs.py MODEL_DIR TOKENS_JSON TOP_N [KV_DTYPE]

Runs reference_forward.py's float64 forward pass over the token list and prints, as
JSON on stdout, what each prompt token scores given the tokens before it:
{"logprobs": [null, lp1, ...], "ranks": [null, r1, ...], "rank_ranges": [null, [lo, hi], ...],
 "top": [null, [[id, lp], ...], ...]}
from torch.log_softmax of the logits of the row before it; a rank is 1 + the number of
tokens with a strictly larger logit, and [lo, hi] the ranks it may take when every logit
may be off by RANK_SLACK (1e-4: deep in the vocabulary neighbours are closer than a
float32 engine can tell apart); "top" holds the TOP_N most likely tokens, larger logit
first (ties: smaller id first). KV_DTYPE (F16/BF16) as in reference_forward.py.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_forward as ref  # noqa: E402

RANK_SLACK = 1e-4


def main():
    model_dir, tokens_json, top_n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    kv_dtype = sys.argv[4] if len(sys.argv) > 4 else None
    with open(f"{model_dir}/config.json") as f:
        cfg = json.load(f)
    with open(tokens_json) as f:
        ids = json.load(f)
    w = ref.load_safetensors(f"{model_dir}/model.safetensors")
    with torch.no_grad():
        if cfg["architectures"][0] == "GPT2LMHeadModel":
            logits = ref.gpt2_forward(cfg, w, ids, kv_dtype)
        else:
            logits = ref.llama_forward(cfg, w, ids, kv_dtype)
        logprobs = torch.log_softmax(logits, dim=-1)
    out = {"logprobs": [None], "ranks": [None], "rank_ranges": [None], "top": [None]}
    for i in range(1, len(ids)):
        row, lp_row = logits[i - 1], logprobs[i - 1]
        target = ids[i]
        out["logprobs"].append(float(lp_row[target]))
        out["ranks"].append(int((row > row[target]).sum()) + 1)
        out["rank_ranges"].append([int((row > row[target] + 2 * RANK_SLACK).sum()) + 1,
                                   int((row > row[target] - 2 * RANK_SLACK).sum())])  # itself too
        # Larger logit first, then the smaller id (a stable sort over ids 0..V-1).
        order = sorted(range(len(row)), key=lambda j: -float(row[j]))[:top_n]
        out["top"].append([[j, float(lp_row[j])] for j in order])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

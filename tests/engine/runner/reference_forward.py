#!/usr/bin/python3
"""Independent float64 PyTorch reference forward pass for orca's numerics tests.

usage: reference_forward.py MODEL_DIR TOKENS_JSON OUT_FILE [KV_DTYPE]

Reads a Hugging Face checkpoint (config.json + model.safetensors, parsed here with
numpy, not with orca) and writes the logits of every position of the token list as
little-endian float64 [T, vocab] to OUT_FILE. Implements LlamaForCausalLM (RMSNorm,
rotate-half RoPE, GQA, SiLU-gated MLP, optional QKV bias) and GPT2LMHeadModel
(learned positions, LayerNorm, Conv1D, tanh GELU) the way Hugging Face transformers
defines them. KV_DTYPE (F16 or BF16) rounds every cached key and value to that type
before attention uses it (round to nearest even, as torch converts), the way a 16-bit
KV cache stores them; everything else stays float64.
"""
import json
import math
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        buf = data[b:e]
        dt = info["dtype"]
        if dt == "F32":
            arr = np.frombuffer(buf, dtype="<f4")
        elif dt == "F16":
            arr = np.frombuffer(buf, dtype="<f2").astype(np.float32)
        elif dt == "BF16":
            arr = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            continue
        out[name] = torch.from_numpy(arr.astype(np.float64).reshape(info["shape"]))
    return out


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


KV_DTYPES = {"F16": torch.float16, "BF16": torch.bfloat16}


def kv_round(x, kv_dtype):
    if kv_dtype is None:
        return x
    # float64 -> float32 first: the engine computes K and V in float32, then stores them.
    y = x.to(torch.float32)
    if kv_dtype == "F16":  # saturate at the largest half, as the engine does
        y = y.clamp(-65504.0, 65504.0)
    return y.to(KV_DTYPES[kv_dtype]).to(torch.float64)


def causal_attention(q, k, v):
    # q: [H, T, D], k/v: [H, T, D]
    d = q.shape[-1]
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    t = q.shape[1]
    mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def llama_forward(cfg, w, ids, kv_dtype=None):
    h = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads", nh)
    d = cfg.get("head_dim", h // nh)
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = cfg.get("rope_theta", 10000.0)
    t = len(ids)
    x = w["model.embed_tokens.weight"][ids]
    pos = torch.arange(t, dtype=torch.float64)
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    qkv_bias = cfg.get("attention_bias", False) or cfg["architectures"][0] == "Qwen2ForCausalLM"
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        a = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = a @ w[p + "self_attn.q_proj.weight"].T
        k = a @ w[p + "self_attn.k_proj.weight"].T
        v = a @ w[p + "self_attn.v_proj.weight"].T
        if qkv_bias:
            q = q + w[p + "self_attn.q_proj.bias"]
            k = k + w[p + "self_attn.k_proj.bias"]
            v = v + w[p + "self_attn.v_proj.bias"]
        q = q.view(t, nh, d).transpose(0, 1)
        k = k.view(t, nkv, d).transpose(0, 1)
        v = v.view(t, nkv, d).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = kv_round(k * cos + rotate_half(k) * sin, kv_dtype)
        v = kv_round(v, kv_dtype)
        rep = nh // nkv
        k = k.repeat_interleave(rep, dim=0)
        v = v.repeat_interleave(rep, dim=0)
        o = causal_attention(q, k, v).transpose(0, 1).reshape(t, nh * d)
        o = o @ w[p + "self_attn.o_proj.weight"].T
        if cfg.get("attention_bias", False):
            o = o + w[p + "self_attn.o_proj.bias"]
        x = x + o
        m = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = m @ w[p + "mlp.gate_proj.weight"].T
        u = m @ w[p + "mlp.up_proj.weight"].T
        x = x + (F.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return x @ head.T


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def gpt2_forward(cfg, w, ids, kv_dtype=None):
    h = cfg["n_embd"]
    nh = cfg["n_head"]
    d = h // nh
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    pre = "transformer." if "transformer.wte.weight" in w else ""
    t = len(ids)
    x = w[pre + "wte.weight"][ids] + w[pre + "wpe.weight"][torch.arange(t)]
    for l in range(cfg["n_layer"]):
        p = f"{pre}h.{l}."
        a = F.layer_norm(x, (h,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(h, dim=-1)
        q = q.view(t, nh, d).transpose(0, 1)
        k = kv_round(k.view(t, nh, d).transpose(0, 1), kv_dtype)
        v = kv_round(v.view(t, nh, d).transpose(0, 1), kv_dtype)
        o = causal_attention(q, k, v).transpose(0, 1).reshape(t, h)
        x = x + o @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        m = F.layer_norm(x, (h,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        m = gelu_new(m @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (h,), w[pre + "ln_f.weight"], w[pre + "ln_f.bias"], eps)
    return x @ w[pre + "wte.weight"].T


def main():
    model_dir, tokens_json, out_file = sys.argv[1:4]
    kv_dtype = sys.argv[4] if len(sys.argv) > 4 else None
    if kv_dtype is not None and kv_dtype not in KV_DTYPES:
        sys.exit(f"KV_DTYPE must be one of {sorted(KV_DTYPES)}, got {kv_dtype!r}")
    with open(f"{model_dir}/config.json") as f:
        cfg = json.load(f)
    with open(tokens_json) as f:
        ids = json.load(f)
    w = load_safetensors(f"{model_dir}/model.safetensors")
    arch = cfg["architectures"][0]
    with torch.no_grad():
        if arch == "GPT2LMHeadModel":
            logits = gpt2_forward(cfg, w, ids, kv_dtype)
        else:
            logits = llama_forward(cfg, w, ids, kv_dtype)
    logits.numpy().astype("<f8").tofile(out_file)


if __name__ == "__main__":
    main()

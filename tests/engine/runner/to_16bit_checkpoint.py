#!/usr/bin/python3
"""Writes a 16-bit copy of a Hugging Face checkpoint, independently of orca.

usage: to_16bit_checkpoint.py SRC_DIR DST_DIR F16|BF16

Every floating-point tensor of SRC_DIR/model.safetensors is converted by PyTorch
(round to nearest even, as torch's .to() rounds) and written to DST_DIR/model.safetensors
with the same names, shapes and order; config.json gets torch_dtype set to match, and
the other files (tokenizer, generation config) are copied as they are. The numerics
tests then load the copy into orca and into reference_forward.py: both read the same
16-bit weights.
"""
import json
import os
import shutil
import struct
import sys

import numpy as np
import torch

TYPES = {"F16": (torch.float16, "float16"), "BF16": (torch.bfloat16, "bfloat16")}


def main():
    src, dst, dtype = sys.argv[1:4]
    if dtype not in TYPES:
        sys.exit(f"dtype must be one of {sorted(TYPES)}, got {dtype!r}")
    torch_type, config_name = TYPES[dtype]
    os.makedirs(dst, exist_ok=True)
    with open(f"{src}/model.safetensors", "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out_header, chunks, offset = {}, [], 0
    for name, info in header.items():
        if name == "__metadata__":
            out_header[name] = info
            continue
        b, e = info["data_offsets"]
        buf = data[b:e]
        if info["dtype"] == "F32":
            t = torch.from_numpy(np.frombuffer(buf, dtype="<f4").copy()).to(torch_type)
            buf = t.view(torch.int16).numpy().astype("<i2").tobytes()
            info = dict(info, dtype=dtype)
        out_header[name] = dict(info, data_offsets=[offset, offset + len(buf)])
        chunks.append(buf)
        offset += len(buf)
    blob = json.dumps(out_header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(f"{dst}/model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for c in chunks:
            f.write(c)
    with open(f"{src}/config.json") as f:
        cfg = json.load(f)
    cfg["torch_dtype"] = config_name
    with open(f"{dst}/config.json", "w") as f:
        json.dump(cfg, f, indent=2)
    for entry in os.listdir(src):
        path = f"{src}/{entry}"
        if entry not in ("model.safetensors", "config.json") and os.path.isfile(path):
            shutil.copy(path, f"{dst}/{entry}")


if __name__ == "__main__":
    main()

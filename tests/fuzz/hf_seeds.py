#!/usr/bin/env python3
"""hf_seeds.py OUT MODEL_DIR... - seeds for fuzz_hf.c, one per Hugging Face
test folder with a model.safetensors: config.json, a NUL byte, the data
section's length (uint32, little endian) and the safetensors header."""
import os
import struct
import sys

out = sys.argv[1]
for d in sys.argv[2:]:
    st = os.path.join(d, "model.safetensors")
    cfg = os.path.join(d, "config.json")
    if not (os.path.isfile(st) and os.path.isfile(cfg)):
        continue
    with open(st, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8]) if len(blob) >= 8 else (0,)
    if n > len(blob) - 8:
        n = len(blob) - 8
    data = len(blob) - 8 - n
    with open(cfg, "rb") as f:
        seed = f.read() + b"\0" + struct.pack("<I", min(data, 1 << 20)) + blob[8:8 + n]
    name = d.strip("/").replace("/", "_")
    with open(os.path.join(out, name), "wb") as f:
        f.write(seed)

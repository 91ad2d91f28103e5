#!/usr/bin/env python3
"""Writes references made by transformers itself for Hugging Face test folders
whose own test data comes from tools/hf_reference.py (the project's numpy
re-implementation), so that a mistake shared by that script and mkc's
reader (qwen2's q/k/v biases, say) cannot pass unseen:

    python3 tests/models/gen_transformers_refs.py [OUTDIR]   (default: tests/models/hf_transformers)

Needs torch and transformers, which CI does not have: the outputs are
committed. Each OUTDIR/<model>/ holds a copy of the folder's config.json and
model.safetensors (the emitted loader refuses weight files that resolve
outside the model's folder; git stores the identical copies once), links to
its test_data_set_0/input_K.pb, and the logits and
present keys/values that transformers (eager attention, float32, CPU)
computes from the same inputs and past.
"""
import os
import shutil
import sys

import numpy as np
import onnx
import torch
import transformers
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["qwen2_tiny", "qwen3_tiny", "llama_tiny_llama3_rope"]


def read(path):
    t = onnx.TensorProto()
    t.ParseFromString(open(path, "rb").read())
    return numpy_helper.to_array(t)


def copy(src, dst):
    if os.path.lexists(dst):
        os.remove(dst)
    shutil.copyfile(src, dst)


def link(src, dst):
    if os.path.lexists(dst):
        os.remove(dst)
    os.symlink(os.path.relpath(src, os.path.dirname(dst)), dst)


def step(src):
    model = transformers.AutoModelForCausalLM.from_pretrained(
        src, dtype=torch.float32, attn_implementation="eager").eval()
    layers = model.config.num_hidden_layers
    case = os.path.join(src, "test_data_set_0")
    ins = [read(os.path.join(case, f"input_{k}.pb")) for k in range(2 + 2 * layers)]
    cache = transformers.DynamicCache()
    for i in range(layers):
        cache.update(torch.from_numpy(ins[2 + 2 * i]), torch.from_numpy(ins[3 + 2 * i]), i)
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(ins[0]), position_ids=torch.from_numpy(ins[1]),
                    past_key_values=cache, use_cache=True)
    outs = [("logits", out.logits.numpy())]
    for i in range(layers):
        k, v = out.past_key_values.layers[i].keys, out.past_key_values.layers[i].values
        outs += [(f"present.{i}.key", k.numpy()), (f"present.{i}.value", v.numpy())]
    return len(ins), outs


def main(argv):
    out = argv[1] if len(argv) > 1 else os.path.join(HERE, "hf_transformers")
    for name in MODELS:
        src = os.path.join(HERE, "hf", name)
        nin, outs = step(src)
        dst = os.path.join(out, name)
        os.makedirs(os.path.join(dst, "test_data_set_0"), exist_ok=True)
        for f in ("config.json", "model.safetensors"):
            copy(os.path.join(src, f), os.path.join(dst, f))
        for k in range(nin):
            link(os.path.join(src, "test_data_set_0", f"input_{k}.pb"),
                 os.path.join(dst, "test_data_set_0", f"input_{k}.pb"))
        for k, (oname, v) in enumerate(outs):
            ours = read(os.path.join(src, "test_data_set_0", f"output_{k}.pb"))
            err = np.linalg.norm(ours - v) / np.linalg.norm(v)
            with open(os.path.join(dst, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.ascontiguousarray(v, np.float32),
                                                oname).SerializeToString())
            print(f"{name} {oname}: hf_reference.py's output is {err:.2g} from transformers'")
        print(f"{name}: torch {torch.__version__}, transformers {transformers.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Writes a Llama decode-step graph of any size as ONNX (opset 23), for
measuring mkc on large graphs without downloading anything.

    python3 tools/gen_llama.py OUTDIR [--preset 1b|tiny] [--layers N] ...

The graph has the decode-step interface of the shared exports: inputs
input_ids [1,1], position_ids [1,1], past_key_values.{i}.key/value
[1,kv,past_len,head_dim]; outputs logits [1,1,vocab], present.{i}.key/value.
Per layer: RMSNormalization, q/k/v MatMuls, RotaryEmbedding, Attention (GQA,
with past key/value), output MatMul and residual, RMSNormalization, SwiGLU MLP
and residual. Embeddings are tied: logits come from Gemm(transB=1) on the
embedding table.

Weights are external data in OUTDIR/model.weights, a sparse file: the data is
all zeros and takes no disk space. This model is for compile-time and memory
measurements only; it computes nothing meaningful.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

PRESETS = {
    # Llama-3.2-1B
    "1b": dict(hidden=2048, layers=16, heads=32, kv_heads=8, head_dim=64,
               ffn=8192, vocab=128256, max_pos=4096),
    "tiny": dict(hidden=256, layers=2, heads=8, kv_heads=2, head_dim=32,
                 ffn=512, vocab=1024, max_pos=2048),
}


class Weights:
    """Initializers laid out one after another in one external file."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.inits = []

    def add(self, name, shape):
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(shape)
        t.data_location = TensorProto.EXTERNAL
        size = int(np.prod(shape)) * 4
        for k, v in (("location", os.path.basename(self.path)),
                     ("offset", str(self.offset)), ("length", str(size))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.offset += (size + 4095) // 4096 * 4096
        self.inits.append(t)
        return name

    def write(self):
        with open(self.path, "wb") as f:
            f.truncate(self.offset)


def const_i64(inits, name, values):
    inits.append(helper.make_tensor(name, TensorProto.INT64, [len(values)], values))
    return name


def layer(i, c, w, inits, nodes, x):
    hd, h, kv = c["head_dim"], c["heads"], c["kv_heads"]
    p = f"model.layers.{i}."

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=f"{p}{out}", **attrs))
        return out

    def linear(inp, name, n_in, n_out):
        return node("MatMul", [inp, w.add(p + name, [n_in, n_out])], p + name + ".out")

    def heads(inp, n, tag):
        r = node("Reshape", [inp, const_i64(inits, f"{p}{tag}.shape", [1, 1, n, hd])], p + tag + ".r")
        return node("Transpose", [r], p + tag + ".t", perm=[0, 2, 1, 3])

    xn = node("RMSNormalization", [x, w.add(p + "input_layernorm.weight", [c["hidden"]])],
              p + "xn", epsilon=1e-5)
    q = heads(linear(xn, "self_attn.q_proj", c["hidden"], h * hd), h, "q")
    k = heads(linear(xn, "self_attn.k_proj", c["hidden"], kv * hd), kv, "k")
    v = heads(linear(xn, "self_attn.v_proj", c["hidden"], kv * hd), kv, "v")
    q = node("RotaryEmbedding", [q, "cos_cache", "sin_cache", "position_ids"], p + "q.rope")
    k = node("RotaryEmbedding", [k, "cos_cache", "sin_cache", "position_ids"], p + "k.rope")
    nodes.append(helper.make_node(
        "Attention", [q, k, v, "", f"past_key_values.{i}.key", f"past_key_values.{i}.value"],
        [p + "attn", f"present.{i}.key", f"present.{i}.value"], name=p + "attention",
        scale=1.0 / np.sqrt(hd)))
    a = node("Transpose", [p + "attn"], p + "attn.t", perm=[0, 2, 1, 3])
    a = node("Reshape", [a, const_i64(inits, p + "attn.shape", [1, 1, h * hd])], p + "attn.r")
    x = node("Add", [x, linear(a, "self_attn.o_proj", h * hd, c["hidden"])], p + "res1")
    xn = node("RMSNormalization", [x, w.add(p + "post_attention_layernorm.weight", [c["hidden"]])],
              p + "xn2", epsilon=1e-5)
    gate = linear(xn, "mlp.gate_proj", c["hidden"], c["ffn"])
    up = linear(xn, "mlp.up_proj", c["hidden"], c["ffn"])
    silu = node("Mul", [gate, node("Sigmoid", [gate], p + "sig")], p + "silu")
    down = linear(node("Mul", [silu, up], p + "act"), "mlp.down_proj", c["ffn"], c["hidden"])
    return node("Add", [x, down], p + "res2")


def build(c, outdir):
    w = Weights(os.path.join(outdir, "model.weights"))
    inits, nodes = [], []
    hd, kv = c["head_dim"], c["kv_heads"]
    emb = w.add("model.embed_tokens.weight", [c["vocab"], c["hidden"]])
    w.add("cos_cache", [c["max_pos"], hd // 2])
    w.add("sin_cache", [c["max_pos"], hd // 2])
    nodes.append(helper.make_node("Gather", [emb, "input_ids"], ["x0"], name="embed", axis=0))
    x = "x0"
    for i in range(c["layers"]):
        x = layer(i, c, w, inits, nodes, x)
    nodes.append(helper.make_node("RMSNormalization", [x, w.add("model.norm.weight", [c["hidden"]])],
                                  ["xf"], name="final_norm", epsilon=1e-5))
    nodes.append(helper.make_node("Reshape", ["xf", const_i64(inits, "flat", [1, c["hidden"]])],
                                  ["xf2"], name="flatten"))
    nodes.append(helper.make_node("Gemm", ["xf2", emb], ["logits2"], name="lm_head", transB=1))
    nodes.append(helper.make_node("Reshape", ["logits2", const_i64(inits, "lshape", [1, 1, c["vocab"]])],
                                  ["logits"], name="logits"))
    kvshape = lambda n: [1, kv, n, hd]
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, 1]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, 1])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1, c["vocab"]])]
    for i in range(c["layers"]):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(
                f"past_key_values.{i}.{kind}", TensorProto.FLOAT, kvshape("past_len")))
            outputs.append(helper.make_tensor_value_info(
                f"present.{i}.{kind}", TensorProto.FLOAT, kvshape("past_len + 1")))
    graph = helper.make_graph(nodes, "llama_decode", inputs, outputs,
                              initializer=inits + w.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)],
                              producer_name="mkc-gen_llama")
    model.ir_version = 10
    w.write()
    with open(os.path.join(outdir, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    return w.offset


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--preset", choices=PRESETS, default="1b")
    for k in PRESETS["1b"]:
        ap.add_argument("--" + k.replace("_", "-"), type=int, dest=k)
    args = ap.parse_args(argv[1:])
    c = dict(PRESETS[args.preset])
    c.update({k: v for k, v in vars(args).items() if k in c and v is not None})
    os.makedirs(args.outdir, exist_ok=True)
    size = build(c, args.outdir)
    print(f"wrote {args.outdir}/model.onnx: {c['layers']} layers, hidden {c['hidden']}, "
          f"{size / 1e9:.2f} GB of (sparse) weights")


if __name__ == "__main__":
    main(sys.argv)

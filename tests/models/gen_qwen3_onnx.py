#!/usr/bin/env python3
"""Writes the Hugging Face folder tests/models/hf/qwen3_tiny again as ONNX
(opset 23) and as ONNX-JSON, with the same weights and test data, so that
all three frontends can be shown to compute the same step:

    python3 tests/models/gen_qwen3_onnx.py [OUTDIR]   (default: qwen3_tiny_onnx/)

The graph is built by hand with onnx.helper: Gather, RMSNormalization,
MatMul (weights transposed to [in, out]), per-head q/k RMSNormalization,
RotaryEmbedding with cos/sin of position * inv_freq, Attention with the KV
cache, SwiGLU. Before writing, onnxruntime runs it on the folder's
test_data_set_0 and must match the stored outputs (from
tools/hf_reference.py) within 1e-5, or nothing is written.
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import hf_reference as ref  # noqa: E402

SRC = os.path.join(HERE, "hf", "qwen3_tiny")
F32 = TensorProto.FLOAT


class Builder:
    def __init__(self):
        self.nodes, self.inits = [], []

    def init(self, name, array, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), name))
        return name

    def node(self, op, ins, out, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out


def build(cfg, w):
    b = Builder()
    H, KV, D, hid = cfg["heads"], cfg["kv_heads"], cfg["head_dim"], cfg["hidden"]
    eps = float(cfg["eps"])
    emb = b.init("model.embed_tokens.weight", w["model.embed_tokens.weight"])
    x = b.node("Gather", [emb, "input_ids"], "embed", axis=0)
    pos = b.node("Cast", ["position_ids"], "pos_f", to=F32)
    pos = b.node("Unsqueeze", [pos, b.init("axis2", [2], np.int64)], "pos_3d")
    freq = b.node("Mul", [pos, b.init("inv_freq", ref.inv_freq(cfg))], "freq")
    cos, sin = b.node("Cos", [freq], "cos"), b.node("Sin", [freq], "sin")

    def linear(inp, name, out):
        return b.node("MatMul", [inp, b.init(name + ".weight_t", w[name + ".weight"].T)], out)

    def heads(inp, n, tag, norm):
        r = b.node("Reshape", [inp, b.init(tag + ".shape", [1, 1, n, D], np.int64)], tag + ".r")
        r = b.node("RMSNormalization", [r, b.init(norm, w[norm])], tag + ".n", epsilon=eps)
        return b.node("Transpose", [r], tag + ".t", perm=[0, 2, 1, 3])

    for i in range(cfg["layers"]):
        p, a = "model.layers.%d." % i, "model.layers.%d.self_attn." % i
        xn = b.node("RMSNormalization", [x, b.init(p + "ln1", w[p + "input_layernorm.weight"])],
                    p + "xn", epsilon=eps)
        q = heads(linear(xn, a + "q_proj", a + "q"), H, a + "q", a + "q_norm.weight")
        k = heads(linear(xn, a + "k_proj", a + "k"), KV, a + "k", a + "k_norm.weight")
        v = b.node("Reshape", [linear(xn, a + "v_proj", a + "v"),
                               b.init(a + "v.shape", [1, 1, KV, D], np.int64)], a + "v.r")
        v = b.node("Transpose", [v], a + "v.t", perm=[0, 2, 1, 3])
        q = b.node("RotaryEmbedding", [q, cos, sin], a + "q.rope")
        k = b.node("RotaryEmbedding", [k, cos, sin], a + "k.rope")
        b.nodes.append(helper.make_node(
            "Attention", [q, k, v, "", "past_key_values.%d.key" % i, "past_key_values.%d.value" % i],
            [a + "y", "present.%d.key" % i, "present.%d.value" % i], name=a + "attention",
            scale=float(1 / np.sqrt(D))))
        y = b.node("Transpose", [a + "y"], a + "y.t", perm=[0, 2, 1, 3])
        y = b.node("Reshape", [y, b.init(a + "y.shape", [1, 1, H * D], np.int64)], a + "y.r")
        x = b.node("Add", [x, linear(y, a + "o_proj", a + "o")], p + "res1")
        xn = b.node("RMSNormalization", [x, b.init(p + "ln2", w[p + "post_attention_layernorm.weight"])],
                    p + "xn2", epsilon=eps)
        m = p + "mlp."
        g = linear(xn, m + "gate_proj", m + "gate")
        u = linear(xn, m + "up_proj", m + "up")
        act = b.node("Mul", [b.node("Mul", [g, b.node("Sigmoid", [g], m + "sig")], m + "silu"), u], m + "act")
        x = b.node("Add", [x, linear(act, m + "down_proj", m + "down")], p + "res2")
    x = b.node("RMSNormalization", [x, b.init("final_norm", w["model.norm.weight"])], "xf",
               epsilon=eps)
    head = w["model.embed_tokens.weight" if cfg["tie"] else "lm_head.weight"]
    b.nodes.append(helper.make_node("MatMul", [x, b.init("lm_head_t", head.T)], ["logits"],
                                    name="lm_head"))
    kv = lambda n: [1, KV, n, D]
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, 1]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, 1])]
    outputs = [helper.make_tensor_value_info("logits", F32, [1, 1, cfg["vocab"]])]
    for i in range(cfg["layers"]):
        for t in ("key", "value"):
            inputs.append(helper.make_tensor_value_info("past_key_values.%d.%s" % (i, t), F32,
                                                        kv("past_len")))
            outputs.append(helper.make_tensor_value_info("present.%d.%s" % (i, t), F32,
                                                         kv("past_len + 1")))
    graph = helper.make_graph(b.nodes, "qwen3_tiny", inputs, outputs, initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)],
                              producer_name="mkc-gen_qwen3_onnx")
    model.ir_version = 10
    return model


def check_with_onnxruntime(model, case):
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in s.get_inputs()]
    feed = {n: ref.read_pb(os.path.join(case, "input_%d.pb" % k)) for k, n in enumerate(names)}
    for k, got in enumerate(s.run(None, feed)):
        want = ref.read_pb(os.path.join(case, "output_%d.pb" % k))
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        if not err <= 1e-5:
            raise SystemExit("onnxruntime disagrees with the reference on output %d: %.3g" % (k, err))


def main(argv):
    out = argv[1] if len(argv) > 1 else os.path.join(HERE, "qwen3_tiny_onnx")
    cfg, w = ref.load_config(SRC), ref.load_weights(SRC)
    model = build(cfg, w)
    onnx.checker.check_model(model)
    case = os.path.join(SRC, "test_data_set_0")
    check_with_onnxruntime(model, case)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    onnx.save(model, os.path.join(out, "model.json"), format="json")
    shutil.copytree(case, os.path.join(out, "test_data_set_0"), dirs_exist_ok=True)
    print("wrote", out)


if __name__ == "__main__":
    main(sys.argv)

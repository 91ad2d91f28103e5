#!/usr/bin/env python3
"""Writes the references of the bf16-weight golden tests:

    python3 tests/models/gen_bf16_refs.py [OUTDIR]   (default: tests/models/bf16_ref)
    python3 tests/models/gen_bf16_refs.py --check    (compare with the committed ones)

`mkc --weights bf16` stores the matrices, embedding tables and norm scales
as bf16, rounding to nearest even. Against the float32 reference such a
model is only within about 1e-2, a tolerance that would also pass a
conversion that truncates (6e-3) or stores float16 (4e-4). So the reference
here is onnxruntime running the same graph over the same weights rounded
to bf16 in numpy: mkc must meet it at 1e-5.

Rounded, as mkc's weights pass picks them (passes/weights.c): every float32
initializer whose readers all take bf16 weights: the matrix of a MatMul
(input 1, also through the Transpose of a tied output layer), the table of
a Gather, and the norm scales (RMSNormalization's input 1, or in the
decomposed opset-18 graph the `*norm.weight` initializers that a Mul
applies). Everything else (rotary frequencies, scalars) stays float32.

Each OUTDIR/<model>/ holds model.onnx and test_data_set_0/input_K.pb as
links to the model's own files (the same graph, inputs and past), and the
new output_K.pb.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["tiny_llama_decode_op18", "tiny_llama_decode_op23"]


def to_bf16(a):
    """float32 -> the nearest bf16 value (ties to even), as float32."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def takes_bf16(model, name, consumers):
    for op, k in consumers.get(name, []):
        if op == "Transpose":
            continue   # the tied output layer: canon reads the table by rows
        if (op, k) in (("MatMul", 1), ("Gather", 0), ("RMSNormalization", 1)):
            continue
        if op == "Mul" and name.endswith("norm.weight"):
            continue
        return False
    return name in consumers


def reference(model_dir):
    m = onnx.load(os.path.join(model_dir, "model.onnx"))
    consumers = {}
    for n in m.graph.node:
        for k, i in enumerate(n.input):
            consumers.setdefault(i, []).append((n.op_type, k))
    rounded = 0
    for init in m.graph.initializer:
        if init.data_type == onnx.TensorProto.FLOAT and takes_bf16(m, init.name, consumers):
            init.CopyFrom(numpy_helper.from_array(to_bf16(numpy_helper.to_array(init)), init.name))
            rounded += 1
    case = os.path.join(model_dir, "test_data_set_0")
    feeds = {}
    for k, inp in enumerate(m.graph.input):
        t = onnx.TensorProto()
        t.ParseFromString(open(os.path.join(case, f"input_{k}.pb"), "rb").read())
        feeds[inp.name] = numpy_helper.to_array(t)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    return rounded, [(o.name, v) for o, v in zip(m.graph.output, outs)], len(m.graph.input)


def link(src, dst):
    if os.path.lexists(dst):
        os.remove(dst)
    os.symlink(os.path.relpath(src, os.path.dirname(dst)), dst)


def main(argv):
    check = "--check" in argv
    args = [a for a in argv[1:] if a != "--check"]
    out = args[0] if args else os.path.join(HERE, "bf16_ref")
    bad = 0
    for name in MODELS:
        src = os.path.join(HERE, name)
        rounded, outs, nin = reference(src)
        dst = os.path.join(out, name, "test_data_set_0")
        if check:
            for k, (oname, v) in enumerate(outs):
                t = onnx.TensorProto()
                t.ParseFromString(open(os.path.join(dst, f"output_{k}.pb"), "rb").read())
                old = numpy_helper.to_array(t)
                # onnxruntime may sum in another order on another CPU
                err = np.linalg.norm(old - v) / np.linalg.norm(v)
                if old.shape != v.shape or not err <= 1e-6:
                    print(f"gen_bf16_refs: {name} {oname} differs from a fresh run ({err:.3g})")
                    bad += 1
            continue
        os.makedirs(dst, exist_ok=True)
        link(os.path.join(src, "model.onnx"), os.path.join(out, name, "model.onnx"))
        for k in range(nin):
            link(os.path.join(src, "test_data_set_0", f"input_{k}.pb"),
                 os.path.join(dst, f"input_{k}.pb"))
        for k, (oname, v) in enumerate(outs):
            with open(os.path.join(dst, f"output_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, oname).SerializeToString())
        print(f"{name}: {rounded} initializers rounded to bf16, {len(outs)} outputs written")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

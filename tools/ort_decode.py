#!/usr/bin/env python3
"""Greedy decoding of a decode-step ONNX export with onnxruntime: the
reference for examples/decode.c (same interface, same loop).

    python3 tools/ort_decode.py MODEL.onnx STEPS [FIRST_TOKEN]

Prints "tokens: t0 t1 ..." like the example does.
"""
import sys

import numpy as np
import onnxruntime as ort


def main(argv):
    path, steps = argv[1], int(argv[2])
    tok = int(argv[3]) if len(argv) > 3 else 1
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    past = {}
    for i in s.get_inputs():
        if i.name.startswith("past_key_values."):
            shape = [0 if isinstance(d, str) else d for d in i.shape]
            past[i.name] = np.zeros(shape, np.float32)
    names = [o.name for o in s.get_outputs()]
    out = [tok]
    for t in range(steps):
        feed = {"input_ids": np.array([[tok]], np.int64),
                "position_ids": np.array([[t]], np.int64), **past}
        res = dict(zip(names, s.run(None, feed)))
        tok = int(np.argmax(res["logits"][0, -1]))
        out.append(tok)
        past = {k: res["present." + k[len("past_key_values."):]] for k in past}
    print("tokens:", " ".join(map(str, out)))


if __name__ == "__main__":
    main(sys.argv)

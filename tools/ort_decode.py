#!/usr/bin/env python3
"""Greedy decoding of a decode-step ONNX export with onnxruntime: the
reference for examples/decode.c and examples/generate.c (same interface,
same loop).

    python3 tools/ort_decode.py MODEL.onnx STEPS [FIRST_TOKEN]
        prints "tokens: FIRST t1 .. tSTEPS" as decode.c does
    python3 tools/ort_decode.py MODEL.onnx N_NEW --prompt PROMPT
        feeds PROMPT ("1,2,3", or "seq:N" for the tokens (7 + 13 i) mod 256
        that generate.c makes up) one token per step, then prints the N_NEW
        greedy tokens that follow, as generate.c does

The model's inputs are input_ids, optionally position_ids and
attention_mask (all ones: onnxruntime-genai's exports), and the pasts
past_key_values.L.key/value [batch, heads, past, head size]; a symbolic
batch is 1, and a symbolic head size (the builder's kv_cache_dim) is
GroupQueryAttention's, twice the width of its cos cache.
"""
import sys

import numpy as np
import onnxruntime as ort


def parse_prompt(s):
    if s.startswith("seq:"):
        return [(7 + 13 * i) % 256 for i in range(int(s[4:]))]
    return [int(t) for t in s.split(",")]


def gqa_head_size(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {t.name: t for t in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "GroupQueryAttention" and len(n.input) > 7 and n.input[7] in inits:
            return 2 * inits[n.input[7]].dims[1]
    raise SystemExit(f"ort_decode: {path}: a symbolic head size, and no cos cache to take it from")


def main(argv):
    path, steps = argv[1], int(argv[2])
    if len(argv) > 4 and argv[3] == "--prompt":
        prompt, echo = parse_prompt(argv[4]), False
    else:
        prompt, echo = [int(argv[3]) if len(argv) > 3 else 1], True
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in s.get_inputs()}
    past = {}
    for i in s.get_inputs():
        if i.name.startswith("past_key_values."):
            shape = list(i.shape)
            shape[0] = 1
            shape[2] = 0
            if isinstance(shape[3], str):
                shape[3] = gqa_head_size(path)
            past[i.name] = np.zeros(shape, np.float32)
    names = [o.name for o in s.get_outputs()]
    out = [prompt[0]] if echo else []
    feed_tok = prompt[0]
    for t in range(len(prompt) + steps - 1):
        feed = {"input_ids": np.array([[feed_tok]], np.int64), **past}
        if "position_ids" in inputs:
            feed["position_ids"] = np.array([[t]], np.int64)
        if "attention_mask" in inputs:
            feed["attention_mask"] = np.ones((1, t + 1), np.int64)
        res = dict(zip(names, s.run(None, feed)))
        tok = int(np.argmax(res["logits"][0, -1]))
        past = {k: res["present." + k[len("past_key_values."):]] for k in past}
        if t >= len(prompt) - 1:
            out.append(tok)
        feed_tok = prompt[t + 1] if t + 1 < len(prompt) else tok
    print("tokens:", " ".join(map(str, out)))


if __name__ == "__main__":
    main(sys.argv)

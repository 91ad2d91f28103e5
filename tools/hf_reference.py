#!/usr/bin/env python3
"""A numpy reference for one decode step of a Hugging Face llama, qwen2 or
qwen3 folder (config.json + model.safetensors, or an index and its shards),
computed in float64.

Run:  python3 tools/hf_reference.py --check DIR [--tolerance T]
      runs every DIR/test_data_set_N/input_K.pb through the reference and
      compares each result with output_K.pb (relative L2 error, as `mkc test`
      measures it, and the largest element error over the largest |ref|);
      exit status 0 only if every output is within T (default 1e-5).
      python3 tools/hf_reference.py --write DIR [--case N] [--past-len P] [--seed S]
      writes DIR/test_data_set_N (default 0): a random token at position P
      (default 5) after P random past keys and values, and the reference's
      outputs, so that `mkc test DIR` can check any such folder.

As a module (tests/models/gen_hf.py uses it): read_safetensors,
write_safetensors, bf16_round, load_config, parse_config, load_weights,
decode_step, random_inputs, run,
write_test_data.

The step is the one mkc's Hugging Face frontend (compiler/hf.c) builds and
the decode-step ONNX exports compute; the inputs and outputs are theirs:
input_ids, position_ids [1, S]; past_key_values.{i}.key/value [1, kv_heads,
past_len, head_dim] -> logits [1, 1, vocab] (the last token's),
present.{i}.key/value [1, kv_heads, past_len + S, head_dim]. The config
rules (defaults, rope_theta spellings, llama3 rope scaling, biases per
family) follow transformers' modeling code, and are written again here on
purpose, independently of the C frontend they check. Only numpy, the
standard library and (for the .pb files) onnx are used: no torch,
transformers or safetensors packages.
"""

import argparse
import glob
import json
import math
import os
import struct
import sys

import numpy as np

# safetensors dtype -> numpy dtype; BF16 is read as its uint16 bit patterns
ST_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
    "U64": np.uint64, "U32": np.uint32, "U16": np.uint16, "U8": np.uint8,
    "BOOL": np.bool_,
}
NP_TO_ST = {np.dtype(np.float64): "F64", np.dtype(np.float32): "F32",
            np.dtype(np.float16): "F16", np.dtype(np.int64): "I64",
            np.dtype(np.int32): "I32", np.dtype(np.uint8): "U8"}


# -------------------------------------------------------------- safetensors

def bf16_bits(a):
    """float32 values rounded to bfloat16 (nearest even), as uint16 bits."""
    b = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def bf16_round(a):
    """The values a bfloat16 file stores for float values a (float32)."""
    return bf16_to_f32(bf16_bits(a)).reshape(np.shape(a))


def read_safetensors(path):
    """{name: array}; BF16 tensors come back as float32 (exact)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        begin, end = e["data_offsets"]
        raw = data[8 + n + begin:8 + n + end]
        a = np.frombuffer(raw, dtype=ST_DTYPES[e["dtype"]]).reshape(e["shape"])
        out[name] = bf16_to_f32(a).reshape(e["shape"]) if e["dtype"] == "BF16" else a
    return out


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: array} or {name: ("BF16", float array)}. Writes the
    layout the safetensors package writes: names sorted, the header padded
    with spaces to a multiple of 8 bytes, tensors back to back."""
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name]
        if isinstance(t, tuple):
            dtype, a = t
            assert dtype == "BF16"
            raw = bf16_bits(a).tobytes()
            shape = list(np.shape(a))
        else:
            a = np.ascontiguousarray(t)
            dtype, raw, shape = NP_TO_ST[a.dtype], a.tobytes(), list(a.shape)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


# ------------------------------------------------------------------- config

def load_config(folder):
    with open(os.path.join(folder, "config.json")) as f:
        return parse_config(json.load(f))


def parse_config(c):
    """The settings one decode step depends on, with transformers' defaults."""
    get = lambda k, d=None: d if c.get(k) is None else c[k]
    family = c["model_type"]
    if family not in ("llama", "qwen2", "qwen3"):
        raise ValueError("model_type %r is not llama, qwen2 or qwen3" % family)
    if get("hidden_act", "silu") != "silu" or get("use_sliding_window", False):
        raise ValueError("only silu MLPs and full attention are modelled")
    heads = c["num_attention_heads"]
    cfg = {
        "family": family,
        "hidden": c["hidden_size"], "layers": c["num_hidden_layers"],
        "heads": heads, "kv_heads": get("num_key_value_heads", heads),
        "head_dim": get("head_dim", c["hidden_size"] // heads),
        "inter": c["intermediate_size"], "vocab": c["vocab_size"],
        "eps": get("rms_norm_eps", 1e-6),
        "tie": get("tie_word_embeddings", False),
    }
    attn_bias = get("attention_bias", False)
    cfg["qkv_bias"] = family == "qwen2" or attn_bias
    cfg["o_bias"] = family != "qwen2" and attn_bias
    cfg["mlp_bias"] = family == "llama" and get("mlp_bias", False)
    cfg["qk_norm"] = family == "qwen3"
    rope = c.get("rope_parameters") or c.get("rope_scaling") or {}
    cfg["theta"] = rope.get("rope_theta", get("rope_theta", 10000.0))
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind not in ("default", "llama3"):
        raise ValueError("rope type %r is not modelled" % kind)
    cfg["rope"] = dict(rope, rope_type=kind)
    return cfg


def inv_freq(cfg):
    """modeling_rope_utils: default, and llama3's frequency-dependent scaling."""
    d = cfg["head_dim"]
    f = 1.0 / cfg["theta"] ** (np.arange(0, d, 2, dtype=np.float64) / d)
    r = cfg["rope"]
    if r["rope_type"] == "llama3":
        factor, lo, hi = r["factor"], r["low_freq_factor"], r["high_freq_factor"]
        old = r["original_max_position_embeddings"]
        wavelen = 2 * math.pi / f
        scaled = np.where(wavelen > old / lo, f / factor, f)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / hi) & ~(wavelen > old / lo)
        f = np.where(medium, smoothed, scaled)
    return f


# ------------------------------------------------------------------ weights

def load_weights(folder):
    """{name: float64 array} from model.safetensors or the index's shards."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    w = {}
    for name in files:
        for k, v in read_safetensors(os.path.join(folder, name)).items():
            w[k] = v.astype(np.float64)
    return w


# --------------------------------------------------------------------- step

def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def linear(w, name, x, bias):
    y = x @ w[name + ".weight"].T
    return y + w[name + ".bias"] if bias else y


def rope(x, cos, sin):
    """Rotate-half rope on [..., head_dim] with cos, sin [head_dim / 2]."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def decode_step(cfg, w, input_ids, positions, past):
    """S tokens of one sequence (a decode step when S = 1, else a prompt
    chunk): input_ids and positions [S]; past is [(key, value)] per layer,
    [1, kv_heads, P, D]. Token s attends to the past and the chunk's tokens
    up to itself. Returns the last token's logits [1, 1, vocab] and
    [(present key, present value)], [1, kv_heads, P + S, D], float64."""
    H, KV, D = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    S = len(input_ids)
    angle = np.outer(positions, inv_freq(cfg))                   # [S, D/2]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    h = w["model.embed_tokens.weight"][list(input_ids)]          # [S, hidden]
    presents = []
    for i in range(cfg["layers"]):
        p = "model.layers.%d." % i
        a = p + "self_attn."
        x = rms_norm(h, w[p + "input_layernorm.weight"], cfg["eps"])
        q = linear(w, a + "q_proj", x, cfg["qkv_bias"]).reshape(S, H, D)
        k = linear(w, a + "k_proj", x, cfg["qkv_bias"]).reshape(S, KV, D)
        v = linear(w, a + "v_proj", x, cfg["qkv_bias"]).reshape(S, KV, D)
        if cfg["qk_norm"]:
            q = rms_norm(q, w[a + "q_norm.weight"], cfg["eps"])
            k = rms_norm(k, w[a + "k_norm.weight"], cfg["eps"])
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        pk, pv = (np.asarray(t, dtype=np.float64)[0] for t in past[i])
        P = pk.shape[1]
        keys = np.concatenate([pk, k.transpose(1, 0, 2)], axis=1)   # [KV, P+S, D]
        values = np.concatenate([pv, v.transpose(1, 0, 2)], axis=1)
        presents.append((keys[None], values[None]))
        y = np.empty((S, H, D))
        for t in range(S):
            for j in range(H):
                kh = j // (H // KV)
                s = keys[kh, :P + t + 1] @ q[t, j] / math.sqrt(D)
                e = np.exp(s - s.max())
                y[t, j] = (e / e.sum()) @ values[kh, :P + t + 1]
        h = h + linear(w, a + "o_proj", y.reshape(S, H * D), cfg["o_bias"])
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], cfg["eps"])
        m = p + "mlp."
        g = linear(w, m + "gate_proj", x, cfg["mlp_bias"])
        u = linear(w, m + "up_proj", x, cfg["mlp_bias"])
        act = g / (1 + np.exp(-g)) * u
        h = h + linear(w, m + "down_proj", act, cfg["mlp_bias"])
    h = rms_norm(h[-1], w["model.norm.weight"], cfg["eps"])
    head = w["model.embed_tokens.weight" if cfg["tie"] else "lm_head.weight"]
    return (head @ h).reshape(1, 1, -1), presents


# ---------------------------------------------------------------- test data

def input_names(cfg):
    names = ["input_ids", "position_ids"]
    for i in range(cfg["layers"]):
        names += ["past_key_values.%d.key" % i, "past_key_values.%d.value" % i]
    return names


def output_names(cfg):
    names = ["logits"]
    for i in range(cfg["layers"]):
        names += ["present.%d.key" % i, "present.%d.value" % i]
    return names


def random_inputs(cfg, past_len, seed, seq_len=1):
    """seq_len random tokens at positions past_len.. after past_len random
    keys and values (standard normal), in test-data order."""
    rng = np.random.default_rng(seed)
    ids = [rng.integers(cfg["vocab"]) for _ in range(seq_len)]
    inputs = [np.array([ids], dtype=np.int64),
              np.arange(past_len, past_len + seq_len, dtype=np.int64)[None]]
    for _ in range(2 * cfg["layers"]):
        inputs.append(rng.standard_normal((1, cfg["kv_heads"], past_len, cfg["head_dim"]))
                      .astype(np.float32))
    return inputs


def run(cfg, w, inputs):
    """The outputs, float64, for the inputs in test-data order."""
    past = [(inputs[2 + 2 * i], inputs[3 + 2 * i]) for i in range(cfg["layers"])]
    logits, presents = decode_step(cfg, w, inputs[0][0], inputs[1][0], past)
    return [logits] + [t for kv in presents for t in kv]


def write_test_data(case_dir, cfg, inputs, outputs):
    """input_K.pb / output_K.pb in ONNX backend-test layout, float32 outputs."""
    from onnx import numpy_helper
    os.makedirs(case_dir, exist_ok=True)
    for kind, names, arrays in (("input", input_names(cfg), inputs),
                                ("output", output_names(cfg), outputs)):
        for k, (name, a) in enumerate(zip(names, arrays)):
            if a.dtype == np.float64:
                a = a.astype(np.float32)
            t = numpy_helper.from_array(a, name)
            with open(os.path.join(case_dir, "%s_%d.pb" % (kind, k)), "wb") as f:
                f.write(t.SerializeToString())


def read_pb(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def check(folder, tol):
    """Compares the reference with every stored case; True if all within tol."""
    cfg, w = load_config(folder), load_weights(folder)
    ok = True
    for case in sorted(glob.glob(os.path.join(folder, "test_data_set_*"))):
        n_in = len(glob.glob(os.path.join(case, "input_*.pb")))
        inputs = [read_pb(os.path.join(case, "input_%d.pb" % k)) for k in range(n_in)]
        got = run(cfg, w, inputs)
        for k, (name, g) in enumerate(zip(output_names(cfg), got)):
            ref = read_pb(os.path.join(case, "output_%d.pb" % k)).astype(np.float64)
            if ref.shape != g.shape:
                print("FAIL %s %s: shape %s, stored %s" % (case, name, g.shape, ref.shape))
                ok = False
                continue
            l2 = np.linalg.norm(g - ref) / np.linalg.norm(ref)
            mx = np.abs(g - ref).max() / np.abs(ref).max()
            good = l2 <= tol and mx <= tol
            ok &= bool(good)
            print("%s %s %s: relative L2 error %.3g, max error / max |ref| %.3g"
                  % ("ok  " if good else "FAIL", case, name, l2, mx))
    return ok


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="DIR",
                      help="compare the reference with DIR's test_data_set_*")
    mode.add_argument("--write", metavar="DIR", help="write DIR/test_data_set_N")
    ap.add_argument("--tolerance", type=float, default=1e-5)
    ap.add_argument("--case", type=int, default=0)
    ap.add_argument("--past-len", type=int, default=5)
    ap.add_argument("--seq-len", type=int, default=1, help="new tokens in the step")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv[1:])
    if args.check:
        return 0 if check(args.check, args.tolerance) else 1
    cfg, w = load_config(args.write), load_weights(args.write)
    inputs = random_inputs(cfg, args.past_len, args.seed, args.seq_len)
    case = os.path.join(args.write, "test_data_set_%d" % args.case)
    write_test_data(case, cfg, inputs, run(cfg, w, inputs))
    print("wrote", case)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

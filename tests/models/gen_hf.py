#!/usr/bin/env python3
"""Generate the small Hugging Face model folders used by mkc's tests.

Run:  python3 tests/models/gen_hf.py [OUTDIR]
      (OUTDIR defaults to tests/models next to this script)

It writes OUTDIR/hf/NAME/ (config.json, safetensors weights, and a
test_data_set_0 computed by tools/hf_reference.py), OUTDIR/hf_chunk/NAME/
(two of them again, with steps of several tokens as test data) and
OUTDIR/hf_bad/NAME/ (tiny folders each broken in one way).  tests/models/README.md lists them.

Output is deterministic: fixed seeds, sorted JSON keys, and the safetensors
layout of the safetensors package (names sorted, header padded to 8 bytes).
Only numpy, onnx and the standard library are used.
"""

import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import hf_reference as ref  # noqa: E402

ARCH = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
        "qwen3": "Qwen3ForCausalLM"}


def config(model_type, hidden, layers, heads, kv_heads, inter, vocab, **extra):
    """A config.json as save_pretrained writes one, with the fields mkc reads;
    extra fields given as ... are left out."""
    c = {
        "architectures": [ARCH.get(model_type, "GPT2LMHeadModel")],
        "model_type": model_type,
        "hidden_act": "silu",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "intermediate_size": inter,
        "vocab_size": vocab,
        "max_position_embeddings": 512,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "transformers_version": "4.51.0",
        "use_cache": True,
    }
    c.update(extra)
    return {k: v for k, v in c.items() if v is not ...}


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


def weights(seed, cfg):
    """Random float32 weights, named and shaped as transformers stores them."""
    rng = np.random.default_rng(seed)
    H, KV, D, E = cfg["heads"], cfg["kv_heads"], cfg["head_dim"], cfg["hidden"]
    F, V = cfg["inter"], cfg["vocab"]
    w = {}

    def mat(name, rows, cols, std=0.08):
        w[name] = (rng.standard_normal((rows, cols)) * std).astype(np.float32)

    def vec(name, n, mean=0.0, std=0.1):
        w[name] = (mean + rng.standard_normal(n) * std).astype(np.float32)

    mat("model.embed_tokens.weight", V, E, 0.5)
    for i in range(cfg["layers"]):
        p, a, m = "model.layers.%d." % i, "model.layers.%d.self_attn." % i, "model.layers.%d.mlp." % i
        vec(p + "input_layernorm.weight", E, 1.0)
        vec(p + "post_attention_layernorm.weight", E, 1.0)
        for proj, rows in (("q_proj", H * D), ("k_proj", KV * D), ("v_proj", KV * D)):
            mat(a + proj + ".weight", rows, E)
            if cfg["qkv_bias"]:
                vec(a + proj + ".bias", rows)
        mat(a + "o_proj.weight", E, H * D)
        if cfg["o_bias"]:
            vec(a + "o_proj.bias", E)
        if cfg["qk_norm"]:
            vec(a + "q_norm.weight", D, 1.0)
            vec(a + "k_norm.weight", D, 1.0)
        for proj, rows, cols in (("gate_proj", F, E), ("up_proj", F, E), ("down_proj", E, F)):
            mat(m + proj + ".weight", rows, cols)
            if cfg["mlp_bias"]:
                vec(m + proj + ".bias", rows)
    vec("model.norm.weight", E, 1.0)
    if not cfg["tie"]:
        mat("lm_head.weight", V, E)
    return w


# steps of several tokens (mkc --max-chunk): (past_len, seq_len) per test data set:
# a chunk after a past, a decode step through the chunked graph, a first chunk
CHUNK_CASES = ((5, 7), (6, 1), (0, 4))


def hf_folder(out, name, conf, seed, bf16=False, shards=1, past_len=5, chunks=False):
    """A model folder with its test_data_set_0 (one new token); returns the
    outputs. chunks: hf_chunk/NAME instead, with CHUNK_CASES as its sets."""
    d = os.path.join(out, "hf_chunk" if chunks else "hf", name)
    write_json(os.path.join(d, "config.json"), conf)
    cfg = ref.parse_config(conf)
    w = weights(seed, cfg)
    if bf16:
        # the file holds bf16; the reference computes with exactly those values
        w = {k: ref.bf16_round(v) for k, v in w.items()}
    stored = {k: ("BF16", v) if bf16 else v for k, v in w.items()}
    if shards == 1:
        ref.write_safetensors(os.path.join(d, "model.safetensors"), stored, {"format": "pt"})
    else:
        names = sorted(stored)
        parts = [names[i::shards] for i in range(shards)]
        weight_map, total = {}, 0
        for s, part in enumerate(parts):
            fname = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
            ref.write_safetensors(os.path.join(d, fname), {k: stored[k] for k in part},
                                  {"format": "pt"})
            for k in part:
                weight_map[k] = fname
                total += w[k].size * (2 if bf16 else 4)
        write_json(os.path.join(d, "model.safetensors.index.json"),
                   {"metadata": {"total_size": total}, "weight_map": weight_map})
    w64 = {k: v.astype(np.float64) for k, v in w.items()}
    for i, (past, seq) in enumerate(CHUNK_CASES if chunks else ((past_len, 1),)):
        inputs = ref.random_inputs(cfg, past, seed + 1 + i, seq)
        outputs = ref.run(cfg, w64, inputs)
        ref.write_test_data(os.path.join(d, "test_data_set_%d" % i), cfg, inputs, outputs)
    return cfg, w, inputs, outputs


def gen_good(out):
    qwen3 = config(
        "qwen3", 64, 2, 4, 2, 128, 256, head_dim=32, rope_theta=1000000.0,
        attention_bias=False, use_sliding_window=False, sliding_window=None,
        max_window_layers=2)
    hf_folder(out, "qwen3_tiny", qwen3, seed=30)
    hf_folder(out, "qwen3_tiny", qwen3, seed=30, chunks=True)
    hf_folder(out, "qwen2_tiny", config(
        "qwen2", 64, 2, 4, 1, 160, 320, rope_theta=1000000.0, rope_scaling=None,
        tie_word_embeddings=True, use_sliding_window=False, sliding_window=None),
        seed=20)
    llama_bf16 = config(
        "llama", 64, 2, 4, 2, 128, 256, attention_bias=True, tie_word_embeddings=True,
        rope_parameters={"rope_theta": 500000.0, "rope_type": "default"},
        torch_dtype=..., dtype="bfloat16", transformers_version="5.17.0")
    hf_folder(out, "llama_tiny_bf16", llama_bf16, seed=40, bf16=True)
    hf_folder(out, "llama_tiny_bf16", llama_bf16, seed=40, bf16=True, chunks=True)
    scaling = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64, "rope_type": "llama3"}
    conf = config("llama", 64, 2, 4, 2, 128, 256, rope_theta=10000.0,
                  rope_scaling=scaling)
    cfg, w, inputs, outputs = hf_folder(out, "llama_tiny_llama3_rope", conf, seed=50,
                                        past_len=6)
    # the scaling must matter: with head_dim 16 and original length 64,
    # frequencies fall in all three of llama3's bands
    plain = ref.run(dict(cfg, rope={"rope_type": "default"}), w, inputs)
    moved = np.linalg.norm(plain[0] - outputs[0]) / np.linalg.norm(outputs[0])
    assert moved > 1e-2, "llama3 scaling changes the logits by only %g" % moved
    hf_folder(out, "llama_tiny_sharded", config(
        "llama", 64, 2, 4, 2, 128, 256, rope_theta=10000.0, attention_bias=True,
        mlp_bias=True), seed=60, shards=2)
    # head_dim 64: the GPU attention bodies take it 64 lanes wide too (the HIP
    # target's warps), where the other folders' 16 and 32 take the portable body;
    # in chunks, the CUDA target's tensor-core attention (64 or 128 only)
    d64 = config(
        "llama", 128, 2, 4, 2, 256, 256, head_dim=64, tie_word_embeddings=True,
        rope_parameters={"rope_theta": 500000.0, "rope_type": "default"},
        torch_dtype=..., dtype="bfloat16", transformers_version="5.17.0")
    hf_folder(out, "llama_tiny_d64", d64, seed=70, bf16=True)
    hf_folder(out, "llama_tiny_d64", d64, seed=70, bf16=True, chunks=True)


# ---------------------------------------------------------------- bad folders

def tiny_parts(seed=7, f16=()):
    """A tiny llama's config, and its safetensors header and data section
    (weights named in f16 stored as F16)."""
    conf = config("llama", 8, 1, 2, 1, 16, 16, rope_theta=10000.0)
    cfg = ref.parse_config(conf)
    w = weights(seed, cfg)
    header, blobs, offset = {}, [], 0
    for name in sorted(w):
        raw = w[name].astype(np.float16 if name in f16 else np.float32).tobytes()
        header[name] = {"dtype": "F16" if name in f16 else "F32", "shape": list(w[name].shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    return conf, header, b"".join(blobs)


def write_raw(path, header, data, header_len=None, text=None):
    """A safetensors file as given, checks and all left to the reader."""
    if text is None:
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-(8 + len(text)) % 8)
    n = len(text) if header_len is None else header_len
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n) + text + data)


def bad_folder(out, name, conf=None, header=None, data=None, **raw):
    c, h, d = tiny_parts()
    path = os.path.join(out, "hf_bad", name)
    write_json(os.path.join(path, "config.json"), c if conf is None else conf)
    write_raw(os.path.join(path, "model.safetensors"), h if header is None else header,
              d if data is None else data, **raw)
    return path


def gen_bad(out):
    conf, header, data = tiny_parts()
    bad_folder(out, "header_beyond_file", header_len=len(data) + 4096)
    h = json.loads(json.dumps(header))
    h["model.norm.weight"]["shape"] = [9]
    bad_folder(out, "offsets_vs_shape", header=h)
    bad_folder(out, "header_not_json", text=b'{"model.norm.weight": {"dtype": "F32",   ')
    _, h, d = tiny_parts(f16=("model.norm.weight",))
    bad_folder(out, "dtype_f16", header=h, data=d)
    h = json.loads(json.dumps(header))
    h["model.norm.weight"]["dtype"] = "Q4_K"
    bad_folder(out, "dtype_unknown", header=h)
    h = json.loads(json.dumps(header))
    del h["model.layers.0.mlp.up_proj.weight"]
    bad_folder(out, "missing_weight", header=h)
    h = json.loads(json.dumps(header))
    h["model.layers.0.self_attn.k_proj.weight"]["shape"] = [8, 4]
    bad_folder(out, "shape_vs_config", header=h)
    bad_folder(out, "model_type", conf=dict(conf, model_type="gpt2",
                                            architectures=["GPT2LMHeadModel"]))
    bad_folder(out, "no_hidden_size", conf={k: v for k, v in conf.items() if k != "hidden_size"})
    bad_folder(out, "rope_yarn", conf=dict(conf, rope_scaling={"factor": 4.0, "rope_type": "yarn"}))
    # sharded: the index names a second shard that is not there
    path = bad_folder(out, "missing_shard")
    shard = os.path.join(path, "model-00001-of-00002.safetensors")
    os.replace(os.path.join(path, "model.safetensors"), shard)
    names = sorted(header)
    write_json(os.path.join(path, "model.safetensors.index.json"), {
        "metadata": {"total_size": len(data)},
        "weight_map": {k: "model-%05d-of-00002.safetensors" % (1 + (k == names[-1]))
                       for k in names}})


def main(argv):
    out = argv[1] if len(argv) > 1 else HERE
    for sub in ("hf", "hf_chunk", "hf_bad"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
    gen_good(out)
    gen_bad(out)
    print("wrote Hugging Face folders to", os.path.join(out, "hf"), ",",
          os.path.join(out, "hf_chunk"), "and", os.path.join(out, "hf_bad"))


if __name__ == "__main__":
    main(sys.argv)

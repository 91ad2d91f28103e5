"""tools/gguf_to_hf.py against a GGUF file written here as llama.cpp writes
one: the tiny Llama of tests/models/hf/llama_tiny_d64 with its query and key
rows permuted for llama.cpp's rotary, float32 tensors and Q8_0 / Q4_1 ones,
and a byte-level BPE tokenizer of a few merges. The folder it makes must
hold the original weights (float32 ones exactly, so the permutation is
undone; quantised ones within their step), a tokenizer that reads and
writes text as the merges say, and run through mkc: its C target's greedy
tokens are those of the original folder.
"""

import json
import os
import subprocess
import sys

import numpy as np

import gguf   # tools/setup.sh installs it
from gguf.quants import quantize

import mkc
from test_model import ROOT, build

LLAMA = os.path.join(ROOT, "tests", "models", "hf", "llama_tiny_d64")


def read_safetensors(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        dt = {"F32": np.float32, "BF16": np.uint16}[h["dtype"]]
        x = np.frombuffer(data[a:b], dtype=dt)
        if h["dtype"] == "BF16":
            x = (x.astype(np.uint32) << 16).view(np.float32)
        out[name] = x.reshape(h["shape"])
    return out


def permute(w, heads):   # llama.cpp's convert_hf_to_gguf.py does this to q and k
    rows, cols = w.shape
    return w.reshape(heads, 2, rows // heads // 2, cols).swapaxes(1, 2).reshape(rows, cols)


def write_gguf(path, cfg, weights, quant):
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(cfg.get("rope_theta", 10000.0))
    # bytes as GPT-2 writes them, then three merges; control tokens 0 and 1
    from tokenizers.pre_tokenizers import ByteLevel
    alphabet = sorted(ByteLevel.alphabet())
    tokens = ["<|endoftext|>", "<|im_end|>"] + alphabet + ["ab", "abc", "Ġa"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types([3, 3] + [1] * (len(tokens) - 2))
    w.add_token_merges(["a b", "ab c", "Ġ a"])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    names = {"model.embed_tokens.weight": "token_embd.weight",
             "model.norm.weight": "output_norm.weight"}
    layer = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for name, x in weights.items():
        if name in names:
            g = names[name]
        else:
            p = name.split(".")   # model.layers.N.<module>.weight
            g = f"blk.{p[2]}.{layer['.'.join(p[3:-1])]}.{p[-1]}"
        x = np.ascontiguousarray(x, dtype=np.float32)
        if g.endswith("attn_q.weight"):
            x = permute(x, heads)
        elif g.endswith("attn_k.weight"):
            x = permute(x, kv)
        t = quant.get(g.split(".")[-2], gguf.GGMLQuantizationType.F32) if x.ndim == 2 else \
            gguf.GGMLQuantizationType.F32
        w.add_tensor(g, quantize(x, t) if t != gguf.GGMLQuantizationType.F32 else x,
                     raw_dtype=t if t != gguf.GGMLQuantizationType.F32 else None)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def convert(tmp, quant):
    with open(os.path.join(LLAMA, "config.json")) as f:
        cfg = json.load(f)
    weights = read_safetensors(os.path.join(LLAMA, "model.safetensors"))
    src = os.path.join(tmp, "m.gguf")
    write_gguf(src, cfg, weights, quant)
    out = os.path.join(tmp, "hf")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gguf_to_hf.py"), src, out],
                   check=True)
    return weights, out


def test_float32_weights_come_back_exactly(tmp_path):
    weights, out = convert(str(tmp_path), {})
    got = read_safetensors(os.path.join(out, "model.safetensors"))
    assert set(got) == set(weights)
    for name, w in weights.items():
        np.testing.assert_array_equal(got[name], w.astype(np.float32), err_msg=name)
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    assert cfg["tie_word_embeddings"] and cfg["num_key_value_heads"] == 2


def test_quantised_weights_within_their_step(tmp_path):
    q = {"attn_q": gguf.GGMLQuantizationType.Q4_1, "attn_k": gguf.GGMLQuantizationType.Q4_1,
         "ffn_up": gguf.GGMLQuantizationType.Q8_0}
    weights, out = convert(str(tmp_path), q)
    got = read_safetensors(os.path.join(out, "model.safetensors"))
    for name, w in weights.items():
        step = (w.max() - w.min()) / (15 if "q_proj" in name or "k_proj" in name else 127)
        np.testing.assert_allclose(got[name], w, atol=float(step) + 1e-7, err_msg=name)
    # a permutation left in would move whole rows: far more than a step
    qw = got["model.layers.0.self_attn.q_proj.weight"]
    ow = weights["model.layers.0.self_attn.q_proj.weight"]
    assert np.abs(qw - ow).max() < np.abs(permute(ow, 4) - ow).max() / 4


def test_tokenizer_and_greedy_tokens(tmp_path):
    from tokenizers import Tokenizer
    weights, out = convert(str(tmp_path), {})
    tok = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
    enc = tok.encode("abc ab a12<|im_end|>")
    assert enc.tokens == ["abc", "Ġ", "ab", "Ġa", "1", "2", "<|im_end|>"]
    assert tok.decode(enc.ids) == "abc ab a12"
    with open(os.path.join(out, "tokenizer_config.json")) as f:
        tc = json.load(f)
    assert tc["eos_token"] == "<|im_end|>" and "messages" in tc["chat_template"]
    libs = {k: build(str(tmp_path), d, k, "--max-seq", "64") for k, d in
            (("orig", LLAMA), ("conv", out))}
    toks = []
    for k, d in (("orig", LLAMA), ("conv", out)):
        with mkc.Model(libs[k], weights=d) as m:
            toks.append(m.generate([3, 1, 4, 1, 5], 16))
    assert toks[0] == toks[1]

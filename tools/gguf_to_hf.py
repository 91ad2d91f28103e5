#!/usr/bin/env python3
"""gguf_to_hf.py - a llama.cpp GGUF file of a Llama model as a Hugging Face
folder that mkc reads: config.json, model.safetensors (float32, every
quantised tensor dequantised by the `gguf` package), tokenizer.json,
tokenizer_config.json (with the chat template) and generation_config.json.

    python3 tools/gguf_to_hf.py SmolLM2-135M-Instruct.Q4_1.gguf smollm2/

llama.cpp's converter stores the rows of each attention's query and key
weights permuted for its rotary layout (the two halves of a head interleaved);
they are put back in Hugging Face's order here. The tokenizer: a GPT-2 style
byte-level BPE (tokenizer.ggml.model "gpt2") from the file's tokens and
merges, split as the file's pre-tokenizer says (digits one at a time for
SmolLM's "smollm"). Other tokenizer models and architectures are refused with
a sentence.
"""

import argparse
import json
import os
import struct
import sys

import numpy as np


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    v = f.contents()
    return v


def unpermute(w, heads):
    """llama.cpp's rotary permutation of a [heads * d, k] weight, undone."""
    rows, cols = w.shape
    d = rows // heads
    return w.reshape(heads, d // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
LAYER = {
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def hf_name(name):
    if name in NAMES:
        return NAMES[name]
    parts = name.split(".")   # blk.N.attn_q.weight
    if len(parts) == 4 and parts[0] == "blk" and parts[2] in LAYER:
        return f"model.layers.{parts[1]}.{LAYER[parts[2]]}.{parts[3]}"
    raise SystemExit(f"gguf_to_hf: tensor '{name}' is not one of a Llama's")


def write_safetensors(path, tensors):
    """tensors: name -> float32 array, in the safetensors layout."""
    header, offset = {}, 0
    for name, a in tensors.items():
        n = a.nbytes
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + n]}
        offset += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


def tokenizer_json(reader):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    kind = field(reader, "tokenizer.ggml.model")
    if kind != "gpt2":
        raise SystemExit(f"gguf_to_hf: tokenizer model '{kind}'; only gpt2 (byte-level BPE) "
                         f"is converted")
    tokens = field(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in field(reader, "tokenizer.ggml.merges")]
    types = field(reader, "tokenizer.ggml.token_type", [1] * len(tokens))
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges,
                               ignore_merges=False))
    level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    pre = field(reader, "tokenizer.ggml.pre", "default")
    if pre in ("smollm", "default", "gpt2"):
        # SmolLM's splits digits one at a time before the byte-level split
        tok.pre_tokenizer = (pre_tokenizers.Sequence([pre_tokenizers.Digits(True), level])
                             if pre == "smollm" else level)
    else:
        raise SystemExit(f"gguf_to_hf: pre-tokenizer '{pre}' is not converted")
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    # control tokens (type 3) are special: never split, skipped in decoding
    tok.add_special_tokens([t for t, k in zip(tokens, types) if k == 3])
    return tok, tokens


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("gguf")
    ap.add_argument("out")
    a = ap.parse_args(argv)
    import gguf
    from gguf.quants import dequantize
    r = gguf.GGUFReader(a.gguf)
    arch = field(r, "general.architecture")
    if arch != "llama":
        raise SystemExit(f"gguf_to_hf: {a.gguf}: architecture '{arch}'; only llama is converted")
    heads = int(field(r, "llama.attention.head_count"))
    kv = int(field(r, "llama.attention.head_count_kv", heads))
    hidden = int(field(r, "llama.embedding_length"))
    tensors = {}
    for t in r.tensors:
        w = dequantize(t.data, t.tensor_type).astype(np.float32)
        w = w.reshape([int(x) for x in reversed(t.shape)]) if w.ndim == 1 and len(t.shape) > 1 else w
        if t.name.endswith("attn_q.weight"):
            w = unpermute(w, heads)
        elif t.name.endswith("attn_k.weight"):
            w = unpermute(w, kv)
        tensors[hf_name(t.name)] = w
    vocab = tensors["model.embed_tokens.weight"].shape[0]
    tied = "lm_head.weight" not in tensors
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": hidden, "intermediate_size": int(field(r, "llama.feed_forward_length")),
        "num_hidden_layers": int(field(r, "llama.block_count")),
        "num_attention_heads": heads, "num_key_value_heads": kv,
        "head_dim": tensors["model.layers.0.self_attn.q_proj.weight"].shape[0] // heads,
        "hidden_act": "silu",
        "rms_norm_eps": float(field(r, "llama.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(field(r, "llama.rope.freq_base", 10000.0)),
        "max_position_embeddings": int(field(r, "llama.context_length")),
        "vocab_size": int(vocab), "tie_word_embeddings": tied, "torch_dtype": "float32",
        "bos_token_id": int(field(r, "tokenizer.ggml.bos_token_id", 1)),
        "eos_token_id": int(field(r, "tokenizer.ggml.eos_token_id", 2)),
        "attention_bias": False, "mlp_bias": False,
    }
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(a.out, "model.safetensors"), tensors)
    tok, tokens = tokenizer_json(r)
    tok.save(os.path.join(a.out, "tokenizer.json"))
    bos, eos = config["bos_token_id"], config["eos_token_id"]
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": tokens[bos], "eos_token": tokens[eos],
                   "add_bos_token": bool(field(r, "tokenizer.ggml.add_bos_token", False)),
                   "chat_template": field(r, "tokenizer.chat_template"),
                   "tokenizer_class": "PreTrainedTokenizerFast"}, f, indent=2)
    with open(os.path.join(a.out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": bos, "eos_token_id": eos}, f, indent=2)
    print(f"gguf_to_hf: {a.out}: {len(tensors)} tensors ({sum(w.size for w in tensors.values())} "
          f"parameters, float32), {len(tokens)} tokens", file=sys.stderr)


if __name__ == "__main__":
    main()

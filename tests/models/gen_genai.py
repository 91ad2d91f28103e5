#!/usr/bin/env python3
"""Writes onnxruntime-genai exports of two small random Hugging Face models,
as its model builder writes them, with references from onnxruntime (issue 34):

    python3 tests/models/gen_genai.py [OUTDIR]      (default: tests/models/genai)

Needs torch, transformers, onnxruntime-genai and onnx_ir, which CI does not
have: the outputs are committed. For each model, OUTDIR/<model>/ holds the
builder's default fp32 CPU export (`python3 -m onnxruntime_genai.models.builder
-i HF -o OUT -p fp32 -e cpu`: packed QKV into GroupQueryAttention, the head
size the symbol kv_cache_dim, the mask's length total_sequence_length, the
embedding the transpose of lm_head's weight where they are tied),
model.onnx and model.onnx.data, and test sets whose outputs onnxruntime
computes from the same inputs (attention_mask all ones):

    test_data_set_0: 1 new token after a past of 5
    test_data_set_1: 4 new tokens after a past of 3
    test_data_set_2: 3 new tokens, no past

and greedy.txt: the 32 tokens onnxruntime-genai's own generator picks
greedily (Generator with do_sample off, on the builder's folder) after the
39-token prompt examples/generate.c calls seq:39.

OUTDIR/<model>_fp16/ holds the same weights' fp16 CUDA export (`-p fp16 -e
cuda`, the builder's choice for a GPU): the same graph with every float
tensor float16 (weights, pasts, presents, logits), and for Qwen3 the q/k
norms inside GroupQueryAttention (its inputs 14 and 15, attribute
qk_norm_epsilon). Its test sets (the same steps, float16 pasts) and
greedy.txt come from onnxruntime and its generator (providers cleared: the
CPU) running that file; for Qwen3, whose fused node onnxruntime's CPU
refuses, from the same export with the norms outside the node (`--extra_options
fuse_qk_norm_gqa=false`: the same weights and arithmetic, the norm a
SimplifiedLayerNormalization of its own; not kept).

OUTDIR/<model>_fp16_cpu/ (`gen_genai.py OUTDIR fp16-cpu` writes these alone)
holds the builder's fp16 CPU export (`-p fp16 -e cpu`): MultiHeadAttention
(com.microsoft) with 3-D query, key and value and an additive mask built from
attention_mask (a Tile of it over the heads), the caches Concat'ed outside it
and repeated for the query heads, position_ids an input. onnxruntime runs it
only after its value_info is dropped (the builder declares repeat_kv's
output with the new tokens' length), and its causal mask's Expand is valid
only for one new token after a past or a prompt with none (mkc refuses it
with --max-chunk, naming the Expand): its test sets are one new token after
a past of 5 and after none.

The Hugging Face folder each is built from (random weights, seeded; a
word-level tokenizer of the vocabulary, which the builder insists on) is
made in a scratch folder and not kept.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {
    # tied embeddings: the builder gathers from the transpose of lm_head's weight, whose
    # 1040 x 64 values are more than mkc folds at compile time (passes.h's MKC_FOLD_MAX)
    "llama_tiny": dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=64,
                       intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=16, vocab_size=1040, rms_norm_eps=1e-5,
                       rope_theta=10000.0, max_position_embeddings=256,
                       tie_word_embeddings=True),
    # per-head q/k norms, heads x head size != hidden, untied lm_head
    "qwen3_tiny": dict(model_type="qwen3", architectures=["Qwen3ForCausalLM"], hidden_size=64,
                       intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=32, vocab_size=256, rms_norm_eps=1e-6,
                       rope_theta=1000000.0, max_position_embeddings=256,
                       tie_word_embeddings=False),
}
SETS = [(5, 1), (3, 4), (0, 3)]   # (past, new) per test set

def hf_folder(name, cfg, path):
    torch.manual_seed(sum(map(ord, name)))
    config = transformers.AutoConfig.for_model(**cfg)
    model = transformers.AutoModelForCausalLM.from_config(config).float().eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("norm.weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.08 * torch.randn_like(p))
    model.save_pretrained(path)
    from tokenizers import Tokenizer, models, pre_tokenizers
    vocab = {f"t{i}": i for i in range(cfg["vocab_size"])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", bos_token="t1",
                                         eos_token="t2").save_pretrained(path)

def write(path, arr, name):
    t = numpy_helper.from_array(arr, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())

def test_sets(out, rng, vocab, ref=None, sets=SETS, strip=False):
    """The test sets of the model in out, their outputs from onnxruntime
    running ref (a folder holding model.onnx; default out); strip: without
    its value_info."""
    m = onnx.load(os.path.join(out, "model.onnx"), load_external_data=False)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    path = os.path.join(ref or out, "model.onnx")
    if strip:
        r = onnx.load(path)
        del r.graph.value_info[:]
        path = r.SerializeToString()
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for k, (past, new) in enumerate(sets):
        d = os.path.join(out, f"test_data_set_{k}")
        os.makedirs(d, exist_ok=True)
        feeds = {}
        for i, inp in enumerate(m.graph.input):
            dims = [x.dim_value for x in inp.type.tensor_type.shape.dim]
            if inp.name == "input_ids":
                a = rng.integers(0, vocab, (1, new)).astype(np.int64)
            elif inp.name == "attention_mask":
                a = np.ones((1, past + new), np.int64)
            elif inp.name == "position_ids":
                a = np.arange(past, past + new, dtype=np.int64)[None]
            else:   # past_key_values.L.key/value [batch, kv heads, past, head size]
                ty = onnx.helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type)
                a = rng.standard_normal((1, dims[1], past, head_size(m))).astype(ty)
            feeds[inp.name] = a
            write(os.path.join(d, f"input_{i}.pb"), a, inp.name)
        for i, (o, a) in enumerate(zip(s.get_outputs(), s.run(None, feeds))):
            write(os.path.join(d, f"output_{i}.pb"), a, o.name)

def head_size(m):
    inits = {t.name: t for t in m.graph.initializer}
    if "cos_cache" in inits:
        return 2 * inits["cos_cache"].dims[1]
    for n in m.graph.node:
        if n.op_type == "GroupQueryAttention":
            inits = {t.name: t for t in m.graph.initializer}
            cos = inits.get(n.input[7])
            if cos is not None:
                return 2 * cos.dims[1]
    raise SystemExit("gen_genai: no GroupQueryAttention with a cos cache")

# examples/generate.c's seq:39: seq:40 would end in token 2, the tokenizer's end token, which
# the generator takes as padding (its position masked out of the attention)
GREEDY_PROMPT = [(7 + 13 * i) % 256 for i in range(39)]
GREEDY_NEW = 32

def greedy(built, dst):
    """onnxruntime-genai's own generator, greedy, on the builder's folder:
    GREEDY_NEW tokens after GREEDY_PROMPT, into dst/greedy.txt as
    examples/generate.c prints them ("tokens: ..."). A CUDA export runs on
    the CPU (its providers cleared)."""
    import onnxruntime_genai as og
    config = og.Config(built)
    config.clear_providers()
    model = og.Model(config)
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=len(GREEDY_PROMPT) + GREEDY_NEW)
    gen = og.Generator(model, params)
    gen.append_tokens(GREEDY_PROMPT)
    while not gen.is_done():
        gen.generate_next_token()
    new = list(gen.get_sequence(0))[len(GREEDY_PROMPT):]
    if len(new) != GREEDY_NEW:
        raise SystemExit(f"gen_genai: the generator stopped after {len(new)} tokens (an end token)")
    with open(os.path.join(dst, "greedy.txt"), "w") as f:
        f.write(f"# onnxruntime-genai {og.__version__} greedy generator, prompt seq:39\n")
        f.write("tokens: " + " ".join(map(str, new)) + "\n")

def build(hf, out, tmp, precision, ep, *extra):
    subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", hf,
                    "-o", out, "-p", precision, "-e", ep, "-c", os.path.join(tmp, "cache"),
                    *extra], check=True, capture_output=True)

def fp16_cpu(out):
    for name, cfg in MODELS.items():
        dst = os.path.join(out, name + "_fp16_cpu")
        with tempfile.TemporaryDirectory() as tmp:
            hf = os.path.join(tmp, "hf")
            hf_folder(name, cfg, hf)
            built = os.path.join(tmp, "onnx")
            build(hf, built, tmp, "fp16", "cpu")
            shutil.rmtree(dst, ignore_errors=True)
            os.makedirs(dst)
            for f in ("model.onnx", "model.onnx.data"):
                shutil.copyfile(os.path.join(built, f), os.path.join(dst, f))
            test_sets(dst, np.random.default_rng(3417), cfg["vocab_size"], sets=[(5, 1), (0, 1)],
                      strip=True)
        print(f"gen_genai: wrote {dst}")

def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "genai")
    if sys.argv[2:] == ["fp16-cpu"]:
        return fp16_cpu(out)
    # (folder suffix, precision, execution provider, random stream); the fp32 folders first,
    # on the stream they had before the fp16 ones existed, so that they stay as they were
    rngs = {"": np.random.default_rng(34), "_fp16": np.random.default_rng(3416)}
    for suffix, precision, ep in (("", "fp32", "cpu"), ("_fp16", "fp16", "cuda")):
        for name, cfg in MODELS.items():
            dst = os.path.join(out, name + suffix)
            with tempfile.TemporaryDirectory() as tmp:
                hf = os.path.join(tmp, "hf")
                hf_folder(name, cfg, hf)
                built = os.path.join(tmp, "onnx")
                build(hf, built, tmp, precision, ep)
                shutil.rmtree(dst, ignore_errors=True)
                os.makedirs(dst)
                for f in ("model.onnx", "model.onnx.data"):
                    shutil.copyfile(os.path.join(built, f), os.path.join(dst, f))
                ref = built
                if any(n.op_type == "GroupQueryAttention" and len(n.input) > 14
                       for n in onnx.load(os.path.join(built, "model.onnx"),
                                          load_external_data=False).graph.node):
                    # the q/k norms in the node, which onnxruntime's CPU refuses
                    ref = os.path.join(tmp, "ref")
                    build(hf, ref, tmp, precision, ep, "--extra_options",
                          "fuse_qk_norm_gqa=false")
                greedy(ref, dst)
                test_sets(dst, rngs[suffix], cfg["vocab_size"], ref)
            print(f"gen_genai: wrote {dst}")

if __name__ == "__main__":
    main()

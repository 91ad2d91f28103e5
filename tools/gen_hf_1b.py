#!/usr/bin/env python3
"""Writes a Llama-3.2-1B-shaped Hugging Face folder (16 layers, hidden 2048,
32/8 heads, vocab 128256, llama3 rope, tied embeddings; random bf16 weights,
std 0.02, norm scales 0.8..1.2) with a test_data_set_0 from
tools/hf_reference.py's float64 decode step (past_len 5):

    python3 tools/gen_hf_1b.py OUTDIR      (2.5 GB of weights; about 10 GB of RAM)
    build/mkc test OUTDIR --steps 1        (or --target cuda on the GPU machine)

Too big for the repository; a check of the 1B shape without transformers.
"""
import json, os, sys, time
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as ref
out = sys.argv[1] if len(sys.argv) > 1 else "llama1b"
os.makedirs(out, exist_ok=True)
cfg_json = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=2048,
    num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, head_dim=64,
    intermediate_size=8192, vocab_size=128256, rms_norm_eps=1e-5, tie_word_embeddings=True,
    max_position_embeddings=131072, hidden_act="silu",
    rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=32.0, low_freq_factor=1.0,
                         high_freq_factor=4.0, original_max_position_embeddings=8192))
json.dump(cfg_json, open(os.path.join(out, "config.json"), "w"), indent=1)
rng = np.random.default_rng(0)
H, L, I, V = 2048, 16, 8192, 128256
t0 = time.time()
shapes = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,)}
for i in range(L):
    p = "model.layers.%d." % i
    shapes.update({p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
        p + "self_attn.q_proj.weight": (2048, H), p + "self_attn.k_proj.weight": (512, H),
        p + "self_attn.v_proj.weight": (512, H), p + "self_attn.o_proj.weight": (H, 2048),
        p + "mlp.gate_proj.weight": (I, H), p + "mlp.up_proj.weight": (I, H),
        p + "mlp.down_proj.weight": (H, I)})
tensors = {}
for name, shape in shapes.items():
    if name.endswith("norm.weight"):
        a = rng.uniform(0.8, 1.2, shape).astype(np.float32)
    else:
        a = (rng.standard_normal(shape, dtype=np.float32) * 0.02)
    tensors[name] = ("BF16", a)
ref.write_safetensors(os.path.join(out, "model.safetensors"), tensors)
del tensors
print("weights written", time.time() - t0, flush=True)
cfg = ref.load_config(out)
w = ref.load_weights(out)
print("weights loaded", time.time() - t0, flush=True)
inputs = ref.random_inputs(cfg, 5, seed=1)
outputs = ref.run(cfg, w, inputs)
ref.write_test_data(os.path.join(out, "test_data_set_0"), cfg, inputs, outputs)
lg = outputs[0][0, 0]
top = np.sort(lg)[-3:]
print("reference written", time.time() - t0, "logits top3", top, "std", lg.std(), flush=True)

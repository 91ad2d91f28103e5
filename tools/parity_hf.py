#!/usr/bin/env python3
"""Token parity between transformers and mkc on the GPU machine.

    python3 tools/parity_hf.py OUTDIR [--steps N] [--only NAME]

For each configuration below: make the model with transformers from its
config with random weights (seeded), save it as a Hugging Face folder,
decode N greedy tokens with transformers (eager, on the GPU), then compile
the folder with mkc for CUDA, build examples/decode.c against it, decode
the same tokens, and compare. Prints one line per configuration: tokens
identical or where they first differ, and the time per step of each.

The KV cache: float32, mkc's default. With --kv bf16 mkc keeps the caches
in bf16 and the reference keeps its cache rounded to bf16 the same way
(tools/bf16_cache.py); the line also says how many tokens agree with a
float32 cache. (Identical tokens are then not guaranteed: a key or value
one float32 bit away from the reference's can round to another bf16.)

Needs torch and transformers (the GPU machine has them), nvcc, and
build/mkc (with libcjson on LD_LIBRARY_PATH).
"""
import argparse
import contextlib
import copy
import os
import subprocess
import sys
import time

import torch
import transformers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from bf16_cache import bf16_cache   # noqa: E402

SMALL = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8,
             num_key_value_heads=2, head_dim=32, intermediate_size=512, vocab_size=1024,
             rms_norm_eps=1e-5, max_position_embeddings=4096)
LLAMA_1B = dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                num_key_value_heads=8, head_dim=64, intermediate_size=8192,
                vocab_size=128256, rms_norm_eps=1e-5, max_position_embeddings=131072,
                tie_word_embeddings=True,
                rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=32.0,
                                     low_freq_factor=1.0, high_freq_factor=4.0,
                                     original_max_position_embeddings=8192))


QWEN3_06B = dict(hidden_size=1024, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, intermediate_size=3072,
                 vocab_size=151936, rms_norm_eps=1e-6, max_position_embeddings=40960,
                 tie_word_embeddings=True,
                 rope_parameters=dict(rope_type="default", rope_theta=1000000.0))


def rope(theta):
    # transformers 5 spells it rope_parameters (the shared config.json does too)
    return dict(rope_parameters=dict(rope_type="default", rope_theta=theta))

CONFIGS = [
    # name, family, config, dtype, weight std
    ("llama_small_f32", "llama", dict(SMALL, tie_word_embeddings=True, **rope(500000.0)),
     torch.float32, 0.05),
    ("llama_small_untied_f32", "llama", dict(SMALL, tie_word_embeddings=False,
                                              num_key_value_heads=4, **rope(10000.0)),
     torch.float32, 0.05),
    ("qwen3_small_f32", "qwen3", dict(SMALL, tie_word_embeddings=False, **rope(1000000.0)),
     torch.float32, 0.05),
    ("qwen3_small2_f32", "qwen3", dict(SMALL, hidden_size=384, num_attention_heads=6,
                                        num_key_value_heads=3, head_dim=64,
                                        tie_word_embeddings=True, **rope(1000000.0)),
     torch.float32, 0.05),
    ("llama_1b_bf16", "llama", LLAMA_1B, torch.bfloat16, 0.02),
    ("qwen3_06b_bf16", "qwen3", QWEN3_06B, torch.bfloat16, 0.02),
]


def make_model(family, cfg, dtype, std, seed=0):
    """The model in float32. For a bf16 configuration the parameters are
    rounded to bf16 (and the folder is saved in bf16), but buffers such as
    the rotary inv_freq stay float32, as they are in a bf16 checkpoint
    loaded for float32 inference."""
    torch.manual_seed(seed)
    if family == "llama":
        config, cls = transformers.LlamaConfig(**cfg), transformers.LlamaForCausalLM
    else:
        config, cls = transformers.Qwen3Config(**cfg), transformers.Qwen3ForCausalLM
    model = cls(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(0.8, 1.2)
            else:
                p.normal_(0.0, std)
            if dtype != torch.float32:
                p.copy_(p.to(dtype).float())
    return model.eval()


@torch.no_grad()
def hf_greedy(model, first, steps):
    model = model.cuda()
    ids = torch.tensor([[first]], device="cuda")
    past, toks, times, logits = None, [first], [], []
    for t in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model(input_ids=ids, position_ids=torch.tensor([[t]], device="cuda"),
                    past_key_values=past, use_cache=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        past = out.past_key_values
        lg = out.logits[0, -1].float()
        logits.append(lg.cpu())
        tok = int(lg.argmax())
        toks.append(tok)
        ids = torch.tensor([[tok]], device="cuda")
    model.cpu()
    return toks, sum(times[1:]) / max(1, len(times) - 1), torch.stack(logits)


def bf16_agree(toks):
    return f"@@ of {len(toks)} tokens equal to mkc's"


def logit_error(path, ref, toks, ref_toks):
    """Largest |mkc - reference| / max |reference| over the steps where both
    were fed the same tokens (all of them when the tokens agree)."""
    import numpy as np
    got = np.fromfile(path, dtype=np.float32).reshape(-1, ref.shape[1])
    n = min(len(got), len(ref))
    for i in range(1, n):
        if toks[i] != ref_toks[i]:
            n = i + 1   # step i's logits were computed from the same prefix
            break
    r = ref[:n].numpy()
    e = np.abs(got[:n] - r).max(axis=1) / np.abs(r).max(axis=1)
    return f"max relative error {e.max():.2e} over {n} steps (worst step {int(e.argmax())})"


def run(cmd, log, timeout):
    with open(log, "w") as f:
        return subprocess.run(cmd, shell=True, stdout=f, stderr=subprocess.STDOUT,
                              timeout=timeout).returncode


def mkc_greedy(folder, first, steps, workers, kv):
    log = os.path.join(folder, "mkc.log")
    cu = os.path.join(folder, "llama.cu")
    cmds = [
        f"{ROOT}/build/mkc {folder} -o {cu} --workers {workers} --kv {kv}",
        f"nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -c {cu} -o {folder}/llama.o",
        f"cc -DDECODE_CUDA -I{folder} -I/usr/local/cuda/include -c {ROOT}/examples/decode.c "
        f"-o {folder}/decode.o",
        f"nvcc -o {folder}/decode {folder}/decode.o {folder}/llama.o",
        f"cc -I{folder} -I/usr/local/cuda/include -c {ROOT}/examples/generate.c "
        f"-o {folder}/generate.o",
        f"nvcc -o {folder}/generate {folder}/generate.o {folder}/llama.o",
    ]
    for c in cmds:
        t0 = time.time()
        rc = run(c, log, 900)
        if rc:
            return None, None, (f"failed ({rc}) after {time.time() - t0:.0f} s: {c}\n"
                                + open(log).read()[-600:])
        print(f"  {time.time() - t0:6.1f} s  {c.split()[0].split('/')[-1]}", flush=True)
    r = subprocess.run([f"{folder}/decode", folder, str(steps), str(first),
                        f"{folder}/logits.f32"],
                       capture_output=True, text=True, timeout=900)
    toks = per = None
    for line in r.stdout.splitlines():
        if line.startswith("tokens:"):
            toks = [int(x) for x in line.split()[1:]]
        if line.startswith("steps:"):
            per = float(line.split("mean of the rest")[1].split("ms")[0]) / 1e3
    if r.returncode:
        return None, None, r.stderr[-400:]
    # the same tokens from one launch (examples/generate.c), timed three times
    g = subprocess.run([f"{folder}/generate", folder, str(steps), str(first), "3"],
                       capture_output=True, text=True, timeout=900)
    gen = {"ok": False, "ms": None}
    for line in g.stdout.splitlines():
        if line.startswith("tokens:"):
            gen["ok"] = [int(x) for x in line.split()[1:]] == toks[1:]
        if line.startswith("generate:"):
            gen["ms"] = float(line.split(" ms per step")[0].split()[-1])
    if g.returncode:
        gen["err"] = g.stderr[-300:]
    return toks, per, gen


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--first", type=int, default=7)
    ap.add_argument("--workers", type=int, default=132)
    ap.add_argument("--only", help="comma-separated configuration names")
    ap.add_argument("--kv", choices=("f32", "bf16"), default="f32",
                    help="mkc --kv for every configuration (default f32, mkc's)")
    args = ap.parse_args(argv[1:])
    os.makedirs(args.outdir, exist_ok=True)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    ok = True
    for name, family, cfg, dtype, std in CONFIGS:
        if args.only and name not in args.only.split(","):
            continue
        folder = os.path.join(args.outdir, name)
        model = make_model(family, cfg, dtype, std)
        if dtype == torch.float32:
            model.save_pretrained(folder, safe_serialization=True)
        else:
            copy.deepcopy(model).to(dtype).save_pretrained(folder, safe_serialization=True)
        # The reference computes in float32. A bf16 model's weights are bf16
        # in the folder (mkc reads them as they are and computes in float32),
        # so its reference is the same bf16 weights widened to float32; the
        # model run in bf16 arithmetic is reported beside it for information.
        note = ""
        if dtype != torch.float32:
            bf = copy.deepcopy(model).to(dtype)
            bf_toks, bf_per, _ = hf_greedy(bf, args.first, args.steps)
            del bf
            note = (f"; transformers in bf16 arithmetic: {bf16_agree(bf_toks)} "
                    f"({bf_per * 1e3:.3f} ms per step)")
        kv = args.kv
        with bf16_cache(torch) if kv == "bf16" else contextlib.nullcontext():
            ref, hf_per, ref_logits = hf_greedy(model, args.first, args.steps)
        if kv == "bf16":   # the same model with a float32 cache, for the agreement count
            ref32, _, _ = hf_greedy(model, args.first, args.steps)
        del model
        torch.cuda.empty_cache()
        toks, mkc_per, gen = mkc_greedy(folder, args.first, args.steps, args.workers, kv)
        if toks is None:
            err = gen
            print(f"{name}: mkc {err}", flush=True)
            ok = False
            continue
        if note:
            note = note.replace("@@", str(sum(a == b for a, b in zip(bf_toks, toks))))
        if kv == "bf16":
            note += (f"; bf16 KV cache (reference's rounded alike); with a float32 cache "
                     f"transformers agrees on {sum(a == b for a, b in zip(ref32, toks))} of "
                     f"{len(toks)} tokens")
        same = toks == ref
        where = next((i for i, (a, b) in enumerate(zip(toks, ref)) if a != b), None)
        verdict = f"{args.steps} tokens identical" if same else \
            f"differ from token {where}: mkc {toks[where:where + 4]} hf {ref[where:where + 4]}"
        err = logit_error(os.path.join(folder, "logits.f32"), ref_logits, toks, ref)
        g = (f"generate (one launch) {'same tokens' if gen['ok'] else 'OTHER TOKENS'}, "
             f"{gen['ms']} ms per token" + (f" [{gen['err']}]" if gen.get("err") else ""))
        print(f"{name}: {verdict}; logits: {err}; per step: mkc step {mkc_per * 1e3:.3f} ms, "
              f"{g}; transformers eager float32 {hf_per * 1e3:.3f} ms{note}", flush=True)
        ok &= same and gen["ok"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

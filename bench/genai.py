#!/usr/bin/env python3
"""onnxruntime-genai's export against the Hugging Face folder it was made
from, both compiled by mkc, in one run (issue 34's target: the export's
decode step within 5% of the folder's).

    PYTHONPATH=DIR python3 bench/genai.py SHAPE --out OUT [--contexts 1,1024] [--target c]

On the GPU machine, from the repo root, build/mkc built. DIR holds
onnxruntime-genai's model builder (the package's models/ folder under an
onnxruntime_genai/ whose __init__.py need only give __version__ and
__commit__, and onnx_ir): the builder is Python; the GPU machine has torch,
transformers and onnx, not the package.
  1. makes the Hugging Face folder of bench/run.py for SHAPE (random
     weights, seeded, rounded to bf16; a word-level tokenizer, which the
     builder insists on);
  2. exports it with the builder's defaults for CPU in float32 (`-p fp32 -e
     cpu`: packed QKV into GroupQueryAttention, MatMul weights [K, N]);
  3. compiles both with mkc (the export with --weights bf16: the folder's
     own bf16 values, which float32 holds exactly) and nvcc;
  4. checks that both generate the same 16 greedy tokens, and refuses to
     time them otherwise;
  5. times both per token at each context (bench/mkc_bench.c: caches
     filled with random values, one launch of generate), alternately, in
     --rounds rounds, and prints ms and export / folder.
With --target c (on any machine; --workers defaults to the machine's cores)
both are compiled for the C target with cc, and the same steps run on the
CPU's threads. Writes OUT/SHAPE_genai.json and OUT/SHAPE_genai.log.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import run as bench   # noqa: E402


def tokenizer(transformers, vocab, path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    tok = Tokenizer(models.WordLevel(vocab={f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", bos_token="t1",
                                         eos_token="t2").save_pretrained(path)


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("shape", choices=sorted(bench.SHAPES))
    p.add_argument("--out", required=True)
    p.add_argument("--work", help="folder for the models and builds (default: --out)")
    p.add_argument("--contexts", default="1,1024")
    p.add_argument("--workers", type=int, help="default: 132 (cuda), the cores (c)")
    p.add_argument("--target", default="cuda", choices=("cuda", "c"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--profile", action="store_true",
                   help="also the export compiled with --profile: its timeline at the last context")
    a = p.parse_args(argv[1:])
    gpu = a.target == "cuda"
    a.workers = a.workers or (132 if gpu else os.cpu_count())
    import torch
    import transformers
    family, cfg = bench.SHAPES[a.shape]
    os.makedirs(a.out, exist_ok=True)
    logf = os.path.join(a.out, f"{a.shape}_genai.log")
    work = os.path.join(a.work or a.out, a.shape + "_genai")
    folder, export = os.path.join(work, "hf"), os.path.join(work, "genai")
    res = {"shape": a.shape, "commit": os.environ.get("COMMIT"), "card": torch.cuda.get_device_name() if gpu else "cpu (C target)",
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    t0 = time.time()
    model = bench.make_model(torch, transformers, family, cfg, "cpu")
    inv = model.model.rotary_emb.inv_freq.clone()
    model.to(torch.bfloat16)
    model.model.rotary_emb.inv_freq = inv
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer(transformers, cfg["vocab_size"], folder)
    del model
    bench.log(f"{a.shape}: folder made ({time.time() - t0:.0f} s)")
    t, _ = bench.sh(f"{sys.executable} -m onnxruntime_genai.models.builder -i {folder} -o {export} "
                    f"-p fp32 -e cpu -c {work}/cache", logf)
    res["builder_s"] = round(t, 1)
    bench.log(f"{a.shape}: exported by the builder ({t:.0f} s)")
    # both builds at once: nvcc is the long part
    builds = {}
    procs = []
    variants = [("folder", folder, ""), ("export", f"{export}/model.onnx", "--weights bf16")]
    if a.profile:
        variants.append(("export_prof", f"{export}/model.onnx", "--weights bf16 --profile-steps 1"))
    for name, src, extra in variants:
        sub = os.path.join(work, name)
        os.makedirs(sub, exist_ok=True)
        ext, cc = ("cu", "nvcc -gencode=arch=compute_90a,code=sm_90a") if gpu else ("c", "cc")
        cmd = (f"{ROOT}/build/mkc {src} -o {sub}/llama.{ext} --workers {a.workers} --max-seq "
               f"{bench.MAX_SEQ} --max-dim {bench.MAX_SEQ} {extra} && "
               f"{cc} -O2 -c {sub}/llama.{ext} -o {sub}/llama.o")
        for prog, c in (("generate", "examples/generate.c"), ("mkc_bench", "bench/mkc_bench.c")):
            cmd += (f" && cc -O2 -I{sub} -I/usr/local/cuda/include -c {ROOT}/{c} -o {sub}/{prog}.o"
                    f" && {'nvcc' if gpu else 'cc -pthread'} -o {sub}/{prog} {sub}/{prog}.o "
                    f"{sub}/llama.o -lm")
        procs.append((name, src, sub, subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE,
                                                       stderr=subprocess.STDOUT, text=True)))
    for name, src, sub, pr in procs:
        out, _ = pr.communicate(timeout=900)
        with open(logf, "a") as f:
            f.write(f"$ build {name}\n{out}\n")
        if pr.returncode:
            raise RuntimeError(f"build {name} failed:\n{out[-2000:]}")
        builds[name] = (src, sub)
    bench.log(f"{a.shape}: both built ({time.time() - t0:.0f} s)")
    prof = builds.pop("export_prof", None)
    toks = {}
    for name, (src, sub) in builds.items():
        _, out = bench.sh(f"{sub}/generate {src} 16 {bench.FIRST_TOKEN}", logf)
        toks[name] = [int(x) for x in out.split("tokens:")[1].split("\n")[0].split()]
    res["tokens"] = toks
    if toks["folder"] != toks["export"]:
        json.dump(res, open(os.path.join(a.out, f"{a.shape}_genai.json"), "w"), indent=1)
        raise SystemExit(f"{a.shape}: the export's tokens {toks['export']} are not the folder's "
                         f"{toks['folder']}")
    contexts = [int(c) for c in a.contexts.split(",")]
    n_new = [bench.tokens_at(c, False) for c in contexts]
    row = cfg["num_key_value_heads"] * cfg["head_dim"]
    if prof:
        trace = os.path.join(a.out, f"{a.shape}_genai_ctx{contexts[-1]}.trace.json")
        bench.mkc_time(prof[1], prof[0], contexts[-1:], [1], row, logf, trace)
        _, rep = bench.sh(f"python3 {ROOT}/tools/profile_report.py {trace}", logf)
        res["profile_report"] = rep
        print(rep, flush=True)
    ms = {name: [[] for _ in contexts] for name in builds}
    for _ in range(a.rounds):
        for name, (src, sub) in builds.items():
            for i, v in enumerate(bench.mkc_time(sub, src, contexts, n_new, row, logf)):
                ms[name][i].append(v)
    res["contexts"] = contexts
    res["ms"] = {name: [statistics.median(v) for v in ms[name]] for name in ms}
    res["ms_all"] = ms
    json.dump(res, open(os.path.join(a.out, f"{a.shape}_genai.json"), "w"), indent=1)
    print(f"\n{a.shape} on {res['card']}: ms per token, median of {a.rounds} rounds "
          f"(tokens identical: {toks['folder'][:8]}...)")
    print("| context | folder (hf) | export (genai) | export / folder |")
    print("| --- | --- | --- | --- |")
    for i, c in enumerate(contexts):
        f, e = res["ms"]["folder"][i], res["ms"]["export"][i]
        print(f"| {c} | {f:.3f} | {e:.3f} | {e / f:.3f} |")


if __name__ == "__main__":
    main(sys.argv)

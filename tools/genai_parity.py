#!/usr/bin/env python3
"""onnxruntime-genai's own generator against mkc's C target on the same
export of a full-size model shape, on the CPU (issue 34's last target):

    python3 tools/genai_parity.py SHAPE [--work DIR] [--max-chunk N] [--reuse]

SHAPE is one of bench/run.py's (llama-3.2-1b, qwen3-0.6b, ...). From the
repo root, build/mkc built; needs torch (CPU is enough), transformers,
onnx_ir and onnxruntime-genai (0.18.0 so far). For SHAPE, under
DIR/SHAPE (default /tmp/genai_parity; several GB):
  1. makes bench/run.py's Hugging Face folder (random weights, seed 0,
     rounded to bf16; bench/genai.py's word-level tokenizer, which the
     builder insists on);
  2. exports it with the builder's defaults for CPU in float32 (`-p fp32
     -e cpu`);
  3. runs the generator greedily on the export, 32 tokens after the 39
     tokens examples/generate.c calls seq:39 (tests/models/gen_genai.py's
     prompt and code, in a child process so that its memory goes back);
  4. compiles the export's model.onnx unmodified with mkc for the C target
     (--workers 2; --max-chunk N when given: the prompt in chunks of N),
     and examples/generate.c against it with cc -O2;
  5. runs that for the same 32 tokens after seq:39.
Prints both token lines and the seconds each part took; exits 1 if the
tokens differ. --reuse keeps a folder, an export or a build already there.
Every command and its output go to DIR/SHAPE/log.txt.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import run as bench   # noqa: E402
from genai import tokenizer   # noqa: E402

N_NEW = 32
PROMPT = "seq:39"


def sh(cmd, logf):
    """Runs cmd, its output to logf; returns (seconds, stdout)."""
    return bench.sh(cmd, logf, timeout=3600)


def tokens(text):
    m = re.search(r"^tokens:(.*)$", text, re.M)
    if not m:
        raise SystemExit(f"genai_parity: no tokens line in:\n{text[-1500:]}")
    return [int(x) for x in m.group(1).split()]


def make_folder(shape, folder):
    import torch
    import transformers
    family, cfg = bench.SHAPES[shape]
    model = bench.make_model(torch, transformers, family, cfg, "cpu")
    bench.save_bf16(torch, model, folder)
    del model
    tokenizer(transformers, cfg["vocab_size"], folder)


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("shape", choices=sorted(bench.SHAPES))
    p.add_argument("--work", default="/tmp/genai_parity")
    p.add_argument("--max-chunk", type=int, default=1)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--reuse", action="store_true")
    a = p.parse_args(argv[1:])
    work = os.path.join(a.work, a.shape)
    folder, export = os.path.join(work, "hf"), os.path.join(work, "genai")
    build = os.path.join(work, "c" if a.max_chunk == 1 else f"c_chunk{a.max_chunk}")
    os.makedirs(work, exist_ok=True)
    logf = os.path.join(work, "log.txt")
    secs = {}

    def fresh(path, what):
        done = a.reuse and os.path.exists(path)
        if done:
            bench.log(f"{a.shape}: {what} kept ({path})")
        return not done

    t0 = time.time()
    if fresh(os.path.join(folder, "config.json"), "folder"):
        shutil.rmtree(folder, ignore_errors=True)
        make_folder(a.shape, folder)
        secs["folder"] = time.time() - t0
    if fresh(os.path.join(export, "model.onnx"), "export"):
        shutil.rmtree(export, ignore_errors=True)
        secs["builder"], _ = sh(f"{sys.executable} -m onnxruntime_genai.models.builder -i {folder} "
                                f"-o {export} -p fp32 -e cpu -c {work}/cache", logf)
        shutil.rmtree(os.path.join(work, "cache"), ignore_errors=True)
    bench.log(f"{a.shape}: export in {export}")

    secs["generator"], _ = sh(f"cd {work} && {sys.executable} -c 'import sys; sys.path.insert(0, "
                              f"\"{ROOT}/tests/models\"); import gen_genai; "
                              f"gen_genai.greedy(\"{export}\", \"{work}\")'", logf)
    with open(os.path.join(work, "greedy.txt")) as f:
        ref = tokens(f.read())
    bench.log(f"{a.shape}: generator done ({secs['generator']:.0f} s)")

    os.makedirs(build, exist_ok=True)
    chunk = f" --max-chunk {a.max_chunk}" if a.max_chunk > 1 else ""
    if fresh(os.path.join(build, "gen"), "build"):
        secs["mkc"], _ = sh(f"{ROOT}/build/mkc {export}/model.onnx -o {build}/llama.c "
                            f"--workers {a.workers}{chunk}", logf)
        secs["cc"], _ = sh(f"cc -std=c11 -O2 -pthread -I{build} -o {build}/gen "
                           f"{ROOT}/examples/generate.c {build}/llama.c -lm", logf)
        bench.log(f"{a.shape}: built (mkc {secs['mkc']:.1f} s, cc {secs['cc']:.1f} s)")
    secs["c_run"], out = sh(f"{build}/gen {export}/model.onnx {N_NEW} {PROMPT}", logf)
    got = tokens(out)
    step = re.search(r"^generate: .*$", out, re.M)

    print(f"\n{a.shape} (fp32 CPU export{chunk or ', one token a step'}):")
    print("generator: tokens: " + " ".join(map(str, ref)))
    print("mkc C:     tokens: " + " ".join(map(str, got)))
    if step:
        print(step.group(0))
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in secs.items())
          + " (c_run: loading the weights and generating)")
    if got != ref:
        i = next((i for i, (x, y) in enumerate(zip(got, ref)) if x != y), min(len(got), len(ref)))
        print(f"{a.shape}: the tokens differ from new token {i} on")
        return 1
    print(f"{a.shape}: the same {len(ref)} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

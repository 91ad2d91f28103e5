#!/usr/bin/env python3
"""gpu_python.py - the Python package's GPU path (torch tensors in device
memory), against its C target, on the GPU machine (tools/gpu_check.sh runs
it after building build/mkc):

    python3 tools/gpu_python.py [MODEL_FOLDER]

Builds the folder (default tests/models/hf/qwen3_tiny) twice with
--max-seqs 4 --max-chunk 16, as a C library and as a CUDA one, and checks:
greedy generate gives the same tokens; a step of three sequences' rows
(numpy in, copied to the device; torch out) gives the C library's logits
within 5e-2 of the largest (a step of several rows runs on tensor cores in
bf16 on the GPU); the device draw (Model.sample on the step's torch logits)
gives the host draw's tokens on the same logits; sequences, forks and cache
reads work on device memory; generate on a stream of torch's own
(Model.set_stream) gives the same tokens. Prints a line per check; exit
status 1 when one fails.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import mkc  # noqa: E402


def build(folder, tmp, ext):
    src = os.path.join(tmp, f"tiny.{ext}")
    lib = os.path.join(tmp, f"libtiny_{ext}.so")
    subprocess.run([os.path.join(ROOT, "build", "mkc"), folder, "-o", src, "--max-seqs", "4",
                    "--max-chunk", "16", "--max-seq", "128"], check=True)
    if ext == "c":
        cmd = ["cc", "-O2", "-shared", "-fPIC", "-pthread", "-o", lib, src, "-lm"]
    else:
        cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-O2", "-shared",
               "-Xcompiler", "-fPIC", "-o", lib, src]
    subprocess.run(cmd, check=True)
    return lib


def main():
    import torch
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "models", "hf",
                                                                 "qwen3_tiny")
    bad = 0

    def check(ok, what):
        nonlocal bad
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}")

    with tempfile.TemporaryDirectory() as tmp:
        c = mkc.Model(build(folder, tmp, "c"), weights=folder, name="tiny")
        g = mkc.Model(build(folder, tmp, "cu"), weights=folder, name="tiny")
        check(g.target == "cuda", f"the CUDA library says target {g.target}")
        prompt = [3, 17, 250, 99, 4]
        a, b = c.generate(prompt, 16), g.generate(prompt, 16)
        check(a == b, f"greedy generate: C {a[:6]}..., CUDA {b[:6]}...")
        outs = []
        for m in (c, g):
            m.cache_reset()
            s0, s1, s2 = m.sequence(0), m.open(), m.open()
            (lg,) = m.step_seqs([s0, s1, s0, s2, s1], [5, 6, 7, 8, 9])
            outs.append(lg if isinstance(lg, np.ndarray) else lg.cpu().numpy())
            check(len(s0) == 2 and len(s1) == 2 and len(s2) == 1,
                  f"{m.target}: sequence lengths {len(s0)} {len(s1)} {len(s2)}")
            f = s1.fork()
            k0, k1 = s1.cache(0), f.cache(0)
            same = (k0 == k1).all() if isinstance(k0, np.ndarray) else bool(torch.equal(k0, k1))
            check(bool(same), f"{m.target}: a fork reads its source's cache")
        err = np.abs(outs[0] - outs[1]).max() / np.abs(outs[0]).max()
        check(err < 5e-2, f"a step of three sequences: CUDA logits within {err:.2e} of C's")
        settings = [{"temperature": 1.2, "top_p": 0.9, "seed": s} for s in range(5)]
        host = c.sample(outs[1][0], settings, list(range(5)))
        dev = g.sample(torch.from_numpy(outs[1][0]).cuda(), settings, list(range(5)))
        check(host == dev, f"the device draw {dev} = the host draw {host}")
        g.set_stream(torch.cuda.Stream())   # a stream of torch's own
        g.cache_reset()
        first = g.generate(prompt, 16)
        g.set_stream(None)
        check(first == a, f"generate on a stream of torch's: {first[:6]}... (C {a[:6]}...)")
        c.close()
        g.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

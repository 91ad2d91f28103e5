#!/usr/bin/env python3
"""The benchmark: mkc against PyTorch on the same weights, in one run.

    python3 bench/run.py run SHAPE --out DIR [--profile] [--contexts 1,1024,4096]
    python3 bench/run.py report DIR... [--results bench/RESULTS.md] [--png bench/context.png]
                                      [--batch-png bench/batch.png]
    python3 bench/run.py turns SHAPE --out DIR --mkc A=PATH --mkc B=PATH [--prompts 128,1024]

`run` (on the GPU machine, from the repo root, build/mkc built; one SHAPE
per command, each well under 10 minutes):
  1. measures the card's read bandwidth (a sum over 4 GiB; a copy too);
  2. makes a Hugging Face folder with random bf16 weights for SHAPE
     (transformers, seeded; norms near 1), under DIR;
  3. compiles it with mkc (132 workers, caches of 4160 positions) and the
     result with nvcc, timing both;
  4. decodes 16 greedy tokens with transformers in float32 over the same
     (bf16-rounded) weights and with mkc's one-launch generate, and refuses
     to time a model whose tokens differ (with --kv bf16, transformers
     keeps its cache rounded to bf16 as mkc does: tools/bf16_cache.py);
  5. times mkc per token at each context (the caches filled with random
     values by llama_cache_load; median of 3 runs of several tokens, one
     launch each), then in the same process PyTorch bf16: transformers eager
     (DynamicCache prefilled to the context), a static-cache decode step
     written here over the same weights, replayed as a CUDA graph (checked
     against transformers first), and the same step compiled by
     torch.compile (inductor, no CUDA graphs of its own) and replayed as a
     CUDA graph (gpt-fast's recipe; --no-compile skips it); the ratios are
     against the fastest of them;
  6. with --prompts, time to first token: mkc's chunked file against
     transformers bf16 (one forward over the prompt, SDPA), eager and under
     torch.compile, with mkc's TFLOPS (2 x parameters x prompt tokens);
  7. with --batches B,..., several sequences a step (issue 30): a file
     compiled with --max-seqs (the largest B), its greedy tokens for 8
     sequences of different prompts together checked against each alone,
     then ms per step of B tokens (one of each sequence, all at each of
     --batch-contexts) against PyTorch's static-cache step over a batch of
     B, as a CUDA graph and under torch.compile (bench/mkc_batch.c);
     generate_batch's loop in one launch and a launch a step; and a mixed
     run: twice as many requests as sequences arriving --mixed-gap ms
     apart while the earlier ones decode (mkc_batch mixed: time to first
     token from arrival, tokens/s, each request's tokens against alone);
  8. with --profile, builds a second file with mkc --profile, times it too
     (the profiler's own cost) and writes the timeline of one step at the
     middle context; with --prompts, the timeline of the middle prompt's
     chunk instead (DIR/SHAPE_promptN.trace.json and .png);
  9. with --old MKC (another mkc binary, e.g. a build of the commit before
     a change, carried to the GPU machine), builds the same folder with it
     too, checks its tokens, and times both in turns (--rounds rounds of
     step 5's runs, old and new alternately, so that both see the same
     card state): the table gains the old build's ms and new / old; with
     --prompts, its chunked file's time to first token likewise, in turns.
It writes DIR/SHAPE.json (every number) and DIR/SHAPE.log (every command
and its output), and prints the table. MKC_NVCC_FLAGS in the environment
adds flags to every nvcc build of an mkc file (e.g. -split-compile 0).

`turns` (on the GPU machine): the folder of step 2, each mkc binary's
chunked file (--max-chunk) built in parallel, and mkc_ttft on the seeded
prompts of step 6, binary after binary for --rounds rounds, first tokens
checked against transformers float32: the quick test of a change to a
chunk's plan or bodies (DIR/turns.md holds the table), without PyTorch's
timings. With --batches, each binary's --max-seqs file instead (step 7's):
its parity checked, then ms a step of B sequences' tokens at each of
--batch-contexts, binary after binary (the table appended to turns.md).

`report` (here, after fetching the DIRs): appends each SHAPE.md to
bench/RESULTS.md and draws bench/context.png: ms per token against context
for mkc and both baselines, a panel per shape; and, for results with
--batches, bench/batch.png: tokens/s against the sequences a step, mkc beside
the CUDA-graph and torch.compile steps, a panel per shape and context.

Achieved bandwidth counts the bytes a bf16 decode step must move: every
weight once (an untied embedding table only the row it looks up), and the
KV cache in bf16 at the context, over the measured time.
"""
import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from bf16_cache import bf16_cache   # noqa: E402

LLAMA3_ROPE = dict(rope_type="llama3", rope_theta=500000.0, factor=32.0, low_freq_factor=1.0,
                   high_freq_factor=4.0, original_max_position_embeddings=8192)
SHAPES = {
    # name: (family, config)
    "llama-3.2-1b": ("llama", dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                                   num_key_value_heads=8, head_dim=64, intermediate_size=8192,
                                   vocab_size=128256, rms_norm_eps=1e-5, tie_word_embeddings=True,
                                   max_position_embeddings=131072, rope_parameters=LLAMA3_ROPE)),
    "qwen3-0.6b": ("qwen3", dict(hidden_size=1024, num_hidden_layers=28, num_attention_heads=16,
                                 num_key_value_heads=8, head_dim=128, intermediate_size=3072,
                                 vocab_size=151936, rms_norm_eps=1e-6, tie_word_embeddings=True,
                                 max_position_embeddings=40960,
                                 rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    "smollm2-135m": ("llama", dict(hidden_size=576, num_hidden_layers=30, num_attention_heads=9,
                                   num_key_value_heads=3, head_dim=64, intermediate_size=1536,
                                   vocab_size=49152, rms_norm_eps=1e-5, tie_word_embeddings=True,
                                   max_position_embeddings=8192,
                                   rope_parameters=dict(rope_type="default", rope_theta=100000.0))),
    "qwen3-8b": ("qwen3", dict(hidden_size=4096, num_hidden_layers=36, num_attention_heads=32,
                               num_key_value_heads=8, head_dim=128, intermediate_size=12288,
                               vocab_size=151936, rms_norm_eps=1e-6, tie_word_embeddings=False,
                               max_position_embeddings=40960,
                               rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    # for trying the script itself on a machine without a GPU (--device cpu --target c)
    "tiny": ("llama", dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                           num_key_value_heads=2, head_dim=32, intermediate_size=256,
                           vocab_size=512, rms_norm_eps=1e-5, tie_word_embeddings=True,
                           max_position_embeddings=8192,
                           rope_parameters=dict(rope_type="default", rope_theta=10000.0))),
}
PARITY_STEPS = 16
FIRST_TOKEN = 7
MAX_SEQ = 4160      # the largest context timed (4096) plus the tokens generated there
NVCC_FLAGS = os.environ.get("MKC_NVCC_FLAGS", "")   # more nvcc flags for every mkc file


def log(*a):
    print(*a, flush=True)


def sh(cmd, logf=None, timeout=900):
    """Runs cmd; returns (seconds, stdout). Raises with the output's end on failure."""
    t0 = time.time()
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout)
    if logf:
        with open(logf, "a") as f:
            f.write(f"$ {cmd}\n{r.stdout}{r.stderr}\n")
    if r.returncode:
        raise RuntimeError(f"failed ({r.returncode}): {cmd}\n{(r.stdout + r.stderr)[-1500:]}")
    return time.time() - t0, r.stdout


# ---------------------------------------------------------------- PyTorch side

def bandwidth(torch, dev):
    """Read bandwidth (a sum over 4 GiB of bf16) and copy bandwidth (read +
    write counted), medians of 10 after warm-up, in GB/s."""
    if dev == "cpu":
        return {"read_GBps": None, "copy_GBps": None}
    n = 2 << 30
    x = torch.empty(n, dtype=torch.bfloat16, device=dev).uniform_(-1, 1)
    y = torch.empty_like(x)
    res = {}
    for name, fn, nbytes in (("read_GBps", lambda: x.sum(dtype=torch.float32), 2 * n),
                             ("copy_GBps", lambda: y.copy_(x), 4 * n)):
        for _ in range(3):
            fn()
        ts = []
        for _ in range(10):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e-3)
        res[name] = nbytes / statistics.median(ts) / 1e9
    del x, y
    torch.cuda.empty_cache()
    return res


def make_model(torch, transformers, family, cfg, dev, seed=0, std=0.02):
    """float32 on dev, every parameter rounded to bf16 (the saved folder is
    bf16, so float32 arithmetic over these is the reference mkc is held to)."""
    torch.manual_seed(seed)
    config = (transformers.LlamaConfig if family == "llama" else transformers.Qwen3Config)(**cfg)
    cls = transformers.LlamaForCausalLM if family == "llama" else transformers.Qwen3ForCausalLM
    with torch.device(dev):
        model = cls(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(0.8, 1.2)
            else:
                p.normal_(0.0, std)
            p.copy_(p.to(torch.bfloat16).float())
    return model.eval()


def save_bf16(torch, model, folder):
    """model saved to folder as a bf16 Hugging Face folder, rotary frequencies
    kept float32 (as loaded); the model stays bf16."""
    inv = model.model.rotary_emb.inv_freq.clone()
    model.to(torch.bfloat16)
    model.model.rotary_emb.inv_freq = inv
    model.save_pretrained(folder, safe_serialization=True)


def greedy(torch, model, first, steps, dev):
    """transformers, greedy from one token; the new tokens and every step's logits."""
    ids = torch.tensor([[first]], device=dev)
    past, toks, logits = None, [], []
    with torch.no_grad():
        for t in range(steps):
            out = model(input_ids=ids, position_ids=torch.tensor([[t]], device=dev),
                        past_key_values=past, use_cache=True)
            past = out.past_key_values
            lg = out.logits[0, -1].float()
            logits.append(lg)
            toks.append(int(lg.argmax()))
            ids = torch.tensor([[toks[-1]]], device=dev)
    return toks, torch.stack(logits)


def must_move(model, cfg, ctx):
    """Bytes a bf16 decode step at context ctx must read: the weights (an
    untied embedding table only one row) and a bf16 KV cache of ctx + 1."""
    total = sum(p.numel() for p in model.parameters()) * 2
    if not cfg.get("tie_word_embeddings"):
        total -= (cfg["vocab_size"] - 1) * cfg["hidden_size"] * 2
    kv = 2 * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * cfg["head_dim"] * 2
    return total + kv * (ctx + 1)


class StaticDecode:
    """One bf16 decode step over a static KV cache, written with plain
    PyTorch over the model's own weights, so that it can be captured and
    replayed as a CUDA graph (what a careful PyTorch server does)."""

    def __init__(self, torch, model, family, cfg, maxlen, dev, batch=1):
        import torch.nn.functional as F
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
        self.t, self.F, self.rope_apply = torch, F, apply_rotary_pos_emb
        self.m, self.family, self.cfg = model.model, family, cfg
        self.lm_head = model.lm_head.weight
        self.batch = batch   # sequences a step, all at the same position
        L, kvh, hd = cfg["num_hidden_layers"], cfg["num_key_value_heads"], cfg["head_dim"]
        self.k = torch.zeros(L, batch, kvh, maxlen, hd, dtype=torch.bfloat16, device=dev)
        self.v = torch.zeros_like(self.k)
        self.eps = cfg["rms_norm_eps"]

    def fill(self, ctx):
        """Random keys and values in the first ctx positions."""
        g = self.t.Generator(device=self.k.device).manual_seed(1)
        self.k[:, :, :, :ctx].uniform_(-1, 1, generator=g)
        self.v[:, :, :, :ctx].uniform_(-1, 1, generator=g)

    def norm(self, x, w):
        h = x.float()
        h = h * self.t.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return w * h.to(x.dtype)

    def step(self, tok, pos, ctx):
        """tok [B,1] and pos [1] (int64 tensors, the new position = ctx);
        attends over positions 0..ctx; the logits [B, vocab]."""
        t, F, c, B = self.t, self.F, self.cfg, self.batch
        nh, kvh, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        x = self.m.embed_tokens(tok)
        cos, sin = self.m.rotary_emb(x, pos.view(1, 1))
        for i, layer in enumerate(self.m.layers):
            a = layer.self_attn
            h = self.norm(x, layer.input_layernorm.weight)
            q = F.linear(h, a.q_proj.weight, a.q_proj.bias).view(B, 1, nh, hd)
            k = F.linear(h, a.k_proj.weight, a.k_proj.bias).view(B, 1, kvh, hd)
            v = F.linear(h, a.v_proj.weight, a.v_proj.bias).view(B, 1, kvh, hd)
            if self.family == "qwen3":
                q, k = self.norm(q, a.q_norm.weight), self.norm(k, a.k_norm.weight)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            q, k = self.rope_apply(q, k, cos, sin)
            self.k[i].index_copy_(2, pos, k)
            self.v[i].index_copy_(2, pos, v)
            o = F.scaled_dot_product_attention(q, self.k[i][:, :, :ctx + 1],
                                               self.v[i][:, :, :ctx + 1], enable_gqa=True)
            x = x + F.linear(o.transpose(1, 2).reshape(B, 1, nh * hd), a.o_proj.weight)
            h = self.norm(x, layer.post_attention_layernorm.weight)
            mlp = layer.mlp
            x = x + F.linear(F.silu(F.linear(h, mlp.gate_proj.weight)) *
                             F.linear(h, mlp.up_proj.weight), mlp.down_proj.weight)
        return F.linear(self.norm(x, self.m.norm.weight), self.lm_head)[:, -1]


def check_static(torch, sd, ref_toks, ref_logits, dev):
    """Teacher-forced through the reference's tokens: the largest logit
    error relative to the largest reference logit, and top-1 agreement."""
    worst, agree = 0.0, 0
    toks = [FIRST_TOKEN] + ref_toks
    with torch.no_grad():
        for p in range(len(ref_toks)):
            lg = sd.step(torch.tensor([[toks[p]]], device=dev), torch.tensor([p], device=dev),
                         p).float()
            r = ref_logits[p]
            worst = max(worst, float((lg - r).abs().max() / r.abs().max()))
            agree += int(lg.argmax()) == ref_toks[p]
    return worst, agree


def time_graph(torch, step, ctx, reps=3, per=20, batch=1):
    """ms per replay of step(tok, pos, ctx) captured at context ctx (median of reps)."""
    tok = torch.full((batch, 1), FIRST_TOKEN, device="cuda")
    pos = torch.tensor([ctx], device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            step(tok, pos, ctx)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        step(tok, pos, ctx)
    for _ in range(3):
        g.replay()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(per):
            g.replay()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / per)
    del g
    return statistics.median(out)


def compiled(torch, fn, what):
    """fn under torch.compile (inductor's own kernels, no CUDA graphs of its
    own: the callers capture one), or None with a line in the log when it
    cannot be compiled here. Dynamo's caches are cleared first: every batch
    and context is a graph of its own, and past its recompile limit (8 for
    one function) dynamo refuses the next with fullgraph=True (session 38:
    the batch table's 64-sequence rows)."""
    try:
        torch._dynamo.reset()
        return torch.compile(fn, fullgraph=True, dynamic=False)
    except Exception as e:   # noqa: BLE001 - a baseline that fails is reported, not fatal
        log(f"torch.compile of {what} failed: {e}")
        return None


def time_compiled_graph(torch, step, ctx, batch=1):
    """time_graph of a torch.compile'd step; None when it fails (logged)."""
    if step is None:
        return None
    try:
        return time_graph(torch, step, ctx, batch=batch)
    except Exception as e:   # noqa: BLE001
        log(f"torch.compile + CUDA graph at context {ctx} failed: {e}")
        return None


def time_eager(torch, model, ctx, dev, reps=3, per=8):
    """transformers eager bf16: prefill ctx random tokens into a DynamicCache,
    then ms per decode step (each step synchronised; median of reps runs of
    per steps, the cache cropped back to ctx before each)."""
    g = torch.Generator(device=dev).manual_seed(2)
    ids = torch.randint(0, model.config.vocab_size, (1, max(ctx, 1)), device=dev, generator=g)
    with torch.no_grad():
        past = model(input_ids=ids[:, :ctx], use_cache=True).past_key_values if ctx else None
        out = []
        for r in range(reps + 1):
            extra = past.get_seq_length() - ctx if past is not None else 0
            if extra > 0:
                past.crop(-extra)   # drop the previous run's tokens
            tok = torch.tensor([[FIRST_TOKEN]], device=dev)
            sync = torch.cuda.synchronize if dev != "cpu" else (lambda: None)
            sync()
            t0 = time.perf_counter()
            for j in range(per):
                o = model(input_ids=tok, position_ids=torch.tensor([[ctx + j]], device=dev),
                          past_key_values=past, use_cache=True)
                past = o.past_key_values
                tok = o.logits[:, -1:].argmax(-1)
            sync()
            if r:   # the first run warms up
                out.append((time.perf_counter() - t0) * 1e3 / per)
    return statistics.median(out)


# ---------------------------------------------------------------- mkc side

def mkc_build(folder, work, target, profile, logf, workers, kv, mkc=None, name=None, chunk=1,
              steps=1, seqs=0, max_seq=MAX_SEQ):
    """Compiles folder with mkc (build/mkc, or the binary mkc) and nvcc into
    work/name (steps of up to chunk tokens); returns the folder and the
    seconds of each."""
    ext = "cu" if target == "cuda" else "c"
    sub = os.path.join(work, name or ("prof" if profile else "plain"))
    os.makedirs(sub, exist_ok=True)
    src = os.path.join(sub, f"llama.{ext}")
    flags = f"--workers {workers} --max-seq {max_seq} --max-dim {max_seq} --kv {kv}"
    if seqs:
        flags += f" --max-seqs {seqs}"
    if profile:
        flags += f" --profile-steps {steps}"
    if chunk > 1:
        flags += f" --max-chunk {chunk}"
    t_mkc, _ = sh(f"{mkc or ROOT + '/build/mkc'} {folder} -o {src} {flags}", logf)
    if target == "cuda":
        t_cc, _ = sh(f"nvcc -gencode=arch=compute_90a,code=sm_90a -O2 {NVCC_FLAGS} -c {src} "
                     f"-o {sub}/llama.o", logf)
        link = "nvcc -o"
        cflags = "-I/usr/local/cuda/include"
    else:
        t_cc, _ = sh(f"cc -O2 -c {src} -o {sub}/llama.o", logf)
        link = "cc -pthread -lm -o"
        cflags = ""
    progs = (("mkc_batch", "bench/mkc_batch.c"),) if seqs else (
        ("generate", "examples/generate.c"), ("mkc_bench", "bench/mkc_bench.c"),
        ("mkc_ttft", "bench/mkc_ttft.c"))
    for prog, c in progs:
        extra = " -DBENCH_CUDA" if target == "cuda" and prog == "mkc_batch" else ""
        sh(f"cc -O2 -I{sub} {cflags}{extra} -c {ROOT}/{c} -o {sub}/{prog}.o", logf)
        sh(f"{link} {sub}/{prog} {sub}/{prog}.o {sub}/llama.o -lm", logf)
    return sub, t_mkc, t_cc


def tokens_at(ctx, big):
    """Tokens generated per timed run from context ctx."""
    n = 32 if ctx < 1000 else 16 if ctx < 4000 else 8
    return max(2, n // 2) if big else n


def mkc_time(sub, folder, contexts, n_new, row, logf, trace=None):
    """ms per token at each context, one process (the weights loaded once)."""
    _, out = sh(f"{sub}/mkc_bench {folder} {','.join(map(str, contexts))} "
                f"{','.join(map(str, n_new))} 3 {row}" + (f" {trace}" if trace else ""), logf)
    ms = {}
    for line in out.splitlines():
        if line.startswith("median: context "):
            ms[int(line.split()[2].rstrip(","))] = float(line.split(",")[1].split()[0])
    return [ms[c] for c in contexts]


def prompt_refs(torch, model, cfg, prompts, dev):
    """Seeded random prompts, and transformers' (float32) first token after each."""
    g = torch.Generator().manual_seed(1)
    refs = {}
    for n in prompts:
        ids = torch.randint(cfg["vocab_size"], (1, n), generator=g)
        with torch.no_grad():
            lg = model(ids.to(dev), logits_to_keep=1).logits[0, -1].float()
        top = lg.topk(2)
        refs[n] = {"ids": ids[0].tolist(), "token": int(top.indices[0]),
                   "margin": float(top.values[0] - top.values[1])}
    return refs


def time_prefill(torch, model, ids, dev, reps=5):
    """ms of one forward over the prompt (transformers, the model's dtype, SDPA),
    the last position's logits only; median of reps after a warm-up."""
    x = torch.tensor([ids], device=dev)
    sync = torch.cuda.synchronize if dev != "cpu" else (lambda: None)
    out = []
    with torch.no_grad():
        for r in range(reps + 1):
            sync()
            t0 = time.perf_counter()
            lg = model(x, logits_to_keep=1).logits
            sync()
            if r:
                out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out), int(lg[0, -1].argmax())


def write_prompts(path, refs):
    """refs' prompts as mkc_ttft reads them: a line each, the count, then the tokens."""
    with open(path, "w") as f:
        for n, r in refs.items():
            f.write(f"{n} {' '.join(map(str, r['ids']))}\n")
    return path


def run_ttft(sub, folder, path, logf):
    """{prompt: (first token, median ms)} of one run of sub's mkc_ttft."""
    _, out = sh(f"{sub}/mkc_ttft {folder} {path} 3", logf, timeout=1200)
    got = {}
    for line in out.splitlines():
        if line.startswith("prompt "):
            n = int(line.split()[1].rstrip(":"))
            got[n] = (int(line.split("token ")[1].split(",")[0]),
                      float(line.split("median ")[1]))
    return got


def ttft(a, torch, model, cfg, folder, work, logf, refs, n_new, row, plain_ms):
    """Time to first token: mkc (a file compiled with --max-chunk) and
    transformers bf16 on the same prompts; mkc's token checked first. The
    chunked file's decode step (S = 1) is timed too, beside the plain file's
    (plain_ms): one file serves both."""
    csub, t_mkc, t_cc = mkc_build(folder, work, a.target, False, logf, a.workers, a.kv,
                                  name="chunk", chunk=a.max_chunk)
    log(f"{a.shape}: --max-chunk {a.max_chunk}: mkc {t_mkc:.1f} s, nvcc {t_cc:.1f} s")
    path = write_prompts(os.path.join(csub, "prompts.txt"), refs)

    old = None
    if a.old:   # the old build's chunked file, in turns (a.rounds rounds), as the decode steps
        osub, _, _ = mkc_build(folder, work, a.target, False, logf, a.workers, a.kv, a.old,
                               name="old_chunk", chunk=a.max_chunk)
        runs, oruns = [], []
        for _ in range(a.rounds):
            runs.append(run_ttft(csub, folder, path, logf))
            oruns.append(run_ttft(osub, folder, path, logf))

        def med(rs):
            return {n: (rs[0][n][0], statistics.median(r[n][1] for r in rs if n in r))
                    for n in rs[0]}
        got, old = med(runs), med(oruns)
    else:
        got = run_ttft(csub, folder, path, logf)
    rows = []
    cmodel = None if a.no_compile else compiled(torch, model, "transformers' forward")
    for n, r in refs.items():
        tok, ms = got.get(n, (None, None))
        pr = {"prompt": n, "mkc_ms": ms, "mkc_token": tok, "ref_token": r["token"],
              "ref_margin": r["margin"], "same": tok == r["token"],
              "flops": 2 * sum(p.numel() for p in model.parameters()) * n}
        if old and n in old:
            pr["old_mkc_token"], pr["old_mkc_ms"] = old[n]
            log(f"{a.shape}: prompt {n}: the old mkc {pr['old_mkc_ms']:.3f} ms (token "
                f"{pr['old_mkc_token']}), new / old {ms / pr['old_mkc_ms']:.3f}")
        pr["eager_ms"], pr["eager_token"] = time_prefill(torch, model, r["ids"], a.device)
        if cmodel is not None:
            try:
                pr["compiled_ms"], pr["compiled_token"] = time_prefill(torch, cmodel, r["ids"],
                                                                       a.device)
            except Exception as e:   # noqa: BLE001 - reported, not fatal
                log(f"{a.shape}: prompt {n}: torch.compile failed: {e}")
        rows.append(pr)
        log(f"{a.shape}: prompt {n}: mkc {ms} ms (token {tok}, transformers float32 {r['token']}, "
            f"margin {r['margin']:.3g}), transformers bf16 eager {pr['eager_ms']:.2f} ms, "
            f"torch.compile {pr.get('compiled_ms', float('nan')):.2f} ms")
    res = {"max_chunk": a.max_chunk, "mkc_compile_s": t_mkc, "cc_compile_s": t_cc, "rows": rows}
    if old:
        res["rounds"] = a.rounds
    res["decode"] = []
    for ctx, ms, plain in zip(a.contexts, mkc_time(csub, folder, a.contexts, n_new, row, logf),
                              plain_ms):
        res["decode"].append({"context": ctx, "mkc_ms": ms, "plain_ms": plain})
        log(f"{a.shape}: the --max-chunk {a.max_chunk} file's decode step at context {ctx}: "
            f"{ms:.3f} ms (the plain file's {plain:.3f} ms)")
    if a.profile:
        res["profile"] = ttft_profile(a, folder, work, logf, refs)
    return res


BATCH_STEPS = 16   # steps timed a run of mkc_batch
GEN_PROMPT, GEN_NEW = 128, 64   # generate_batch's requests (mkc_batch gen)


def same_tokens(r):
    """Whether generate_batch's two loops gave the same tokens (-: one did not run)."""
    if "kernel_tokens" not in r or "host_tokens" not in r:
        return "-"
    return "yes" if r["kernel_tokens"] == r["host_tokens"] else "NO"


def parse_mixed(out):
    """mkc_batch mixed's line as a dict (empty if none)."""
    m = re.search(r"mixed: (\d+) requests, prompt (\d+), new (\d+), ([\d.]+) ms apart: "
                  r"([\d.]+) ms, first token ([\d.]+) / ([\d.]+) ms .*?, ([\d.]+) tokens/s, "
                  r"(\d+) steps of ([\d.]+) rows on average, same as alone: (\d+) of (\d+)", out)
    if not m:
        return {}
    keys = ("requests", "prompt", "new", "gap_ms", "ms", "first_p50_ms", "first_p90_ms",
            "tokens_s", "steps", "rows", "same", "of")
    res = {k: float(v) if "." in v else int(v) for k, v in zip(keys, m.groups())}
    # where the others parted from their tokens alone: a near tie, or not
    t = re.search(r"parted at a near tie \(the largest gap ([\d.e+-]+)\)", out)
    far = re.search(r"(request \d+ parted at its token \d+, not at a near tie[^\n]*)", out)
    if t:
        res["tie_gap"] = float(t.group(1))
    if far:
        res["far"] = far.group(1)
    return res


def batch_run(a, torch, model, family, cfg, folder, work, logf, row):
    """Several sequences a step (issue 30): mkc (a file compiled with
    --max-seqs) against PyTorch's static-cache step over a batch, as a CUDA
    graph and under torch.compile; every sequence at the same context. Its
    greedy tokens are checked first: 8 sequences of different prompts
    together, each against itself alone, teacher-forced (mkc_batch parity:
    a token may differ only where its logit is within 1e-2 of the row's largest)."""
    most = max(a.batches)
    ctxs = a.batch_contexts
    maxlen = max(max(ctxs) + BATCH_STEPS * 4, GEN_PROMPT + GEN_NEW) + 64
    bsub, t_mkc, t_cc = mkc_build(folder, work, a.target, False, logf, a.workers, a.kv,
                                  name="batch", chunk=max(most, 32), seqs=most, max_seq=maxlen)
    log(f"{a.shape}: --max-seqs {most}: mkc {t_mkc:.1f} s, {'nvcc' if a.target == 'cuda' else 'cc'} {t_cc:.1f} s")
    res = {"max_seqs": most, "mkc_compile_s": t_mkc, "cc_compile_s": t_cc, "rows": [], "gen": []}
    # the same file with generate_batch's loop on the host (a launch a step), built
    # while the GPU runs the rest, to time against the loop in one launch
    host = None
    if a.target == "cuda":
        host = subprocess.Popen(
            f"nvcc -gencode=arch=compute_90a,code=sm_90a -O2 {NVCC_FLAGS} "
            f"-DMKC_BATCH_IN_KERNEL=0 -c {bsub}/llama.cu -o {bsub}/llama_host.o && "
            f"nvcc -o {bsub}/mkc_batch_host "
            f"{bsub}/mkc_batch.o {bsub}/llama_host.o -lm", shell=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _, out = sh(f"{bsub}/mkc_batch {folder} parity {min(8, most)} {PARITY_STEPS} 1e-2", logf)
    res["parity"] = out.strip().splitlines()[-1] if out.strip() else "no output"
    log(f"{a.shape}: {res['parity']}")
    ms = {}
    for ctx in ctxs:
        _, out = sh(f"{bsub}/mkc_batch {folder} time {ctx} {','.join(map(str, a.batches))} "
                    f"{BATCH_STEPS} 3 {row}", logf, timeout=1200)
        for line in out.splitlines():
            if line.startswith("median: batch "):
                f = line.replace(",", "").split()
                ms[(int(f[2]), int(f[4]))] = float(f[5])
    # generate_batch: b requests of GEN_PROMPT tokens and GEN_NEW greedy tokens each
    progs = [("kernel", f"{bsub}/mkc_batch")]
    if host is not None:
        out, _ = host.communicate()
        with open(logf, "a") as f:
            f.write(out)
        if host.returncode == 0:
            progs.append(("host", f"{bsub}/mkc_batch_host"))
    gen = {}
    for name, prog in progs:
        _, out = sh(f"{prog} {folder} gen {','.join(map(str, a.batches))} {GEN_PROMPT} {GEN_NEW} 3",
                    logf, timeout=1200)
        for line in out.splitlines():
            if line.startswith("gen median: batch "):
                f = line.replace(",", "").split()
                gen[(name, int(f[3]))] = (float(f[8]), float(f[10]), float(f[14]), f[17])
    # the mixed run: twice as many requests as sequences, arriving a.mixed_gap ms
    # apart while the earlier ones decode (a server's loop, a step at a time)
    n_req = 2 * most
    try:
        _, out = sh(f"{bsub}/mkc_batch {folder} mixed {n_req} {GEN_PROMPT} {GEN_NEW} "
                    f"{a.mixed_gap}", logf, timeout=1200)
    except RuntimeError as e:   # a request parted beyond a near tie: reported, kept
        out = str(e)
    res["mixed"] = parse_mixed(out)
    log(f"{a.shape}: mixed: {res['mixed']}")
    for b in a.batches:
        r = {"batch": b, "prompt": GEN_PROMPT, "new": GEN_NEW}
        for name, _ in progs:
            if (name, b) in gen:
                g_ms, tps, first, h = gen[(name, b)]
                r.update({f"{name}_ms": g_ms, f"{name}_tokens_s": tps, f"{name}_first_ms": first,
                          f"{name}_tokens": h})
        res["gen"].append(r)
        log(f"{a.shape}: generate_batch of {b}: in one launch {r.get('kernel_ms')} ms "
            f"({r.get('kernel_tokens_s')} tokens/s), a launch a step {r.get('host_ms')} ms; "
            f"same tokens: {same_tokens(r)}")
    for b in a.batches:
        sd = StaticDecode(torch, model, family, cfg, maxlen, a.device, batch=b) \
            if a.device != "cpu" else None
        comp = None if sd is None or a.no_compile else compiled(torch, sd.step, f"the batch {b} step")
        for ctx in ctxs:
            r = {"batch": b, "context": ctx, "mkc_ms": ms.get((b, ctx))}
            if sd is not None:
                sd.fill(ctx)
                r["graph_ms"] = time_graph(torch, sd.step, ctx, batch=b)
                c = time_compiled_graph(torch, comp, ctx, batch=b)
                if c is not None:
                    r["compiled_ms"] = c
            res["rows"].append(r)
            log(f"{a.shape}: batch {b}, context {ctx}: mkc {r['mkc_ms']} ms, graph "
                f"{r.get('graph_ms', float('nan')):.3f} ms, torch.compile + graph "
                f"{r.get('compiled_ms', float('nan')):.3f} ms")
        del sd, comp
    return res


def ttft_profile(a, folder, work, logf, refs):
    """The timeline of the middle prompt's chunk (a file compiled with
    --profile): the prompt but its last token in one step when it fits the
    chunk, then the decode step; the report is of the chunk's step."""
    n = sorted(refs)[len(refs) // 2]
    psub, _, _ = mkc_build(folder, work, a.target, True, logf, a.workers, a.kv, name="chunkprof",
                           chunk=a.max_chunk, steps=2 + (n - 2) // a.max_chunk)
    path = write_prompts(os.path.join(psub, "prompt.txt"), {n: refs[n]})
    trace = os.path.join(a.out, f"{a.shape}_prompt{n}.trace.json")
    _, out = sh(f"{psub}/mkc_ttft {folder} {path} 3 {trace}", logf, timeout=1200)
    log(f"{a.shape}: --profile, prompt {n}: {out.strip()}")
    _, rep = sh(f"python3 {ROOT}/tools/profile_report.py {trace} --step 0 "
                f"--png {trace[:-len('.trace.json')]}.png", logf)
    log(rep)
    return {"prompt": n, "trace": os.path.basename(trace), "timed": out.strip(), "report": rep}


def turns(a):
    """Time to first token of several mkc binaries on one folder, in turns
    (bench/run.py turns): the quick check of a change to a chunk's plan or
    bodies, without the PyTorch baselines. Writes DIR/turns.md; 1 when a
    build fails or gives another first token than transformers float32."""
    import concurrent.futures
    import torch
    import transformers
    family, cfg = SHAPES[a.shape]
    os.makedirs(a.out, exist_ok=True)
    logf = os.path.join(a.out, f"{a.shape}.turns.log")
    work = os.path.join(a.work or a.out, a.shape)
    folder = os.path.join(work, "hf")
    t0 = time.time()
    model = make_model(torch, transformers, family, cfg, a.device)
    refs = prompt_refs(torch, model, cfg, a.prompts, a.device)
    save_bf16(torch, model, folder)
    del model
    log(f"{a.shape}: folder made, first tokens {[r['token'] for r in refs.values()]} "
        f"({time.time() - t0:.0f} s)")
    path = write_prompts(os.path.join(work, "prompts.txt"), refs)
    names = [m.split("=", 1)[0] for m in a.mkc]
    bins = {m.split("=", 1)[0]: m.split("=", 1)[1] for m in a.mkc}
    if a.batches:
        return batch_turns(a, folder, work, logf, names, bins, cfg)

    def build(name):
        return mkc_build(folder, work, a.target, False, logf, a.workers, a.kv, bins[name],
                         name=f"turns_{name}", chunk=a.max_chunk)

    with concurrent.futures.ThreadPoolExecutor(len(names)) as ex:
        subs = dict(zip(names, ex.map(build, names)))
    for nm in names:
        log(f"{a.shape}: {nm}: mkc {subs[nm][1]:.1f} s, {'nvcc' if a.target == 'cuda' else 'cc'} "
            f"{subs[nm][2]:.1f} s")
    got = {nm: [] for nm in names}
    for r in range(a.rounds):
        for nm in names:
            row = run_ttft(subs[nm][0], folder, path, logf)
            got[nm].append(row)
            log(f"{a.shape}: round {r + 1} {nm}: " +
                " / ".join(f"{row[n][1]:.3f}" for n in a.prompts) + " ms")
    bad = 0
    lines = [f"| build | " + " | ".join(f"{n} tokens" for n in a.prompts) + " |",
             "| --- |" + " --- |" * len(a.prompts)]
    for nm in names:
        cells = []
        for n in a.prompts:
            toks = {rr[n][0] for rr in got[nm]}
            same = toks == {refs[n]["token"]}
            bad += not same
            cells.append(" / ".join(f"{rr[n][1]:.3f}" for rr in got[nm]) +
                         ("" if same else f" (token {sorted(toks)}, not {refs[n]['token']})"))
        lines.append(f"| {nm} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    with open(os.path.join(a.out, "turns.md"), "w") as f:
        f.write(f"{a.shape}, --max-chunk {a.max_chunk}, ms to the first token, medians of 3, "
                f"{a.rounds} rounds in turns:\n\n{table}\n")
    log(table)
    return 1 if bad else 0


def batch_turns(a, folder, work, logf, names, bins, cfg):
    """turns --batches: steps of several sequences (a --max-seqs file) of each
    build in turns, each build's parity checked first (as batch_run's);
    appends the table to DIR/turns.md."""
    import concurrent.futures
    most = max(a.batches)
    maxlen = max(max(a.batch_contexts) + BATCH_STEPS * 4, GEN_PROMPT + GEN_NEW) + 64
    row = cfg["num_key_value_heads"] * cfg["head_dim"]

    def build(name):
        return mkc_build(folder, work, a.target, False, logf, a.workers, a.kv, bins[name],
                         name=f"batch_{name}", chunk=max(most, 32), seqs=most, max_seq=maxlen)

    with concurrent.futures.ThreadPoolExecutor(len(names)) as ex:
        subs = dict(zip(names, ex.map(build, names)))
    bad = 0
    parity = {}
    for nm in names:
        try:
            _, out = sh(f"{subs[nm][0]}/mkc_batch {folder} parity {min(8, most)} "
                        f"{PARITY_STEPS} 1e-2", logf)
        except RuntimeError as e:   # a token past the tolerance: timed all the same
            out, bad = str(e), bad + 1
        parity[nm] = out.strip().splitlines()[-1] if out.strip() else "no output"
        log(f"{a.shape}: {nm}: mkc {subs[nm][1]:.1f} s, nvcc {subs[nm][2]:.1f} s; {parity[nm]}")
    got = {}
    for r in range(a.rounds):
        for nm in names:
            for ctx in a.batch_contexts:
                _, out = sh(f"{subs[nm][0]}/mkc_batch {folder} time {ctx} "
                            f"{','.join(map(str, a.batches))} {BATCH_STEPS} 3 {row}", logf,
                            timeout=1200)
                for line in out.splitlines():
                    if line.startswith("median: batch "):
                        f = line.replace(",", "").split()
                        got.setdefault((nm, int(f[2]), int(f[4])), []).append(float(f[5]))
                        log(f"{a.shape}: round {r + 1} {nm}: {line}")   # kept if cut short
    lines = ["| build | " + " | ".join(f"batch {b}, context {c}" for b in a.batches
                                       for c in a.batch_contexts) + " |",
             "| --- |" + " --- |" * (len(a.batches) * len(a.batch_contexts))]
    for nm in names:
        lines.append(f"| {nm} | " + " | ".join(
            " / ".join(f"{v:.3f}" for v in got.get((nm, b, c), [])) or "-"
            for b in a.batches for c in a.batch_contexts) + " |")
    table = "\n".join(lines)
    with open(os.path.join(a.out, "turns.md"), "a") as f:
        f.write(f"{a.shape}, --max-seqs {most}, ms a step of B tokens (one a sequence, every "
                f"sequence at the context), medians of 3, {a.rounds} rounds in turns:\n\n"
                f"{table}\n\n" + "".join(f"- {nm}: {parity[nm]}\n" for nm in names))
    log(table)
    return 1 if bad else 0


def run(a):
    import torch
    import transformers
    family, cfg = SHAPES[a.shape]
    dev = a.device
    os.makedirs(a.out, exist_ok=True)
    logf = os.path.join(a.out, f"{a.shape}.log")
    work = os.path.join(a.work or a.out, a.shape)
    folder = os.path.join(work, "hf")
    res = {"shape": a.shape, "family": family, "config": cfg, "commit": os.environ.get("COMMIT"),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "torch": torch.__version__, "transformers": transformers.__version__}
    if dev != "cpu":
        res["card"] = torch.cuda.get_device_name()
        try:
            res["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                            "--format=csv,noheader"], capture_output=True,
                                           text=True).stdout.split("\n")[0].strip()
        except OSError:
            res["driver"] = None
    t0 = time.time()
    res.update(bandwidth(torch, dev))
    log(f"{a.shape}: bandwidth read {res['read_GBps']} GB/s, copy {res['copy_GBps']} GB/s")

    model = make_model(torch, transformers, family, cfg, dev)
    res["kv"] = a.kv
    with bf16_cache(torch) if a.kv == "bf16" else contextlib.nullcontext():
        ref_toks, ref_logits = greedy(torch, model, FIRST_TOKEN, PARITY_STEPS, dev)
    refs = prompt_refs(torch, model, cfg, a.prompts, dev)
    save_bf16(torch, model, folder)
    res["weights_bytes"] = sum(p.numel() for p in model.parameters()) * 2
    log(f"{a.shape}: folder made ({res['weights_bytes'] / 1e9:.2f} GB of bf16), "
        f"reference tokens {ref_toks} ({time.time() - t0:.0f} s)")

    sub, res["mkc_compile_s"], res["cc_compile_s"] = mkc_build(folder, work, a.target, False,
                                                                logf, a.workers, a.kv)
    log(f"{a.shape}: mkc {res['mkc_compile_s']:.1f} s, {'nvcc' if a.target == 'cuda' else 'cc'} "
        f"{res['cc_compile_s']:.1f} s")
    subs = [("mkc", sub)]
    if a.old:
        osub, res["old_mkc_compile_s"], _ = mkc_build(folder, work, a.target, False, logf,
                                                      a.workers, a.kv, a.old, "old")
        subs.append(("the old mkc", osub))
    for who, s in subs:
        _, out = sh(f"{s}/generate {folder} {PARITY_STEPS} {FIRST_TOKEN}", logf)
        toks = [int(x) for x in out.split("tokens:")[1].split("\n")[0].split()]
        res["parity" if s == sub else "old_parity"] = {"reference": ref_toks, "mkc": toks,
                                                       "same": toks == ref_toks}
        if toks != ref_toks:
            where = next(i for i, (x, y) in enumerate(zip(toks, ref_toks)) if x != y)
            res["error"] = (f"{who}'s tokens (--kv {a.kv}) differ from transformers (float32) from "
                            f"token {where}: {toks[where:where + 4]} vs {ref_toks[where:where + 4]}; "
                            "not timed")
            log(f"{a.shape}: {res['error']}")
            json.dump(res, open(os.path.join(a.out, f"{a.shape}.json"), "w"), indent=1)
            return 1
        log(f"{a.shape}: {who}: {PARITY_STEPS} greedy tokens identical to transformers float32")

    row = cfg["num_key_value_heads"] * cfg["head_dim"]
    sd = StaticDecode(torch, model, family, cfg, MAX_SEQ, dev)
    err, agree = check_static(torch, sd, ref_toks, ref_logits, dev)
    res["static_check"] = {"max_rel_logit_error": err, "top1_agree": agree}
    log(f"{a.shape}: the static-cache PyTorch step vs transformers float32: logit error {err:.2e}, "
        f"top-1 {agree}/{PARITY_STEPS}")
    if err > 0.1:
        res["error"] = f"the static-cache baseline disagrees with transformers ({err:.2e}); not timed"
        log(f"{a.shape}: {res['error']}")
        json.dump(res, open(os.path.join(a.out, f"{a.shape}.json"), "w"), indent=1)
        return 1
    del ref_logits

    rows = []
    sd_compiled = None if a.no_compile or dev == "cpu" else compiled(torch, sd.step, "the static step")
    big = res["weights_bytes"] > 8e9
    n_new = [tokens_at(c, big) for c in a.contexts]
    res["tokens_per_run"] = n_new
    if a.old:   # in turns, so that both see the same card
        runs = {"new": [], "old": []}
        for _ in range(a.rounds):
            runs["new"].append(mkc_time(sub, folder, a.contexts, n_new, row, logf))
            runs["old"].append(mkc_time(osub, folder, a.contexts, n_new, row, logf))
        res["ab_rounds"] = runs
        mkc_ms = [statistics.median(x[i] for x in runs["new"]) for i in range(len(a.contexts))]
        old_ms = [statistics.median(x[i] for x in runs["old"]) for i in range(len(a.contexts))]
    else:
        mkc_ms = mkc_time(sub, folder, a.contexts, n_new, row, logf)
        old_ms = [None] * len(a.contexts)
    for ctx, ms, oms in zip(a.contexts, mkc_ms, old_ms):
        r = {"context": ctx, "must_move_bytes": must_move(model, cfg, ctx), "mkc_ms": ms}
        if oms is not None:
            r["old_mkc_ms"] = oms
        r["eager_ms"] = time_eager(torch, model, ctx, dev)
        if dev != "cpu":
            sd.fill(ctx)
            r["graph_ms"] = time_graph(torch, sd.step, ctx)
            if sd_compiled is not None:
                ms_c = time_compiled_graph(torch, sd_compiled, ctx)
                if ms_c is not None:
                    r["compiled_ms"] = ms_c
        rows.append(r)
        log(f"{a.shape}: context {ctx}: mkc {r['mkc_ms']:.3f} ms" +
            (f" (old {oms:.3f} ms, new / old {ms / oms:.3f})" if oms else "") +
            f", eager {r['eager_ms']:.3f} ms, graph {r.get('graph_ms', float('nan')):.3f} ms"
            f", torch.compile + graph {r.get('compiled_ms', float('nan')):.3f} ms")
    res["rows"] = rows
    if a.prompts:
        res["ttft"] = ttft(a, torch, model, cfg, folder, work, logf, refs, n_new, row,
                           [r["mkc_ms"] for r in rows])

    if a.batches:
        res["batch"] = batch_run(a, torch, model, family, cfg, folder, work, logf, row)

    if a.profile and not a.prompts:
        psub, _, res["cc_compile_profile_s"] = mkc_build(folder, work, a.target, True, logf,
                                                          a.workers, a.kv)
        mid = a.contexts[len(a.contexts) // 2]
        trace = os.path.join(a.out, f"{a.shape}_ctx{mid}.trace.json")
        res["profile"] = {"context": mid, "trace": os.path.basename(trace), "overhead": []}
        ctxs = a.contexts[:2]
        for ctx, ms in zip(ctxs, mkc_time(psub, folder, ctxs, n_new[:2], row, logf)):
            plain = next(r["mkc_ms"] for r in rows if r["context"] == ctx)
            res["profile"]["overhead"].append({"context": ctx, "plain_ms": plain, "profile_ms": ms})
            log(f"{a.shape}: --profile at context {ctx}: {ms:.3f} ms vs {plain:.3f} ms plain")
        mkc_time(psub, folder, [mid], [1], row, logf, trace)
        _, rep = sh(f"python3 {ROOT}/tools/profile_report.py {trace}", logf)
        res["profile"]["report"] = rep
        log(rep)
    res["wall_s"] = time.time() - t0
    json.dump(res, open(os.path.join(a.out, f"{a.shape}.json"), "w"), indent=1)
    log(table(res))
    return 0


# ---------------------------------------------------------------- report

def table(res):
    bw = res.get("read_GBps")
    driver = str(res.get("driver")).split("\n")[0]   # one line per GPU in early runs
    lines = [f"### {res['shape']} ({res.get('card', 'no GPU')}, driver {driver}, "
             f"commit {res.get('commit')}, {res['date']})", "",
             f"bf16 weights {res['weights_bytes'] / 1e9:.2f} GB; measured read bandwidth "
             f"{bw or 0:.0f} GB/s (copy {res.get('copy_GBps') or 0:.0f}); mkc compile "
             f"{res['mkc_compile_s']:.1f} s, nvcc {res['cc_compile_s']:.1f} s; "
             f"KV caches {res.get('kv', 'f32')}; {PARITY_STEPS} greedy tokens identical to "
             f"transformers float32{' (its cache rounded to bf16 as mkc keeps it)' if res.get('kv') == 'bf16' else ''}; torch "
             f"{res['torch']}, transformers {res['transformers']}.", "",
             "| context | mkc ms/token | GB/s | % of read bw | floor ms | eager ms | graph ms "
             "| compile + graph ms | mkc / fastest baseline |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    nan = float("nan")
    for r in res["rows"]:
        gbps = r["must_move_bytes"] / r["mkc_ms"] / 1e6
        floor = r["must_move_bytes"] / bw / 1e6 if bw else nan
        best = min(r.get(k, nan) for k in ("eager_ms", "graph_ms", "compiled_ms") if k in r)
        lines.append(f"| {r['context']} | {r['mkc_ms']:.3f} | {gbps:.0f} | "
                     f"{100 * gbps / bw if bw else nan:.1f}% | {floor:.3f} | "
                     f"{r['eager_ms']:.3f} | {r.get('graph_ms', nan):.3f} | "
                     f"{r.get('compiled_ms', nan):.3f} | {r['mkc_ms'] / best:.2f}x |")
    t = res.get("ttft")
    if t:
        lines += ["", f"Time to first token (`--max-chunk {t['max_chunk']}`: mkc "
                  f"{t['mkc_compile_s']:.1f} s, nvcc {t['cc_compile_s']:.1f} s; transformers bf16, "
                  "one forward over the prompt, SDPA):", "",
                  "| prompt | mkc ms | mkc TFLOPS | eager ms | torch.compile ms "
                  "| mkc / fastest baseline | first token = float32 reference |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in t["rows"]:
            best = min(r.get(k, nan) for k in ("eager_ms", "compiled_ms") if k in r)
            ms = r["mkc_ms"] or nan
            lines.append(f"| {r['prompt']} | {ms:.2f} | {r['flops'] / ms * 1e-9:.1f} | "
                         f"{r['eager_ms']:.2f} | {r.get('compiled_ms', nan):.2f} | "
                         f"{ms / best:.2f}x | {'yes' if r['same'] else 'NO'} |")
        if "old_mkc_ms" in t["rows"][0]:
            lines += ["", "The old mkc build's chunked file, in turns with this one "
                      f"({t.get('rounds')} rounds, medians): " +
                      "; ".join(f"{r['prompt']} tokens: old {r['old_mkc_ms']:.2f} ms, new "
                                f"{r['mkc_ms'] or nan:.2f} ms, new / old "
                                f"{(r['mkc_ms'] or nan) / r['old_mkc_ms']:.3f}"
                                f"{'' if r['old_mkc_token'] == r['mkc_token'] else ' (other token)'}"
                                for r in t["rows"] if "old_mkc_ms" in r) + "."]
    bt = res.get("batch")
    if bt:
        lines += ["", f"Several sequences a step (`--max-seqs {bt['max_seqs']}`: mkc "
                  f"{bt['mkc_compile_s']:.1f} s, nvcc {bt['cc_compile_s']:.1f} s; {bt['parity']}; "
                  "every sequence at the context; PyTorch's static-cache step over the batch):",
                  "", "| batch | context | mkc ms/step | mkc tokens/s | graph ms | compile + graph ms "
                  "| mkc / fastest baseline | step / batch-1 step |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        one = {r["context"]: r["mkc_ms"] for r in bt["rows"] if r["batch"] == 1}
        for r in bt["rows"]:
            ms = r["mkc_ms"] or nan
            best = min([r[k] for k in ("graph_ms", "compiled_ms") if k in r] or [nan])
            lines.append(f"| {r['batch']} | {r['context']} | {ms:.3f} | {r['batch'] * 1e3 / ms:.0f} "
                         f"| {r.get('graph_ms', nan):.3f} | {r.get('compiled_ms', nan):.3f} | "
                         f"{ms / best:.2f}x | {ms / (one.get(r['context']) or nan):.2f} |")
        if bt.get("gen"):
            lines += ["", f"generate_batch (`mkc_batch gen`: requests of {GEN_PROMPT} prompt tokens "
                      f"and {GEN_NEW} greedy tokens each, medians of 3 calls): the loop in one "
                      "launch against the same file built with the loop on the host "
                      "(MKC_BATCH_IN_KERNEL=0, a launch a step):", "",
                      "| requests | one launch ms | tokens/s | first token ms | a launch a step ms "
                      "| tokens/s | first token ms | same tokens |",
                      "| --- | --- | --- | --- | --- | --- | --- | --- |"]
            for r in bt["gen"]:
                lines.append(f"| {r['batch']} | {r.get('kernel_ms', nan):.1f} | "
                             f"{r.get('kernel_tokens_s', nan):.0f} | {r.get('kernel_first_ms', nan):.1f} | "
                             f"{r.get('host_ms', nan):.1f} | {r.get('host_tokens_s', nan):.0f} | "
                             f"{r.get('host_first_ms', nan):.1f} | "
                             f"{same_tokens(r)} |")
        mx = bt.get("mixed")
        if mx:
            lines += ["", f"Mixed run (`mkc_batch mixed`: {mx['requests']} requests of "
                      f"{mx['prompt']} prompt and {mx['new']} greedy tokens arriving "
                      f"{mx['gap_ms']} ms apart, a server's loop of `_step_seqs` on the host, "
                      f"each step every decoding request's token and the waiting prompts' "
                      f"chunks): {mx['ms']:.1f} ms, {mx['tokens_s']:.0f} tokens/s, first "
                      f"token {mx['first_p50_ms']:.1f} ms (median) / {mx['first_p90_ms']:.1f} "
                      f"(90th percentile) from arrival, {mx['steps']} steps of "
                      f"{mx['rows']:.1f} rows on average; {mx['same']} of {mx['of']} requests "
                      "the tokens they get alone" +
                      (f", the others parted from them at near ties (largest gap "
                       f"{mx['tie_gap']:.3g})" if "tie_gap" in mx else "") +
                      (f"; {mx['far']}" if "far" in mx else "") + "."]
    if "old_mkc_ms" in res["rows"][0]:
        lines += ["", f"The same run timed the old mkc build in turns with this one "
                  f"({len(res['ab_rounds']['new'])} rounds, medians): " +
                  "; ".join(f"context {r['context']}: old {r['old_mkc_ms']:.4f} ms, new "
                            f"{r['mkc_ms']:.4f} ms, new / old {r['mkc_ms'] / r['old_mkc_ms']:.4f}"
                            for r in res["rows"]) + "."]
    p = res.get("profile")
    if p:
        lines += ["", "The profiler's own cost (the same run, a file compiled with --profile): " +
                  "; ".join(f"context {o['context']}: {o['profile_ms']:.3f} ms vs "
                            f"{o['plain_ms']:.3f} ms" for o in p["overhead"]) + "."]
    return "\n".join(lines) + "\n"


def report(a):
    import glob
    results = []
    for d in a.dirs:
        for f in sorted(glob.glob(os.path.join(d, "*.json"))):
            if f.endswith(".trace.json"):
                continue
            results.append(json.load(open(f)))
    with open(a.results, "a") as f:
        for r in results:
            f.write("\n" + (table(r) if "rows" in r else
                            f"### {r['shape']}: {r.get('error', 'no result')}\n"))
    timed = [r for r in results if "rows" in r]
    if a.png and timed:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        n = len(timed)
        fig, axes = plt.subplots(1, n, figsize=(4.5 * n, 4), squeeze=False)
        for ax, r in zip(axes[0], timed):
            ctx = [x["context"] for x in r["rows"]]
            for key, label in (("mkc_ms", "mkc"), ("eager_ms", "PyTorch eager (transformers)"),
                               ("graph_ms", "PyTorch static cache + CUDA graph"),
                               ("compiled_ms", "torch.compile + CUDA graph")):
                ax.plot(ctx, [x.get(key, float("nan")) for x in r["rows"]], "o-", label=label)
            if r.get("read_GBps"):
                ax.plot(ctx, [x["must_move_bytes"] / r["read_GBps"] / 1e6 for x in r["rows"]],
                        "k--", label="memory floor")
            ax.set_xscale("symlog", linthresh=1)
            ax.set_yscale("log")
            ax.set_xlabel("context (cached positions)")
            ax.set_ylabel("ms per token")
            ax.set_title(f"{r['shape']} ({r.get('commit', '')[:7] if r.get('commit') else ''})")
            ax.grid(True, which="both", alpha=0.3)
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(a.png, dpi=100)
    batched = [r for r in results if r.get("batch", {}).get("rows")]
    if a.batch_png and batched:
        batch_plot(batched, a.batch_png)
    print(f"appended {len(results)} results to {a.results}" + (f"; drew {a.png}" if a.png else "")
          + (f" and {a.batch_png}" if a.batch_png and batched else ""))
    return 0


def batch_plot(results, path):
    """Tokens/s a step against the batch, a panel a (shape, context): mkc
    beside PyTorch's static-cache step as a CUDA graph and under
    torch.compile (--batches' rows), the same run's numbers."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [(r, c) for r in results for c in sorted({x["context"] for x in r["batch"]["rows"]})]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4), squeeze=False)
    for ax, (r, c) in zip(axes[0], panels):
        rows = sorted((x for x in r["batch"]["rows"] if x["context"] == c), key=lambda x: x["batch"])
        b = [x["batch"] for x in rows]
        for key, label in (("mkc_ms", "mkc"), ("graph_ms", "PyTorch static cache + CUDA graph"),
                           ("compiled_ms", "torch.compile + CUDA graph")):
            ax.plot(b, [x["batch"] * 1e3 / x[key] if x.get(key) else float("nan") for x in rows],
                    "o-", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequences a step")
        ax.set_ylabel("tokens/s")
        commit = (r.get("commit") or "")[:7]
        ax.set_title(f"{r['shape']}, context {c}" + (f" ({commit})" if commit else ""))
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sp = ap.add_subparsers(dest="cmd", required=True)
    r = sp.add_parser("run", help="benchmark one shape (on the GPU machine)")
    r.add_argument("shape", choices=sorted(SHAPES))
    r.add_argument("--out", required=True, help="folder for SHAPE.json, SHAPE.md, the log")
    r.add_argument("--work", help="folder for the model and builds (default: --out)")
    r.add_argument("--profile", action="store_true", help="also the timeline and its cost")
    r.add_argument("--contexts", default="1,1024,4096")
    r.add_argument("--workers", type=int, default=132)
    r.add_argument("--device", default="cuda", help="cuda, or cpu to try the script")
    r.add_argument("--target", default="cuda", choices=("cuda", "c"))
    r.add_argument("--kv", default="f32", choices=("f32", "bf16"),
                   help="mkc --kv: the caches' type (f32, mkc's default)")
    r.add_argument("--old", help="another mkc binary, timed in turns with build/mkc")
    r.add_argument("--rounds", type=int, default=3, help="with --old: rounds of both")
    r.add_argument("--prompts", default="",
                   help="time to first token for prompts of these lengths (e.g. 128,1024,4000)")
    r.add_argument("--max-chunk", type=int, default=1024, help="with --prompts: mkc --max-chunk")
    r.add_argument("--batches", default="",
                   help="several sequences a step: batch sizes to time (e.g. 1,8,32,64)")
    r.add_argument("--batch-contexts", default="128,1024", help="with --batches: contexts")
    r.add_argument("--mixed-gap", type=float, default=1.0,
                   help="with --batches: ms between the mixed run's arrivals")
    r.add_argument("--no-compile", action="store_true",
                   help="leave out the torch.compile baselines (minutes of compiling)")
    t = sp.add_parser("turns", help="time to first token of mkc binaries in turns (GPU machine)")
    t.add_argument("shape", choices=sorted(SHAPES))
    t.add_argument("--out", required=True, help="folder for turns.md and the log")
    t.add_argument("--work", help="folder for the model and builds (default: --out)")
    t.add_argument("--mkc", action="append", required=True, metavar="NAME=PATH",
                   help="an mkc binary to time, by a name (twice or more)")
    t.add_argument("--prompts", default="128,1024,4000")
    t.add_argument("--max-chunk", type=int, default=1024)
    t.add_argument("--rounds", type=int, default=2)
    t.add_argument("--workers", type=int, default=132)
    t.add_argument("--kv", default="f32", choices=("f32", "bf16"))
    t.add_argument("--device", default="cuda", help="cuda, or cpu (with --target c) to try it")
    t.add_argument("--target", default="cuda", choices=("cuda", "c"))
    t.add_argument("--batches", default="",
                   help="steps of several sequences instead (a --max-seqs file): batch sizes")
    t.add_argument("--batch-contexts", default="128,1024", help="with --batches: contexts")
    p = sp.add_parser("report", help="append results to RESULTS.md and draw the picture")
    p.add_argument("dirs", nargs="+")
    p.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    p.add_argument("--png", default=os.path.join(ROOT, "bench", "context.png"))
    p.add_argument("--batch-png", default=os.path.join(ROOT, "bench", "batch.png"),
                   help="tokens/s against the batch, for results with --batches")
    a = ap.parse_args(argv[1:])
    if a.cmd == "report":
        return report(a)
    if a.cmd == "turns":
        a.prompts = [int(x) for x in a.prompts.split(",") if x]
        a.batches = [int(x) for x in a.batches.split(",") if x]
        a.batch_contexts = [int(x) for x in a.batch_contexts.split(",") if x]
        if any("=" not in m for m in a.mkc):
            ap.error("--mkc takes NAME=PATH")
        try:
            return turns(a)
        except RuntimeError as e:
            log(f"{a.shape}: {e}")
            return 1
    a.contexts = [int(x) for x in a.contexts.split(",")]
    a.prompts = [int(x) for x in a.prompts.split(",") if x]
    a.batches = [int(x) for x in a.batches.split(",") if x]
    a.batch_contexts = [int(x) for x in a.batch_contexts.split(",") if x]
    try:
        return run(a)
    except RuntimeError as e:
        log(f"{a.shape}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

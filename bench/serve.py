#!/usr/bin/env python3
"""The server under load: mkc's OpenAI server against a PyTorch one, same weights, one run.

    python3 bench/serve.py SHAPE --out DIR [--clients 1,8,32,64] [--prompts 128,1024]
        [--answer 128] [--requests 2] [--device cuda] [--target cuda]

On the GPU machine, from the repo root, build/mkc built (issue 31's load run):
  1. bench/run.py's random bf16 folder for SHAPE, with a word-level tokenizer
     made here (token i is the word "t<i>") and no end-of-text token, so
     every answer runs to --answer tokens on both servers;
  2. mkc compiles it with --max-seqs (the most clients) and --max-chunk, as a
     shared library (nvcc, or cc for --target c), and `python3 -m mkc.server`
     serves it;
  3. the baseline is this file's own server (--torch-server): the same
     /v1/completions over transformers, bf16, SDPA, eager: the requests
     waiting when a batch ends go together (static batching: left-padded
     prompts in one forward, then one forward a token for the batch, a
     DynamicCache), each streaming its tokens as they come;
  4. for each client count C, against each server in turn: C clients, each
     sending --requests streamed completions back to back (a prompt of token
     ids, its length drawn from --prompts, max_tokens --answer, temperature
     0); per request the time to its first token and to its end; the run's
     requests/s and generated tokens/s.
  First, one request's greedy tokens from both servers are compared
  (transformers bf16 and mkc's float32 arithmetic over the same bf16 weights
  may part at a near tie: the count of equal leading tokens is reported).
It writes DIR/serve_SHAPE.json and DIR/serve_SHAPE.md (the table) and
prints the table. --device cpu --target c tries the script on a machine
without a GPU (use the tiny shape).
"""
import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "python"))


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------- the model and tokenizer

def make_folder(shape, folder, dev):
    """bench/run.py's random model, saved bf16, with a tokenizer of words t0, t1, ..."""
    import torch
    import transformers
    from run import SHAPES, make_model, save_bf16
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    family, cfg = SHAPES[shape]
    model = make_model(torch, transformers, family, cfg, dev)
    save_bf16(torch, model, folder)
    gen = os.path.join(folder, "generation_config.json")
    if os.path.exists(gen):   # its eos would end answers early on one server only
        os.remove(gen)
    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(cfg["vocab_size"])},
                                     unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)   # words joined by spaces
    tok.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({}, f)
    return model, cfg


def build_library(folder, work, target, most, chunk, max_seq, workers, logf):
    """The folder compiled by mkc and built as a shared library; its path and the seconds of each."""
    from run import sh
    ext = "cu" if target == "cuda" else "c"
    src, lib = os.path.join(work, f"served.{ext}"), os.path.join(work, "libserved.so")
    t_mkc, _ = sh(f"{ROOT}/build/mkc {folder} -o {src} --max-seqs {most} --max-chunk {chunk} "
                  f"--max-seq {max_seq} --workers {workers}", logf)
    if target == "cuda":
        t_cc, _ = sh(f"nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -shared -Xcompiler -fPIC "
                     f"-o {lib} {src}", logf)
    else:
        t_cc, _ = sh(f"cc -O2 -shared -fPIC -pthread -o {lib} {src} -lm", logf)
    return lib, t_mkc, t_cc


# ---------------------------------------------------------------- the PyTorch server

class TorchEngine:
    """Static batching over transformers: the requests waiting when the last
    batch ended run together, a forward a token; each streams as it goes."""

    def __init__(self, folder, dev, most):
        import torch
        import transformers
        self.torch, self.dev, self.most = torch, dev, most
        self.model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, dtype=torch.bfloat16 if dev != "cpu" else torch.float32,
            attn_implementation="sdpa").to(dev).eval()
        self.waiting = []
        self.wake = asyncio.Event()

    def submit(self, prompt, max_tokens, queue):
        self.waiting.append((prompt, max_tokens, queue))
        self.wake.set()

    def _batch(self, batch, loop):
        t = self.torch
        n = max(len(p) for p, _, _ in batch)
        ids = t.zeros(len(batch), n, dtype=t.long)
        mask = t.zeros(len(batch), n, dtype=t.long)
        for i, (p, _, _) in enumerate(batch):   # left-padded
            ids[i, n - len(p):] = t.tensor(p)
            mask[i, n - len(p):] = 1
        ids, mask = ids.to(self.dev), mask.to(self.dev)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        past = None
        with t.no_grad():
            for j in range(max(m for _, m, _ in batch)):
                out = self.model(input_ids=ids, attention_mask=mask, position_ids=pos,
                                 past_key_values=past, use_cache=True)
                past = out.past_key_values
                nxt = out.logits[:, -1].argmax(-1)
                toks = nxt.tolist()   # waits for the step
                for (_, m, q), tok in zip(batch, toks):
                    if j < m:
                        loop.call_soon_threadsafe(q.put_nowait, tok)
                ids = nxt[:, None]
                mask = t.cat([mask, t.ones_like(mask[:, :1])], 1)
                pos = pos[:, -1:] + 1
        for _, _, q in batch:
            loop.call_soon_threadsafe(q.put_nowait, None)

    async def run(self):
        loop = asyncio.get_running_loop()
        while True:
            if not self.waiting:
                self.wake.clear()
                await self.wake.wait()
                continue
            batch, self.waiting = self.waiting[:self.most], self.waiting[self.most:]
            await loop.run_in_executor(None, self._batch, batch, loop)


def torch_server(folder, port, dev, most):
    from aiohttp import web
    engine = TorchEngine(folder, dev, most)

    async def completions(request):
        body = await request.json()
        q = asyncio.Queue()
        engine.submit(list(body["prompt"]), int(body["max_tokens"]), q)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        while (tok := await q.get()) is not None:
            chunk = {"object": "text_completion", "choices": [{"index": 0, "text": f" t{tok}",
                                                               "finish_reason": None}]}
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def health(request):
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/health", health)

    async def start(app):
        app["engine"] = asyncio.get_running_loop().create_task(engine.run())
    app.on_startup.append(start)
    web.run_app(app, host="127.0.0.1", port=port, print=None)


# ---------------------------------------------------------------- the load

async def one(session, url, prompt, answer):
    """A streamed completion: (seconds to the first token, to the end, tokens, text)."""
    t0 = time.perf_counter()
    first, n, text = None, 0, ""
    body = {"model": "served", "prompt": prompt, "max_tokens": answer, "temperature": 0,
            "stream": True}
    async with session.post(url + "/v1/completions", json=body) as r:
        if r.status != 200:
            raise RuntimeError(f"{url}: HTTP {r.status}: {await r.text()}")
        async for line in r.content:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            piece = json.loads(line[6:])["choices"][0].get("text", "")
            if piece:
                n += len(piece.split())
                text += piece
                first = first or time.perf_counter() - t0
    return first, time.perf_counter() - t0, n, text


async def load(url, clients, requests, prompts, vocab, answer, seed):
    import aiohttp
    rng = random.Random(seed)
    work = [[[rng.randrange(vocab) for _ in range(rng.choice(prompts))] for _ in range(requests)]
            for _ in range(clients)]
    done = []

    async def client(session, mine):
        for p in mine:
            done.append(await one(session, url, p, answer))

    timeout = aiohttp.ClientTimeout(total=3600)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(session, w) for w in work))
        wall = time.perf_counter() - t0
    ttft = sorted(d[0] for d in done)
    return {"clients": clients, "requests": len(done), "wall_s": wall,
            "requests_per_s": len(done) / wall,
            "tokens_per_s": sum(d[2] for d in done) / wall,
            "ttft_median_ms": 1e3 * statistics.median(ttft),
            "ttft_p90_ms": 1e3 * ttft[min(len(ttft) - 1, int(0.9 * len(ttft)))],
            "short_answers": sum(d[2] != answer for d in done)}


def start_server(cmd, port, logf):
    import urllib.request
    out = open(logf, "a")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    for _ in range(1200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"the server {cmd} ended: see {logf}")
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"the server {cmd} did not answer in 120 s")


def table(res):
    rows = ["| clients | server | requests/s | tokens/s | TTFT median ms | TTFT p90 ms | mkc / PyTorch tokens/s |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for c in res["clients"]:
        m = next(r for r in res["mkc"] if r["clients"] == c)
        t = next((r for r in res["torch"] if r["clients"] == c), None)
        for who, r in (("mkc", m), ("PyTorch", t)):
            if r is None:
                continue
            ratio = f"{m['tokens_per_s'] / t['tokens_per_s']:.2f}x" if who == "mkc" and t else ""
            rows.append(f"| {c} | {who} | {r['requests_per_s']:.2f} | {r['tokens_per_s']:.0f} | "
                        f"{r['ttft_median_ms']:.1f} | {r['ttft_p90_ms']:.1f} | {ratio} |")
    return "\n".join(rows)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shape", nargs="?")
    ap.add_argument("--out")
    ap.add_argument("--work", help="folder for the model and builds (default: --out)")
    ap.add_argument("--clients", default="1,8,32,64")
    ap.add_argument("--prompts", default="128,1024", help="prompt lengths drawn from")
    ap.add_argument("--answer", type=int, default=128)
    ap.add_argument("--requests", type=int, default=2, help="requests a client")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--target", default="cuda", choices=["cuda", "c"])
    ap.add_argument("--workers", type=int, default=132)
    ap.add_argument("--max-chunk", type=int, default=256)
    ap.add_argument("--no-torch", action="store_true", help="mkc's server only")
    ap.add_argument("--torch-server", help=argparse.SUPPRESS)   # FOLDER: run the baseline
    ap.add_argument("--port", type=int, default=8311)
    a = ap.parse_args(argv)
    clients = [int(c) for c in a.clients.split(",")]
    if a.torch_server:
        torch_server(a.torch_server, a.port, a.device, max(clients))
        return 0
    if not a.shape or not a.out:
        ap.error("SHAPE and --out are required")
    prompts = [int(p) for p in a.prompts.split(",")]
    os.makedirs(a.out, exist_ok=True)
    work = os.path.join(a.work or a.out, f"serve_{a.shape}")
    folder = os.path.join(work, "hf")
    os.makedirs(work, exist_ok=True)
    logf = os.path.join(a.out, f"serve_{a.shape}.log")
    res = {"shape": a.shape, "commit": os.environ.get("COMMIT"), "clients": clients,
           "prompts": prompts, "answer": a.answer, "requests_a_client": a.requests,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "mkc": [], "torch": []}
    model, cfg = make_folder(a.shape, folder, a.device)
    del model
    max_seq = max(prompts) + a.answer + 16
    lib, res["mkc_compile_s"], res["cc_compile_s"] = build_library(
        folder, work, a.target, max(clients), a.max_chunk, max_seq, a.workers, logf)
    log(f"{a.shape}: --max-seqs {max(clients)} --max-chunk {a.max_chunk}: mkc "
        f"{res['mkc_compile_s']:.1f} s, compiler {res['cc_compile_s']:.1f} s")
    servers = [("mkc", [sys.executable, "-m", "mkc.server", lib, folder, "--port", str(a.port),
                        "--model-name", "served"])]
    if not a.no_torch:
        servers.append(("torch", [sys.executable, os.path.abspath(__file__), "--torch-server",
                                  folder, "--port", str(a.port + 1), "--device", a.device,
                                  "--clients", a.clients]))
    texts = {}
    for i, (who, cmd) in enumerate(servers):
        url = f"http://127.0.0.1:{a.port + i}"
        proc = start_server(cmd, a.port + i, logf)
        try:
            rng = random.Random(0)
            probe = [rng.randrange(cfg["vocab_size"]) for _ in range(min(prompts))]
            texts[who] = asyncio.run(one_session(url, probe, min(a.answer, 32)))
            for c in clients:
                r = asyncio.run(load(url, c, a.requests, prompts, cfg["vocab_size"], a.answer, c))
                res[who].append(r)
                log(f"{a.shape}: {who}, {c} clients: {r['requests']} requests in {r['wall_s']:.1f} s, "
                    f"{r['tokens_per_s']:.0f} tokens/s, TTFT median {r['ttft_median_ms']:.1f} ms")
        finally:
            proc.terminate()
            proc.wait(30)
    if "torch" in texts:
        a_, b_ = texts["mkc"].split(), texts["torch"].split()
        same = next((i for i, (x, y) in enumerate(zip(a_, b_)) if x != y), min(len(a_), len(b_)))
        res["probe"] = {"tokens": len(a_), "equal_leading": same}
        log(f"{a.shape}: one request's greedy tokens: the first {same} of {len(a_)} equal")
    md = (f"### serve {a.shape} ({res['date']}, commit {res['commit']})\n\n"
          f"Prompts of {'/'.join(map(str, prompts))} tokens, answers of {a.answer}, {a.requests} "
          f"requests a client back to back; mkc --max-seqs {max(clients)} --max-chunk "
          f"{a.max_chunk}; PyTorch: transformers {'float32' if a.device == 'cpu' else 'bf16'} "
          f"eager, static batching; {a.device}."
          + "".join(f" {who}: {sum(r['short_answers'] for r in res[who])} answers short."
                    for who in ("mkc", "torch") if res[who]) + "\n\n" + table(res))
    with open(os.path.join(a.out, f"serve_{a.shape}.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(a.out, f"serve_{a.shape}.md"), "w") as f:
        f.write(md + "\n")
    log(md)
    return 0


async def one_session(url, prompt, answer):
    import aiohttp
    async with aiohttp.ClientSession() as session:
        return (await one(session, url, prompt, answer))[3]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""An OpenAI-compatible HTTP server over a model mkc compiled with --max-seqs.

    python3 -m mkc.server LIBRARY MODEL_FOLDER [--port 8000] [--tokenizer DIR]

serves /v1/models, /v1/completions and /v1/chat/completions (streamed as
server-sent events with "stream": true) on aiohttp. Concurrent requests share
steps: each iteration of one scheduler takes every running request's next
token and as much of the waiting prompts as the step holds (--max-chunk),
runs them as one step of the compiled model (step_seqs, a sequence each) and
draws each request's next token from its row (Model.sample: the compiled
generate's own draw, runtime/sample.h, in one call for the step). A request
gets the tokens it would get alone: the rows of a step are computed as each
sequence alone (tests/compiler/test_seqs.c).

The tokenizer (tokenizer.json, read by the `tokenizers` package) and the chat
template (tokenizer_config.json's, rendered by jinja2) come from the model's
folder or --tokenizer. Stop tokens: the folder's eos token(s); stop strings,
max_tokens, temperature, top_p, top_k and seed as the request gives them.
Errors are OpenAI's shape: {"error": {"message", "type", "param", "code"}},
400 for a bad request (malformed JSON, an unknown field, a prompt past the
context), 404 for an unknown model, 503 when the cache pool is full.
"""

import argparse
import asyncio
import concurrent.futures
import json
import os
import time
import uuid

from aiohttp import web

import mkc

COMMON = {"model", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
          "seed", "stop", "stream", "n", "user", "stream_options"}
FIELDS = {"completions": COMMON | {"prompt"}, "chat": COMMON | {"messages"}}


class BadRequest(Exception):
    def __init__(self, message, param=None, status=400, kind="invalid_request_error"):
        super().__init__(message)
        self.param, self.status, self.kind = param, status, kind


class Request:
    """One completion: its prompt, settings, sequence and the tokens so far."""

    def __init__(self, prompt, max_tokens, temperature, top_p, top_k, seed, stops):
        self.prompt, self.max_tokens = prompt, max_tokens
        self.temperature, self.top_p, self.top_k, self.seed = temperature, top_p, top_k, seed
        self.stops = stops
        self.seq = None
        self.fed = 0          # prompt tokens in the cache
        self.out = []         # tokens drawn
        self.events = asyncio.Queue()   # each drawn token, then None
        self.finish = None    # "stop", "length", or an error sentence
        self.cancelled = False


class Engine:
    """The scheduler: one step at a time over every running request."""

    def __init__(self, model, eos):
        self.model = model
        self.eos = set(eos)
        sd = model._lib.step_dim()
        self.rows = list(model.dims.values())[sd] if sd >= 0 else 1
        self.waiting, self.running = [], []
        self.wake = asyncio.Event()
        self.pool = concurrent.futures.ThreadPoolExecutor(1)   # the model's calls, in order

    def submit(self, r):
        self.waiting.append(r)
        self.wake.set()

    def _admit(self):
        while self.waiting and len(self.running) < self.model.max_seqs:
            r = self.waiting[0]
            if r.cancelled:
                self.waiting.pop(0)
                continue
            try:
                r.seq = self.model.open()
            except mkc.Error:
                return   # every sequence in use: it waits
            self.running.append(self.waiting.pop(0))

    def _end(self, r, why):
        r.finish = r.finish or why
        if r.seq is not None:
            r.seq.close()
            r.seq = None
        r.events.put_nowait(None)

    def _plan(self):
        """The step's rows: (request, token), decode tokens first, then prompts."""
        rows = []
        for r in self.running:
            if r.fed == len(r.prompt) and len(rows) < self.rows:
                rows.append((r, r.out[-1]))
        for r in self.running:
            while r.fed < len(r.prompt) and len(rows) < self.rows:
                rows.append((r, r.prompt[r.fed]))
                r.fed += 1
        return rows

    async def run(self):
        loop = asyncio.get_running_loop()
        while True:
            for r in [r for r in self.running if r.cancelled]:
                self.running.remove(r)
                self._end(r, "cancelled")
            self._admit()
            if not self.running:
                self.wake.clear()
                await self.wake.wait()
                continue
            rows = self._plan()
            seqs = [r.seq for r, _ in rows]
            toks = [t for _, t in rows]
            try:
                (logits,) = await loop.run_in_executor(self.pool, self.model.step_seqs, seqs, toks)
            except mkc.Error as e:   # a full pool: the step's requests end with it
                for r in {id(r): r for r, _ in rows}.values():
                    self.running.remove(r)
                    self._end(r, f"error: {e}")
                continue
            last = {id(r): i for i, (r, _) in enumerate(rows)}
            ready = [r for r in self.running
                     if id(r) in last and r.fed == len(r.prompt)]   # a token to draw
            if not ready:
                continue
            drawn = self.model.sample(
                logits[0][[last[id(r)] for r in ready]],
                [dict(temperature=r.temperature, top_k=r.top_k, top_p=r.top_p, seed=r.seed)
                 for r in ready], [len(r.seq) for r in ready])
            for r, tok in zip(ready, drawn):
                r.out.append(tok)
                r.events.put_nowait(tok)
                if tok in self.eos or tok in r.stops:
                    why = "stop"
                elif len(r.out) >= r.max_tokens:
                    why = "length"
                else:
                    continue
                self.running.remove(r)
                self._end(r, why)


class Server:
    def __init__(self, model, tokenizer, template, eos, name, special):
        self.model, self.tok, self.template, self.name = model, tokenizer, template, name
        self.special = special   # the template's bos_token and eos_token
        self.engine = Engine(model, eos)
        self.context = model.cache_capacity

    # -- requests ------------------------------------------------------------

    def _settings(self, body, kind):
        unknown = sorted(set(body) - FIELDS[kind])
        if unknown:
            raise BadRequest(f"unknown field '{unknown[0]}'", unknown[0])
        if body.get("model", self.name) != self.name:
            raise BadRequest(f"the model '{body['model']}' does not exist; this server has "
                             f"'{self.name}'", "model", 404, "not_found_error")
        if body.get("n", 1) != 1:
            raise BadRequest("n must be 1", "n")

        def number(key, default, lo, hi, kind=float):
            v = body.get(key, default)
            if v is None:
                v = default
            if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                    (kind is int and not isinstance(v, int)) or not lo <= v <= hi:
                raise BadRequest(f"'{key}' must be a{' whole' if kind is int else ''} number "
                                 f"from {lo} to {hi}", key)
            return kind(v)

        max_tokens = number("max_completion_tokens", body.get("max_tokens", 16), 1,
                            self.context, int)
        stop = body.get("stop") or []
        stop = [stop] if isinstance(stop, str) else stop
        if not isinstance(stop, list) or len(stop) > 4 or \
                not all(isinstance(s, str) and s for s in stop):
            raise BadRequest("'stop' must be a string or a list of up to 4 strings", "stop")
        if not isinstance(body.get("stream", False), bool):
            raise BadRequest("'stream' must be true or false", "stream")
        return dict(max_tokens=max_tokens,
                    temperature=number("temperature", 1.0, 0, 2),
                    top_p=number("top_p", 1.0, 0, 1),
                    top_k=number("top_k", 0, 0, 1 << 30, int),
                    seed=number("seed", 0, -(1 << 63), (1 << 64) - 1, int) % (1 << 64),
                    stop=stop, stream=body.get("stream", False))

    def _prompt(self, body, kind):
        if kind == "completions":
            p = body.get("prompt")
            if isinstance(p, list) and p and all(isinstance(t, int) for t in p):
                return p
            if not isinstance(p, str):
                raise BadRequest("'prompt' must be a string or a list of token ids", "prompt")
            return self.tok.encode(p).ids
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and
                isinstance(m.get("content"), str) for m in msgs):
            raise BadRequest("'messages' must be a list of {role, content} strings", "messages")
        text = self.template.render(messages=msgs, add_generation_prompt=True, **self.special)
        return self.tok.encode(text, add_special_tokens=False).ids

    async def _body(self, request):
        try:
            body = json.loads(await request.text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise BadRequest(f"the body is not JSON: {e}")
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        return body

    @staticmethod
    def _error(e):
        return web.json_response({"error": {"message": str(e), "type": e.kind, "param": e.param,
                                            "code": None}}, status=e.status)

    async def health(self, request):
        """Not OpenAI's: what the scheduler holds (the tests watch pages come back)."""
        e = self.engine
        return web.json_response({"running": len(e.running), "waiting": len(e.waiting),
                                  "free_pages": self.model.free_pages})

    async def models(self, request):
        return web.json_response({"object": "list", "data": [
            {"id": self.name, "object": "model", "created": 0, "owned_by": "mkc"}]})

    async def completions(self, request):
        return await self._serve(request, "completions")

    async def chat(self, request):
        return await self._serve(request, "chat")

    async def _serve(self, request, kind):
        try:
            body = await self._body(request)
            s = self._settings(body, kind)
            prompt = self._prompt(body, kind)
            if not prompt:
                raise BadRequest("the prompt is empty", "prompt")
            if len(prompt) + s["max_tokens"] - 1 > self.context:
                raise BadRequest(f"this model's maximum context length is {self.context} "
                                 f"tokens; the prompt has {len(prompt)} and max_tokens asks "
                                 f"for {s['max_tokens']} more", "max_tokens")
        except BadRequest as e:
            return self._error(e)
        r = Request(prompt, s["max_tokens"], s["temperature"], s["top_p"], s["top_k"],
                    s["seed"], set())
        self.engine.submit(r)
        ident = ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex[:24]
        try:
            if s["stream"]:
                return await self._stream(request, r, kind, ident, s["stop"])
            text = ""
            async for text, done in self._texts(r, s["stop"]):
                pass
            return web.json_response(self._whole(kind, ident, r, text, len(prompt)))
        finally:
            r.cancelled = True   # still running (a client gone, a stop string): it ends
            self.engine.wake.set()

    async def _texts(self, r, stops):
        """(text so far, done) after each token: stop strings cut it, and a
        tail that may begin one is held back until it cannot."""
        hold = max((len(s) for s in stops), default=1) - 1
        while True:
            tok = await r.events.get()
            ids = r.out
            if ids and ids[-1] in self.engine.eos:
                ids = ids[:-1]   # the eos token is not text
            text = self.tok.decode(ids)
            cut = min((text.find(s) for s in stops if s in text), default=-1)
            if cut >= 0:
                r.finish = "stop"
                r.cancelled = True   # the engine drops it at its next step
                self.engine.wake.set()
                yield text[:cut], True
                return
            if tok is None:
                if r.finish and r.finish.startswith("error"):
                    raise BadRequest(r.finish, None, 503, "server_error")
                yield text, True
                return
            if text.endswith("\ufffd"):
                continue   # the middle of a character
            yield text[:len(text) - hold] if hold else text, False

    def _whole(self, kind, ident, r, text, n_prompt):
        usage = {"prompt_tokens": n_prompt, "completion_tokens": len(r.out),
                 "total_tokens": n_prompt + len(r.out)}
        finish = r.finish if r.finish in ("stop", "length") else "stop"
        if kind == "chat":
            choice = {"index": 0, "message": {"role": "assistant", "content": text},
                      "logprobs": None, "finish_reason": finish}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
            obj = "text_completion"
        return {"id": ident, "object": obj, "created": int(time.time()), "model": self.name,
                "choices": [choice], "usage": usage}

    async def _stream(self, request, r, kind, ident, stops):
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        obj = "chat.completion.chunk" if kind == "chat" else "text_completion"

        async def send(delta, finish):
            if kind == "chat":
                choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": delta.get("content", ""), "logprobs": None,
                          "finish_reason": finish}
            chunk = {"id": ident, "object": obj, "created": int(time.time()),
                     "model": self.name, "choices": [choice]}
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())

        if kind == "chat":
            await send({"role": "assistant", "content": ""}, None)
        sent = ""
        try:
            async for text, done in self._texts(r, stops):
                if len(text) > len(sent):
                    await send({"content": text[len(sent):]}, None)
                    sent = text
                if done:
                    finish = r.finish if r.finish in ("stop", "length") else "stop"
                    await send({}, finish)
        except BadRequest as e:
            err = {"error": {"message": str(e), "type": e.kind, "param": None, "code": None}}
            await resp.write(f"data: {json.dumps(err)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


def load_tokenizer(folder):
    """The tokenizer, the chat template, the eos ids and the template's tokens."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    cfg = {}
    path = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(path):
        with open(path) as f:
            cfg = json.load(f)

    def text_of(v):
        return v.get("content") if isinstance(v, dict) else v

    special = {"bos_token": text_of(cfg.get("bos_token")) or "",
               "eos_token": text_of(cfg.get("eos_token")) or ""}
    eos = set()
    if special["eos_token"] and tok.token_to_id(special["eos_token"]) is not None:
        eos.add(tok.token_to_id(special["eos_token"]))
    gen = os.path.join(folder, "generation_config.json")
    if os.path.exists(gen):
        with open(gen) as f:
            e = json.load(f).get("eos_token_id")
        eos.update(e if isinstance(e, list) else [e] if isinstance(e, int) else [])
    source = cfg.get("chat_template") or (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}")
    template = ImmutableSandboxedEnvironment().from_string(source)
    return tok, template, eos, special


def make_app(library, folder, tokenizer=None, name=None, model_name=None):
    model = mkc.Model(library, weights=folder, name=name)
    if model.max_seqs < 1:
        raise SystemExit(f"{library}: compiled for one sequence; the server needs mkc "
                         f"--max-seqs N")
    tok, template, eos, special = load_tokenizer(tokenizer or folder)
    srv = Server(model, tok, template, eos,
                 model_name or os.path.basename(os.path.normpath(folder)), special)
    app = web.Application()
    app.router.add_get("/v1/models", srv.models)
    app.router.add_get("/health", srv.health)
    app.router.add_post("/v1/completions", srv.completions)
    app.router.add_post("/v1/chat/completions", srv.chat)

    async def start(app):
        app["engine"] = asyncio.get_running_loop().create_task(srv.engine.run())

    async def stop(app):
        app["engine"].cancel()
        model.close()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    app["server"] = srv
    return app


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m mkc.server", description=__doc__.split("\n")[0])
    ap.add_argument("library", help="the emitted file built as a shared library")
    ap.add_argument("model", help="the model's folder: weights (and tokenizer files)")
    ap.add_argument("--tokenizer", help="the folder of tokenizer.json (default: the model's)")
    ap.add_argument("--name", help="the library's prefix (mkc --name; default: its stem)")
    ap.add_argument("--model-name", help="the model's id in the API (default: the folder's name)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    a = ap.parse_args(argv)
    app = make_app(a.library, a.model, a.tokenizer, a.name, a.model_name)
    web.run_app(app, host=a.host, port=a.port)


if __name__ == "__main__":
    main()

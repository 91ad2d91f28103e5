"""mkc.server against the official openai client, on the C target: the tiny
Qwen3 of tests/models/hf/qwen3_tiny (random weights, 256 tokens) compiled with
--max-seqs, and a tokenizer made here (a token per ASCII character, the
character's code, the other tokens Cyrillic letters; <|eos|> is token 1). The server runs as its own process on
a free port, as a user starts it.

What a client must see: the tokens a request gets alone, also when several
stream at once (and the library's own generate's, greedy); chat answers the
same streamed or whole; stop strings and max_tokens honoured; a client that
leaves mid-stream gives its sequence's pages back; a prompt past the context,
malformed JSON and unknown fields are 400s with a sentence; and the server
answers afterwards.
"""

import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import openai   # tools/setup.sh installs it
import pytest

import mkc
from test_model import QWEN, build


def make_tokenizer(folder):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    vocab = {"<unk>": 0, "<|eos|>": 1}
    # ASCII as itself, every other token a Cyrillic letter: each one some text
    vocab.update({chr(c if 32 <= c < 127 else 0x400 + c): c for c in range(2, 256)})
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(["<|eos|>"])
    tok.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"eos_token": "<|eos|>", "chat_template":
                   "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
                   "{% if add_generation_prompt %}[assistant] {% endif %}"}, f)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("server"))
    lib = build(tmp, QWEN, "tiny", "--max-seqs", "4", "--max-chunk", "16", "--page-size", "8",
                "--max-seq", "96")
    tokdir = os.path.join(tmp, "tok")
    os.mkdir(tokdir)
    make_tokenizer(tokdir)
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(mkc.__file__)))
    proc = subprocess.Popen([sys.executable, "-m", "mkc.server", lib, QWEN, "--tokenizer", tokdir,
                             "--port", str(port), "--model-name", "tiny"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "/health", timeout=1)
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stdout.read().decode())
            time.sleep(0.05)
    yield {"url": url, "lib": lib, "tokdir": tokdir,
           "client": openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)}
    proc.terminate()
    proc.wait(10)


def health(server):
    with urllib.request.urlopen(server["url"] + "/health") as r:
        return json.load(r)


def post(server, path, data):
    """(status, body) of a raw POST: data as bytes."""
    req = urllib.request.Request(server["url"] + path, data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


PROMPTS = [("Hello there", 0.0, 0), ("The cat sat", 0.9, 7), ("x", 1.2, 3), ("A longer prompt "
           "than the step holds at once", 0.7, 11)]


def complete(client, prompt, temperature, seed, stream=False, **kw):
    r = client.completions.create(model="tiny", prompt=prompt, max_tokens=12,
                                  temperature=temperature, seed=seed, stream=stream, **kw)
    if not stream:
        return r.choices[0].text, r.choices[0].finish_reason
    text, finish = "", None
    for chunk in r:
        text += chunk.choices[0].text
        finish = chunk.choices[0].finish_reason or finish
    return text, finish


def test_models(server):
    assert [m.id for m in server["client"].models.list().data] == ["tiny"]


def test_greedy_is_the_librarys_generate(server):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(server["tokdir"], "tokenizer.json"))
    text, finish = complete(server["client"], "Hello there", 0.0, 0)
    with mkc.Model(server["lib"], weights=QWEN) as m:
        want = m.generate(tok.encode("Hello there").ids, 12, stop=[1])
    want = [t for t in want if t != 1]
    assert text == tok.decode(want)
    assert finish == ("length" if len(want) == 12 else "stop")


def test_concurrent_streams_get_what_each_gets_alone(server):
    client = server["client"]
    alone = [complete(client, p, t, s) for p, t, s in PROMPTS]
    with concurrent.futures.ThreadPoolExecutor(len(PROMPTS)) as ex:
        together = list(ex.map(lambda a: complete(client, *a, stream=True), PROMPTS))
    assert together == alone
    assert len({t for t, _ in alone}) == len(alone)   # the requests differ


def test_chat_streamed_and_whole(server):
    client = server["client"]
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]
    whole = client.chat.completions.create(model="tiny", messages=msgs, max_tokens=10,
                                           temperature=0)
    parts = client.chat.completions.create(model="tiny", messages=msgs, max_tokens=10,
                                           temperature=0, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in parts)
    assert whole.choices[0].message.role == "assistant"
    assert text == whole.choices[0].message.content
    assert whole.usage.prompt_tokens == len("[system] Be brief.\n[user] Hi!\n[assistant] ")


def test_stop_strings_and_max_tokens(server):
    client = server["client"]
    free, _ = complete(client, "The cat sat", 0.9, 7)
    assert len(free) >= 2
    stop = free[len(free) // 2]
    text, finish = complete(client, "The cat sat", 0.9, 7, stop=[stop])
    assert text == free[:free.index(stop)] and finish == "stop"
    r = client.completions.create(model="tiny", prompt="abc", max_tokens=3, temperature=0)
    assert r.usage.completion_tokens <= 3


def test_a_client_that_leaves_gives_its_pages_back(server):
    before = health(server)["free_pages"]
    req = urllib.request.Request(server["url"] + "/v1/completions", data=json.dumps(
        {"model": "tiny", "prompt": "Leaving soon", "max_tokens": 80, "temperature": 0.8,
         "seed": 1, "stream": True}).encode(), headers={"Content-Type": "application/json"})
    r = urllib.request.urlopen(req)
    r.readline()
    r.close()
    for _ in range(200):
        h = health(server)
        if h["running"] == 0 and h["free_pages"] == before:
            break
        time.sleep(0.05)
    assert h["running"] == 0 and h["free_pages"] == before, h
    assert complete(server["client"], "still there?", 0.0, 0)[0]


def test_bad_requests_are_400s(server):
    client = server["client"]
    with pytest.raises(openai.BadRequestError, match="maximum context length is 96 tokens"):
        client.completions.create(model="tiny", prompt="abc", max_tokens=95)
    assert post(server, "/v1/completions", b"{not json")[0] == 400
    code, body = post(server, "/v1/completions", json.dumps(
        {"model": "tiny", "prompt": "a", "colour": "red"}).encode())
    assert code == 400 and body["error"]["message"] == "unknown field 'colour'"
    code, body = post(server, "/v1/chat/completions", json.dumps(
        {"model": "tiny", "messages": "hi"}).encode())
    assert code == 400 and "messages" in body["error"]["message"]
    code, body = post(server, "/v1/completions", json.dumps(
        {"model": "other", "prompt": "a"}).encode())
    assert code == 404
    code, body = post(server, "/v1/completions", json.dumps(
        {"model": "tiny", "prompt": "a", "temperature": 7}).encode())
    assert code == 400 and "'temperature' must be a number from 0 to 2" in body["error"]["message"]
    assert health(server)["running"] == 0
    assert complete(client, "after all that", 0.0, 0)[0]

"""The Python package against models mkc compiles for the C target, built here
as shared libraries (build/mkc first: `make`; `make test-python` runs this).

Each test checks the package against the C side itself: the greedy tokens of
generate against a step-by-step loop through step(), a batch of sequences in
one step against each sequence alone, caches read back against what was
loaded, and every refusal as mkc.Error carrying the C side's sentence.
"""

import os
import subprocess

import numpy as np
import pytest

import mkc

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MKC = os.environ.get("MKC", os.path.join(ROOT, "build", "mkc"))
QWEN = os.path.join(ROOT, "tests", "models", "hf", "qwen3_tiny")


def build(tmp, model, name, *flags):
    """model compiled by mkc with flags, as tmp/lib<name>.so."""
    src = os.path.join(tmp, f"{name}.c")
    lib = os.path.join(tmp, f"lib{name}.so")
    subprocess.run([MKC, model, "-o", src, "--workers", "2", *flags], check=True)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-pthread", "-o", lib, src, "-lm"],
                   check=True)
    return lib


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("libs"))
    return {
        "batch": build(tmp, QWEN, "batch", "--max-seqs", "4", "--max-chunk", "8",
                      "--page-size", "4", "--max-seq", "64"),
        "one": build(tmp, QWEN, "one", "--max-seq", "64"),
    }


@pytest.fixture
def seqs(libs):
    with mkc.Model(libs["batch"], weights=QWEN) as m:
        yield m


@pytest.fixture
def one(libs):
    with mkc.Model(libs["one"], weights=QWEN) as m:
        yield m


def test_what_the_library_says(seqs, one):
    assert seqs.target == "c"
    assert [n for n, _ in seqs.inputs] == ["input_ids", "position_ids"]
    assert all(dt is np.int64 for _, dt in seqs.inputs)
    assert seqs.outputs[0][0] == "logits" and seqs.outputs[0][1] is np.float32
    assert seqs.dims["seq_len"] == 8 and seqs.max_seqs == 4 and seqs.page_size == 4
    assert len(seqs.caches) == 4 and seqs.cache_capacity == 64
    assert one.max_seqs == 0 and one.page_size == 0 and one.cache_capacity == 64


def test_generate_is_a_loop_of_steps(one):
    """Greedy generate equals argmax fed back through step()."""
    prompt = [3, 17, 250, 99, 4]
    want = one.generate(prompt, 12)
    one.cache_reset()
    got, feed = [], list(prompt)
    for t in range(len(prompt) + 11):
        tok = feed[t] if t < len(feed) else got[-1]
        (logits,) = one.step({"input_ids": [[tok]], "position_ids": [[t]]})
        if t >= len(prompt) - 1:
            got.append(int(np.argmax(logits[0, -1])))
    assert got == want
    assert one.cache_len == len(prompt) + 11


def test_sampling(one):
    a = one.generate([5, 6], 20, temperature=1.5, top_p=0.95, seed=3)
    one.cache_reset()
    b = one.generate([5, 6], 20, temperature=1.5, top_p=0.95, seed=3)
    one.cache_reset()
    c = one.generate([5, 6], 20, temperature=1.5, top_p=0.95, seed=4)
    assert a == b and a != c and len(a) == 20
    one.cache_reset()
    stopped = one.generate([5, 6], 20, temperature=1.5, top_p=0.95, seed=3, stop=[a[6]])
    assert stopped == a[:a.index(a[6]) + 1]
    assert one.cache_len == 2 + len(stopped) - 1


def test_sample_is_generates_draw(one):
    """Model.sample on a step's logits draws the token generate draws there."""
    prompt = [9, 8, 7, 6]
    for setting in ({"temperature": 1.3, "top_p": 0.9, "seed": 5}, {"temperature": 0.0},
                    {"temperature": 0.7, "top_k": 3, "seed": 11}):
        one.cache_reset()
        want = one.generate(prompt, 1, **setting)[0]
        one.cache_reset()
        for t, tok in enumerate(prompt):
            (logits,) = one.step({"input_ids": [[tok]], "position_ids": [[t]]})
        got = one.sample(logits[0, -1:], [setting], [len(prompt)])
        assert got == [want], setting
    assert one.sample(logits[0, -1:], [{}], [4]) == [int(np.argmax(logits[0, -1]))]
    with pytest.raises(mkc.Error, match="sampling.top_p is 2"):
        one.sample(logits[0, -1:], [{"temperature": 1, "top_p": 2}], [4])


def test_sequences_in_one_step_are_each_alone(seqs):
    """Two prompts in interleaved shared steps: each row's logits are its
    sequence's alone, and the caches too."""
    pa, pb = [7, 8, 9, 10, 11], [200, 201, 202]
    alone = []
    for p in (pa, pb):
        seqs.cache_reset()
        (lg,) = seqs.step_seqs([0] * len(p), p)
        alone.append((lg[0], [seqs.sequence(0).cache(c) for c in range(4)]))
    seqs.cache_reset()
    a, b = seqs.sequence(0), seqs.open()
    rows = [a, b, a, a, b, a, b, a]
    toks = [pa[0], pb[0], pa[1], pa[2], pb[1], pa[3], pb[2], pa[4]]
    (lg,) = seqs.step_seqs(rows, toks)
    ia = [r for r, s in enumerate(rows) if s is a]
    ib = [r for r, s in enumerate(rows) if s is b]
    np.testing.assert_allclose(lg[0][ia], alone[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lg[0][ib], alone[1][0], rtol=1e-5, atol=1e-6)
    assert len(a) == 5 and len(b) == 3
    for c in range(4):
        np.testing.assert_allclose(a.cache(c), alone[0][1][c], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(b.cache(c), alone[1][1][c], rtol=1e-6, atol=1e-7)


def test_generate_batch_is_each_alone(seqs):
    reqs = [dict(prompt=[5 + i, 7, 9][:1 + i % 3], max_new=6 + i, temperature=0.9 * (i % 2),
                 top_p=0.9, seed=i) for i in range(6)]
    alone = []
    for r in reqs:
        seqs.cache_reset()
        alone.append(seqs.generate(r["prompt"], r["max_new"], temperature=r["temperature"],
                                   top_p=r["top_p"], seed=r["seed"]))
    heard = []
    got = seqs.generate_batch(reqs, on_token=lambda i, t: heard.append((i, t)))
    assert got == alone
    assert sorted(heard) == sorted((i, t) for i, ts in enumerate(alone) for t in ts)
    assert len(seqs.sequence(0)) == 0


def test_fork_close_and_pages(seqs):
    a = seqs.sequence(0)
    seqs.step_seqs([a] * 6, [1, 2, 3, 4, 5, 6])
    free = seqs.free_pages
    f = a.fork()
    assert len(f) == 6 and seqs.free_pages == free   # shared
    (lg,) = seqs.step_seqs([f, a], [9, 9])
    np.testing.assert_array_equal(lg[0][0], lg[0][1])
    assert seqs.free_pages == free - 1   # the partly filled page, copied for the fork
    f.close()
    assert seqs.free_pages == free
    with pytest.raises(mkc.Error, match="sequence 1 is not open"):
        len(f)


def test_caches_load_and_read(seqs):
    s = seqs.open()
    c0 = s.cache(0)
    assert c0.shape == (1, 2, 0, 32)
    x = np.random.default_rng(0).standard_normal((1, 2, 7, 32)).astype(np.float32)
    for c in range(4):
        s.load_cache(c, x + c)
    assert len(s) == 7
    for c in range(4):
        np.testing.assert_array_equal(s.cache(c), x + c)
    with pytest.raises(mkc.Error, match=r"cache 0 takes \[1, 2, 0, 32\]"):
        s.load_cache(0, np.zeros((1, 3, 7, 32), np.float32))


def test_set_stream_on_the_c_target(one):
    one.set_stream(None)
    with pytest.raises(mkc.Error, match="takes no stream"):
        one.set_stream(1)
    assert len(one.generate([1, 2], 3)) == 3   # still runs


def test_refusals_carry_the_sentence(seqs, one, libs):
    with pytest.raises(mkc.Error, match="sampling.temperature is -1"):
        one.generate([1], 4, temperature=-1)
    with pytest.raises(mkc.Error, match="this file serves one sequence"):
        one.open()
    with pytest.raises(mkc.Error, match="there is no sequence 9"):
        seqs.step_seqs([9], [1])
    with pytest.raises(mkc.Error, match="has position_ids 5, but its position is 0"):
        seqs.step_seqs([0], [1], positions=[5])
    with pytest.raises(mkc.Error, match="a step of 9 tokens; the file takes at most 8"):
        seqs.step_seqs([0] * 9, list(range(9)))
    with pytest.raises(mkc.Error, match="no value for input 'position_ids'"):
        one.step({"input_ids": [[1]]})
    with pytest.raises(mkc.Error, match="there is no KV cache 7"):
        one.cache(7)
    with pytest.raises(OSError, match="no function nope_create"):
        mkc.Model(libs["one"], name="nope")
    assert seqs.sequence(0) is not None and len(seqs.sequence(0)) == 0   # nothing changed

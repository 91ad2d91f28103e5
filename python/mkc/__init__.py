"""Models compiled by mkc, from Python.

mkc writes one C, CUDA or HIP file and its header; built as a shared library
it is loaded here:

    mkc tests/models/hf/qwen3_tiny -o qwen.c --max-seqs 4 --max-chunk 64
    cc -O2 -shared -fPIC -pthread -o libqwen.so qwen.c -lm

    import mkc
    m = mkc.Model("./libqwen.so", weights="tests/models/hf/qwen3_tiny")
    tokens = m.generate([1, 2, 3], 16, temperature=0.8, seed=1)
    a, b = m.open(), m.open()
    logits = m.step_seqs([a, a, b], [5, 6, 7])      # one step, two sequences

Every failure the C side reports raises mkc.Error with its sentence. On the C
target the buffers are numpy arrays (host memory). On a GPU target (a library
built from the .cu or .hip file) a step's inputs and outputs live in device
memory: pass torch tensors on the device (their memory is used as it is, no
copy) or numpy arrays (copied through torch), and outputs come back as torch
tensors. The calls run on the default stream, or on the one set_stream names
(torch.cuda.current_stream(), say); tools/gpu_python.py checks the GPU path
against the C target's (run on an H200 in session 25).
"""

from __future__ import annotations

import ctypes as C
import os
from typing import Any, Callable, Optional, Sequence as Seq

import numpy as np

from ._lib import ON_TOKEN, Lib, Options, Request, Sampling

__all__ = ["Error", "Model", "Sequence"]

# ONNX's element type numbers (the C API's) as numpy types; bfloat16 as its bits
DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
          7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32,
          13: np.uint64, 16: np.uint16}


class Error(RuntimeError):
    """A call the compiled model refused or failed: the C side's sentence."""


def _i64(values):
    a = np.ascontiguousarray(np.asarray(values, dtype=np.int64).reshape(-1))
    return a, a.ctypes.data_as(C.POINTER(C.c_int64))


class Sequence:
    """One sequence of a file compiled with --max-seqs: its number, length and caches."""

    def __init__(self, model: Model, number: int) -> None:
        self.model = model
        self.number = number

    def __int__(self) -> int:
        return self.number

    def __len__(self) -> int:
        n = self.model._lib.seq_len(self.model._m, self.number)
        if n < 0:
            raise Error(f"sequence {self.number} is not open")
        return int(n)

    def __repr__(self):
        return f"Sequence({self.number})"

    def close(self) -> None:
        self.model._check(self.model._lib.seq_close(self.model._m, self.number))

    def fork(self) -> Sequence:
        """A new sequence holding this one's positions (pages shared until written)."""
        q = C.c_int()
        self.model._check(self.model._lib.seq_fork(self.model._m, self.number, C.byref(q)))
        return Sequence(self.model, q.value)

    def cache(self, i: int) -> Any:
        """Cache i of this sequence, dense: the shape of the past input it replaced."""
        return self.model._read_cache(i, self.number, len(self))

    def load_cache(self, i: int, values: Any) -> None:
        """Fills cache i from values (that shape, its positions on the cache's axis)."""
        self.model._load_cache(i, self.number, values)


class Model:
    """A compiled model: its library, its weights, and the calls of runtime/api_h.h."""

    def __init__(self, library: str | os.PathLike, weights: Optional[str | os.PathLike] = None,
                 name: Optional[str] = None, threads: int = 0, shuffle_seed: int = 0,
                 timeout_s: float = 0.0) -> None:
        library = os.fspath(library)
        if name is None:   # libllama.so, llama.so: llama
            name = os.path.basename(library).split(".")[0]
            name = name[3:] if name.startswith("lib") and len(name) > 3 else name
        self._lib = lib = Lib(library, name)
        self.target = lib.target().decode()
        self._m = C.c_void_p()
        opts = Options(threads, shuffle_seed, timeout_s)
        if lib.create(C.byref(self._m), C.byref(opts)):
            msg = lib.last_error(self._m).decode() if self._m else "out of memory"
            lib.destroy(self._m)
            self._m = None
            raise Error(msg)
        self.inputs = [(lib.input_name(i).decode(), DTYPES.get(lib.input_dtype(i)))
                       for i in range(lib.num_inputs())]
        self.outputs = [(lib.output_name(i).decode(), DTYPES.get(lib.output_dtype(i)))
                        for i in range(lib.num_outputs())]
        self.dims = {lib.dim_name(i).decode(): int(lib.max_dim(i)) for i in range(lib.num_dims())}
        self.caches = [lib.cache_name(i).decode() for i in range(lib.num_caches())]
        self.max_seqs = lib.max_seqs()
        self.page_size = int(lib.page_size())
        self.cache_capacity = int(lib.cache_capacity())
        if weights is not None:
            self.load_weights(weights)

    def __del__(self):
        self.close()

    def close(self):
        if getattr(self, "_m", None):
            self._lib.destroy(self._m)
            self._m = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check(self, rc):
        if rc:
            raise Error(self._lib.last_error(self._m).decode())

    def set_stream(self, stream: Any = None) -> None:
        """The stream every later call runs on (a GPU target): a torch.cuda.Stream, a raw
        cudaStream_t / hipStream_t as an int, or None (the default stream). A call
        still returns when its work is done, after what was queued on the stream before
        it. The C target takes None only."""
        handle = getattr(stream, "cuda_stream", stream)
        self._check(self._lib.set_stream(self._m, C.c_void_p(handle or None)))

    # -- weights and single steps ------------------------------------------

    def load_weights(self, path: str | os.PathLike) -> None:
        """Every weight from an ONNX file or a Hugging Face folder."""
        self._check(self._lib.load_weights(self._m, os.fspath(path).encode()))

    def _dims(self, dims):
        """The C dims array: dims[name] for each symbol, -1 (the caches' own) elsewhere."""
        names = list(self.dims)
        unknown = set(dims or {}) - set(names)
        if unknown:
            raise Error(f"no dimension {sorted(unknown)[0]!r}; the model's are {names}")
        arr = np.full(len(names) + 1, -1, dtype=np.int64)
        for i, n in enumerate(names):
            arr[i] = (dims or {}).get(n, -1)
        return arr

    def _buffer(self, x, dtype):
        """(object to keep alive, address) of x in the target's memory."""
        if hasattr(x, "data_ptr"):   # a torch tensor: its memory as it is
            if (x.device.type != "cpu") != (self.target != "c"):
                raise Error(f"a tensor on {x.device} for a {self.target} model")
            if not x.is_contiguous():
                raise Error("tensors must be contiguous")
            return x, x.data_ptr()
        a = np.ascontiguousarray(x, dtype=dtype)
        if self.target == "c":
            return a, a.ctypes.data
        import torch   # a GPU target: device memory
        t = torch.from_numpy(a).cuda()
        return t, t.data_ptr()

    def _empty(self, shape, dtype):
        if self.target == "c":
            a = np.empty(shape, dtype=dtype)
            return a, a.ctypes.data
        import torch
        t = torch.empty(tuple(shape), dtype=getattr(torch, np.dtype(dtype).name), device="cuda")
        return t, t.data_ptr()

    def step(self, inputs: dict | list, dims: Optional[dict] = None) -> list:
        """One step. inputs: a dict by name (or a list in the model's order);
        dims: each symbol's value for this step (the caches' count needs none).
        Returns the outputs in the model's order."""
        if isinstance(inputs, dict):
            missing = [n for n, _ in self.inputs if n not in inputs]
            if missing:
                raise Error(f"no value for input {missing[0]!r}")
            inputs = [inputs[n] for n, _ in self.inputs]
        if len(inputs) != len(self.inputs):
            raise Error(f"{len(inputs)} inputs for a model of {len(self.inputs)}")
        d = self._dims(dims)
        keep, ins = [], (C.c_void_p * (len(inputs) + 1))()
        for i, (x, (_, dt)) in enumerate(zip(inputs, self.inputs)):
            obj, ins[i] = self._buffer(x, dt)
            keep.append(obj)
        outs, ptrs = self._outputs(d)
        self._check(self._lib.step(self._m, ins, ptrs, d.ctypes.data_as(C.POINTER(C.c_int64))))
        return outs

    def _outputs(self, d):
        outs, ptrs = [], (C.c_void_p * (len(self.outputs) + 1))()
        shape = np.zeros(16, dtype=np.int64)
        for i, (_, dt) in enumerate(self.outputs):
            rank = self._lib.output_shape(i, d.ctypes.data_as(C.POINTER(C.c_int64)),
                                          shape.ctypes.data_as(C.POINTER(C.c_int64)))
            o, ptrs[i] = self._empty([int(s) for s in shape[:rank]], dt)
            outs.append(o)
        return outs, ptrs

    def generate(self, prompt: Seq[int], max_new: int, temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 0.0, seed: int = 0, stop: Seq[int] = ()) -> list[int]:
        """Up to max_new tokens after prompt, greedy (temperature 0) or drawn;
        a stop token ends them (and is the last). Runs in the target: on a
        GPU every one-token step in one launch."""
        p, pp = _i64(prompt)
        st, sp = _i64(list(stop))
        s = Sampling(temperature, top_k, top_p, seed, sp if len(st) else None, len(st))
        out = np.empty(max(int(max_new), 1), dtype=np.int64)
        n = C.c_int()
        self._check(self._lib.generate_with(self._m, pp, len(p), int(max_new), C.byref(s),
                                            out.ctypes.data_as(C.POINTER(C.c_int64)),
                                            C.byref(n)))
        return out[:n.value].tolist()

    def generate_batch(self, requests: Seq[dict],
                       on_token: Optional[Callable[[int, int], None]] = None) -> list[list[int]]:
        """Generates for several requests at once (a --max-seqs file), each a
        dict of prompt, max_new and the sampling keys of generate; returns
        each request's tokens (those generate gives it alone). on_token(i,
        token) hears each token as it is drawn."""
        n = len(requests)
        keep, rq = [], (Request * n)()
        for i, r in enumerate(requests):
            p, pp = _i64(r["prompt"])
            st, sp = _i64(list(r.get("stop", ())))
            out = np.empty(max(int(r["max_new"]), 1), dtype=np.int64)
            keep += [p, st, out]
            rq[i] = Request(pp, len(p), int(r["max_new"]),
                            Sampling(r.get("temperature", 0.0), r.get("top_k", 0),
                                     r.get("top_p", 0.0), r.get("seed", 0) % (1 << 64),
                                     sp if len(st) else None, len(st)),
                            out.ctypes.data_as(C.POINTER(C.c_int64)), 0)
        cb = ON_TOKEN((lambda u, i, t: on_token(i, t)) if on_token else 0)
        self._check(self._lib.generate_batch(self._m, rq, n, cb, None))
        return [keep[3 * i + 2][:rq[i].n_out].tolist() for i in range(n)]

    def sample(self, logits: Any, settings: Seq[dict], positions: Seq[int]) -> list[int]:
        """The token drawn from each row of logits [rows, vocab] (a step's
        output, in the target's memory), row r as settings[r] says (a dict of
        temperature, top_k, top_p, seed; temperature 0 or absent: the argmax)
        for the position positions[r] its token takes: generate's own draw,
        on the device on a GPU target."""
        rows = len(positions)
        if hasattr(logits, "data_ptr"):
            ptr = logits.data_ptr()
        else:
            logits = np.ascontiguousarray(logits)
            ptr = logits.ctypes.data
        if len(settings) != rows or int(np.prod(logits.shape[:-1])) != rows:
            raise Error(f"{rows} positions for {len(settings)} settings and logits "
                        f"{list(logits.shape)}")
        s = (Sampling * rows)()
        for r, x in enumerate(settings):
            s[r] = Sampling(x.get("temperature", 0.0), x.get("top_k", 0), x.get("top_p", 0.0),
                            x.get("seed", 0) % (1 << 64), None, 0)
        p, pp = _i64(positions)
        out = np.empty(rows, dtype=np.int64)
        self._check(self._lib.sample(self._m, ptr, rows, s, pp,
                                     out.ctypes.data_as(C.POINTER(C.c_int64))))
        return out.tolist()

    # -- the caches (sequence 0's) -----------------------------------------

    @property
    def cache_len(self) -> int:
        return int(self._lib.cache_len(self._m))

    def cache_reset(self) -> None:
        self._check(self._lib.cache_reset(self._m))

    def cache(self, i: int) -> Any:
        """Cache i (sequence 0's), dense: the shape of the past input it replaced."""
        return self._read_cache(i, None, self.cache_len)

    def load_cache(self, i: int, values: Any) -> None:
        self._load_cache(i, None, values)

    def _cache_info(self, i, length):
        if not 0 <= i < len(self.caches):
            raise Error(f"there is no KV cache {i} (the model keeps {len(self.caches)})")
        shape = np.zeros(16, dtype=np.int64)
        rank = self._lib.cache_shape(i, length, shape.ctypes.data_as(C.POINTER(C.c_int64)))
        return [int(s) for s in shape[:rank]], DTYPES[self._lib.cache_dtype(i)]

    def _read_cache(self, i, seq, length):
        shape, dt = self._cache_info(i, length)
        out, ptr = self._empty(shape, dt)
        rc = (self._lib.cache_read(self._m, i, ptr) if seq is None
              else self._lib.seq_cache_read(self._m, seq, i, ptr))
        self._check(rc)
        return out

    def _load_cache(self, i, seq, values):
        shape, dt = self._cache_info(i, 0)
        axis = next((a for a, s in enumerate(shape) if s == 0), None)
        v = values
        if axis is None or len(v.shape) != len(shape) or any(
                a != axis and v.shape[a] != s for a, s in enumerate(shape)):
            raise Error(f"cache {i} takes {shape} with any length on axis {axis}, "
                        f"not {list(v.shape)}")
        obj, ptr = self._buffer(v, dt)
        n = int(v.shape[axis])
        rc = (self._lib.cache_load(self._m, i, ptr, n) if seq is None
              else self._lib.seq_cache_load(self._m, seq, i, ptr, n))
        self._check(rc)

    # -- sequences (--max-seqs) --------------------------------------------

    @property
    def free_pages(self) -> int:
        return int(self._lib.free_pages(self._m))

    def sequence(self, number: int) -> Sequence:
        """Sequence number (0 is open from the start)."""
        return Sequence(self, number)

    def open(self) -> Sequence:
        """A new, empty sequence."""
        q = C.c_int()
        self._check(self._lib.seq_open(self._m, C.byref(q)))
        return Sequence(self, q.value)

    def step_seqs(self, seqs: Seq[Sequence | int], tokens: Seq[int],
                  positions: Optional[Seq[int]] = None) -> list:
        """One step of len(tokens) tokens, token r of sequence seqs[r] (each
        sequence's in order, at its next positions; given positions are
        checked). Returns the outputs (logits [1, n, vocab]: row r token r's)."""
        q = np.ascontiguousarray([int(s) for s in seqs], dtype=np.intc)
        n = len(q)
        if len(tokens) != n:
            raise Error(f"{len(tokens)} tokens for {n} sequences")
        if positions is None:
            seen, positions = {}, []
            for s in q:
                positions.append(self._lib.seq_len(self._m, int(s)) + seen.get(s, 0))
                seen[s] = seen.get(s, 0) + 1
        names = [nm for nm, _ in self.inputs]
        by = {"input_ids": tokens, "position_ids": positions}
        if set(names) - set(by):
            raise Error(f"step_seqs feeds input_ids and position_ids; the model also takes "
                        f"{sorted(set(names) - set(by))}")
        keep, ins = [], (C.c_void_p * (len(names) + 1))()
        for i, (nm, dt) in enumerate(self.inputs):
            obj, ins[i] = self._buffer(np.asarray(by[nm]).reshape(1, n), dt)
            keep.append(obj)
        sd = self._lib.step_dim()
        d = self._dims({list(self.dims)[sd]: n} if sd >= 0 else None)
        outs, ptrs = self._outputs(d)
        self._check(self._lib.step_seqs(self._m, q.ctypes.data_as(C.POINTER(C.c_int)), n, ins,
                                        ptrs))
        return outs

#!/usr/bin/env python3
"""Differential testing of mkc against onnxruntime on small random graphs.

    python3 tools/difftest.py [--mkc build/mkc] [--seed S] [--count N] [--jobs J]
                              [--out DIR] [--only I] [--no-reduce] [--replay DIR]

Each graph is a few nodes of the ops in ir/ops.def, built with onnx.helper
and checked by onnx.checker: random shapes and broadcasting, attributes,
opsets (11 to 23), element types (float32 mostly; float64, int32, int64 and
the small integers where onnxruntime has a kernel; bool for the comparisons,
And, Or, Not and Where), names, values with NaN, +-inf, -0.0, denormals and
the extremes of each type mixed in, inputs as graph inputs, initializers
(constant folding) or Constant nodes, and mkc test's options (workers,
--no-fuse, --no-reuse, a shuffled queue). onnxruntime computes the
reference outputs; `mkc test` compiles, builds and runs the graph on the C
target and compares (relative L2 error 1e-5, NaN and infinities exact);
this tool then compares the outputs again element by element (mkc test's L2
error over a whole tensor does not see one wrong element beside a huge one).

Graph I of seed S is the same on every machine: `--seed S --only I`
makes it again. Outcomes: pass; refused (mkc stops with exit status 1 and
a sentence: listed by reason in the summary, so that a refusal that should
not happen is seen); skipped (the graph computes something ONNX leaves
undefined, such as a float cast to an integer it does not fit, or
onnxruntime has no kernel for it); fail (a crash, a hang, an exit without a
sentence, emitted code that does not build, or a wrong answer). A failure
is reduced (the one node that fails alone, fed the values onnxruntime
computed for its inputs, else the outputs' cones) and written to
OUT/s<S>-g<I>/ (model.onnx, test_data_set_0/, repro.txt with the one-line
command that replays it); a failure of a known defect (KNOWN below, each
with its regression case in tests/diff/expected_failures.txt) is counted
apart and does not fail the run.

--replay DIR runs the regression cases DIR/cases/NAME/ (each a folder for
mkc test, with its options in args.txt) against DIR/expected_failures.txt:
a case listed there must fail and any other must pass; a listed case that
passes is reported as unexpectedly passing, so that the list shrinks when
a fix lands. With --replay and --count both, both run.

Exit status 0 when nothing failed but known defects.
"""
import argparse
import concurrent.futures
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

ort.set_default_logger_severity(4)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

F32, F64, I8, U8, I16, U16 = TP.FLOAT, TP.DOUBLE, TP.INT8, TP.UINT8, TP.INT16, TP.UINT16
I32, I64, U32, U64, BOOL = TP.INT32, TP.INT64, TP.UINT32, TP.UINT64, TP.BOOL
NP = {F32: np.float32, F64: np.float64, I8: np.int8, U8: np.uint8, I16: np.int16,
      U16: np.uint16, I32: np.int32, I64: np.int64, U32: np.uint32, U64: np.uint64,
      BOOL: np.bool_}
FLOATS = (F32, F64)
INTS = (I8, U8, I16, U16, I32, I64, U32, U64)
SIGNED = (I8, I16, I32, I64)


def tname(dt):
    return TP.DataType.Name(dt).lower()


# ---------------------------------------------------------------------------
# Values

F32_SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, 2.0, 3.0,
               np.finfo(np.float32).max, -np.finfo(np.float32).max,
               np.finfo(np.float32).tiny, 1e-45, -1e-40, 1e30, -1e30, 88.75, -104.0,
               16777217.0, 0.49999997, 2.5, -2.5]


def values(rng, dt, shape, role="any"):
    """Random values of type dt: mostly ordinary numbers, with specials mixed
    in (NaN, infinities, -0.0, denormals, the type's extremes) in some
    tensors. role narrows them where ONNX leaves a value undefined or
    onnxruntime would trap: 'divisor' (an integer divisor: no 0, no -1),
    'small' (integers in -4..4), 'exponent' (integers 0..5)."""
    n = int(np.prod(shape, dtype=np.int64))
    if dt == BOOL:
        return rng.random(n).reshape(shape) < rng.random()
    if dt in FLOATS:
        scale = rng.choice([1.0, 1.0, 10.0, 1e-3, 100.0])
        v = rng.standard_normal(n) * scale
        if rng.random() < 0.3:
            v = np.round(v * 2) / 2   # ties and integers: Floor, Ceil, Equal
        if n and rng.random() < 0.35:
            k = rng.integers(1, max(2, n // 2) + 1)
            v[rng.integers(0, n, k)] = rng.choice(F32_SPECIAL, k)
        if dt == F64 and rng.random() < 0.3:
            v = v + rng.standard_normal(n) * 1e-12   # differences float32 cannot hold
        return v.astype(NP[dt]).reshape(shape)
    info = np.iinfo(NP[dt])
    if role == "divisor":
        lo = 1 if info.min == 0 else -9
        v = rng.integers(lo, 10, n)
        v[(v == 0) | (v == -1)] = 2
        return v.astype(NP[dt]).reshape(shape)
    if role == "exponent":
        return rng.integers(0, 6, n).astype(NP[dt]).reshape(shape)
    lo = max(info.min, -4 if role == "small" else -20)
    hi = min(info.max, 4 if role == "small" else 20)
    v = rng.integers(lo, hi + 1, n).astype(np.int64 if dt != U64 else np.uint64)
    if n and role == "any" and rng.random() < 0.25:
        k = rng.integers(1, max(2, n // 2) + 1)
        ext = [info.min, info.max, info.min + 1, info.max - 1, 0, 1]
        idx = rng.integers(0, n, k)
        for j, e in zip(idx, rng.choice(len(ext), k)):
            v[j] = ext[e]
    return v.astype(NP[dt]).reshape(shape)


# ---------------------------------------------------------------------------
# Graphs

class Tensor:
    def __init__(self, name, dt, shape, kind, value=None, role="any"):
        self.name, self.dt, self.shape, self.kind = name, dt, tuple(shape), kind
        self.value, self.role = value, role   # kind: input, init, const or node

    @property
    def rank(self):
        return len(self.shape)


class Skip(Exception):
    """This op cannot be made from what the graph holds: pick another."""


ODD_NAMES = ["a/b.c:0", "x y", "0start", "int", "main", "out", "m", "__x", "é", "t-1",
             "/model/layers.0/Add_output_0", "NaN", "powf", "x" * 80]


class Builder:
    """One graph under construction: the tensors so far, nodes, inputs,
    initializers, and the opset, with the helpers the op makers share."""

    def __init__(self, rng, opset):
        self.rng, self.opset = rng, opset
        self.pool, self.nodes, self.inputs, self.inits = [], [], [], []
        self.ms = False        # uses the com.microsoft domain
        self.names = set()
        self.all = {}          # every tensor made, by name
        self.bind_consts = False
        self.bad = None        # the node given an index out of range on purpose
        self.odd = rng.random() < 0.1   # names that are C keywords, paths, spaces

    def name(self, base):
        if self.odd and self.rng.random() < 0.3:
            base = str(self.rng.choice(ODD_NAMES))
        k, n = 0, base
        while n in self.names:
            k += 1
            n = f"{base}_{k}"
        self.names.add(n)
        return n

    def choice(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def dim(self):
        r = self.rng.random()
        if r < 0.03:
            return 0
        if r < 0.1:
            return int(self.choice([7, 8, 16, 17, 33, 64]))
        return int(self.choice([1, 1, 2, 2, 3, 3, 4, 5]))

    def shape(self, rank=None):
        if rank is None:
            rank = int(self.choice([0, 1, 1, 2, 2, 2, 3, 3, 4]))
        return tuple(self.dim() for _ in range(rank))

    def fresh(self, dt, shape, role="any", kind=None):
        """A new graph input, initializer or Constant node."""
        if kind is None:
            r = self.rng.random()
            kind = "input" if r < 0.7 else "init" if r < 0.9 else "const"
        v = values(self.rng, dt, shape, role)
        return self.add_value(dt, shape, kind, v, role)

    def add_value(self, dt, shape, kind, v, role="any"):
        v = np.asarray(v, dtype=NP[dt]).reshape(shape)
        t = Tensor(self.name("x" if kind == "input" else "w" if kind == "init" else "c"), dt,
                   shape, kind, v, role)
        self.all[t.name] = t
        if kind == "input":
            self.inputs.append(t)
        elif kind == "init":
            self.inits.append(t)
        else:
            self.nodes.append(helper.make_node("Constant", [], [t.name], name=self.name("Constant"),
                                               value=numpy_helper.from_array(v, t.name)))
        self.pool.append(t)
        return t

    def const(self, v, dt=I64):
        """A value that must be known at compile time (shapes, axes): an
        initializer or a Constant node, and now and then a graph input that
        mkc test binds with --bind-consts."""
        v = np.asarray(v)
        r = self.rng.random()
        kind = "init" if r < 0.6 else "const" if r < 0.9 else "input"
        if kind == "input":
            self.bind_consts = True
        t = self.add_value(dt, v.shape, kind, v, "const")
        self.pool.remove(t)   # not an operand for later nodes
        return t

    def pick(self, ok, make=None, fresh_p=0.35):
        """An operand: a tensor of the graph for which ok(t) holds (the newest
        more often, so that nodes chain), else make()."""
        cands = [t for t in self.pool if ok(t) and t.role != "const"]
        if cands and (make is None or self.rng.random() > fresh_p):
            w = np.arange(1, len(cands) + 1, dtype=float) ** 2
            return cands[int(self.rng.choice(len(cands), p=w / w.sum()))]
        if make is None:
            raise Skip()
        return make()

    def node(self, op, ins, outs, domain="", **attrs):
        """Adds op(ins) -> outs [(dtype, shape)]; returns the output tensors."""
        if not schema_allows(op, domain, self.opset, [t.dt if t else None for t in ins],
                             [dt for dt, _ in outs]):
            raise Skip()
        ts = [Tensor(self.name("t"), dt, s, "node") for dt, s in outs]
        self.all.update((t.name, t) for t in ts)
        self.nodes.append(helper.make_node(op, [t.name if t else "" for t in ins],
                                           [t.name for t in ts], name=self.name(op),
                                           domain=domain, **attrs))
        self.pool.extend(ts)
        return ts


def schema_allows(op, domain, opset, ins, outs):
    """Whether ONNX's schema of op at this opset takes these element types
    (ops of other domains are not checked here)."""
    if domain or op == "SimplifiedLayerNormalization":
        return True
    try:
        s = onnx.defs.get_schema(op, opset, "")
    except Exception:
        return False
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in s.type_constraints}
    bound = {}   # a type parameter stands for one type in every place

    def ok(formals, dts):
        for k, dt in enumerate(dts):
            if dt is None:
                continue
            if not formals:
                return False
            f = formals[min(k, len(formals) - 1)]
            if f"tensor({TYPE_STR[dt]})" not in allowed.get(f.type_str, {f.type_str}):
                return False
            if bound.setdefault(f.type_str, dt) != dt:
                return False
        return True
    return ok(list(s.inputs), ins) and ok(list(s.outputs), outs)


TYPE_STR = {F32: "float", F64: "double", I8: "int8", U8: "uint8", I16: "int16", U16: "uint16",
            I32: "int32", I64: "int64", U32: "uint32", U64: "uint64", BOOL: "bool"}


def bshape(*shapes):
    return tuple(np.broadcast_shapes(*shapes))


def partner(b, s):
    """A shape that broadcasts with s (numpy's rules, both ways)."""
    r = len(s)
    k = int(b.rng.integers(0, r + 2)) if r < 4 else int(b.rng.integers(0, r + 1))
    out = []
    for i in range(k):
        j = r - k + i
        if j < 0:
            out.append(b.dim() if b.rng.random() < 0.5 else 1)
        elif s[j] == 1 and b.rng.random() < 0.3:
            out.append(max(1, b.dim()))
        elif b.rng.random() < 0.3:
            out.append(1)
        else:
            out.append(s[j])
    return tuple(out)


def numeric(b, types):
    """An element type: float32 mostly, then the others of types."""
    if F32 in types and b.rng.random() < 0.6:
        return F32
    return b.choice(list(types))


def operand(b, types, shape=None, role="any", rank=None):
    """An existing tensor of one of types (and shape, if given), else a new one."""
    def ok(t):
        return (t.dt in types and (shape is None or t.shape == tuple(shape)) and
                (rank is None or t.rank == rank) and (role == "any" or t.role == role))
    dt = numeric(b, types)
    return b.pick(ok, lambda: b.fresh(dt, shape if shape is not None else b.shape(rank), role))


# The element types onnxruntime's CPU kernels take, per op (what mkc must
# then compute too).
FLOAT_ONLY = (F32, F64)
ARITH = (F32, F64, I32, I64)
MINMAX = (F32, F64, I32, I64, U32, U64, I8, U8)
CMP = (F32, F64, I32, I64)
ANY = (F32, F64, I8, U8, I16, U16, I32, I64, U32, U64, BOOL)
UNARY = {"Identity": ANY, "Neg": (F32, F64, I8, I16, I32, I64), "Abs": MINMAX,
         "Sqrt": FLOAT_ONLY, "Reciprocal": FLOAT_ONLY, "Exp": FLOAT_ONLY, "Log": FLOAT_ONLY,
         "Sin": FLOAT_ONLY, "Cos": FLOAT_ONLY, "Tanh": FLOAT_ONLY, "Sigmoid": FLOAT_ONLY,
         "Relu": (F32, F64, I8, I32), "Erf": (F32,), "Floor": FLOAT_ONLY, "Ceil": FLOAT_ONLY}


def op_unary(op):
    def make(b):
        x = operand(b, UNARY[op])
        return b.node(op, [x], [(x.dt, x.shape)])
    return make


def op_not(b):
    x = operand(b, (BOOL,))
    b.node("Not", [x], [(BOOL, x.shape)])


def op_isnan(b):
    x = operand(b, FLOAT_ONLY)
    b.node("IsNaN", [x], [(BOOL, x.shape)])


def op_cast(b, like=False):
    x = operand(b, ANY)
    to = b.choice([t for t in ANY if t != x.dt] + [x.dt])
    if like:
        y = b.fresh(to, b.shape(int(b.rng.integers(0, 3))))
        b.node("CastLike", [x, y], [(to, x.shape)])
    else:
        b.node("Cast", [x], [(to, x.shape)], to=to)


def op_binary(op, types, out_bool=False):
    def make(b):
        a = operand(b, types)
        s = partner(b, a.shape)
        role = "divisor" if op == "Div" and a.dt in INTS else "any"
        if role == "divisor":
            c = b.fresh(a.dt, s, role)   # onnxruntime traps on x / 0 in integers
        else:
            # now and then one tensor as both operands (x + x)
            same = b.rng.random() < 0.1
            c = b.pick(lambda t: t.dt == a.dt and (t is not a or same) and _bc(t.shape, a.shape),
                       lambda: b.fresh(a.dt, s))
        if role != "divisor" and b.rng.random() < 0.5:
            a, c = c, a
        b.node(op, [a, c], [(BOOL if out_bool else a.dt, bshape(a.shape, c.shape))])
    return make


def _bc(s1, s2):
    try:
        np.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


def op_pow(b):
    a = operand(b, ARITH)
    et = numeric(b, ARITH)
    role = "exponent" if et in INTS else "any"
    e = b.pick(lambda t: t.dt == et and t.role == role and _bc(t.shape, a.shape),
               lambda: b.fresh(et, partner(b, a.shape), role))
    b.node("Pow", [a, e], [(a.dt, bshape(a.shape, e.shape))])


def op_variadic(op):
    def make(b):
        a = operand(b, MINMAX)
        xs = [a]
        for _ in range(int(b.rng.integers(0, 3))):
            # against the shape of all so far: [2, 1, 5] and [3, 1] each go with [2, 3, 5]
            # alone, not together
            sh = bshape(*[x.shape for x in xs])
            xs.append(b.pick(lambda t: t.dt == a.dt and _bc(t.shape, sh),
                             lambda: b.fresh(a.dt, partner(b, sh))))
        b.node(op, xs, [(a.dt, bshape(*[x.shape for x in xs]))])
    return make


WHERE = (F32, F64, I8, U8, I32, I64, U32)


def op_where(b):
    x = operand(b, WHERE)
    y = b.pick(lambda t: t.dt == x.dt and _bc(t.shape, x.shape),
               lambda: b.fresh(x.dt, partner(b, x.shape)))
    s = bshape(x.shape, y.shape)
    c = b.pick(lambda t: t.dt == BOOL and _bc(t.shape, s), lambda: b.fresh(BOOL, partner(b, s)))
    b.node("Where", [c, x, y], [(x.dt, bshape(c.shape, s))])


def op_matmul(b):
    dt = numeric(b, (F32, F64, I32, I64))
    k = int(b.choice([1, 2, 3, 4, 5, 8, 16, 33, 64, 130]))
    ra, rb = int(b.choice([1, 2, 2, 3, 4])), int(b.choice([1, 2, 2, 3]))
    batch = b.shape(max(ra, rb) - 2) if max(ra, rb) > 2 else ()
    sa = (batch[len(batch) - (ra - 2):] if ra > 2 else ()) + ((b.dim(),) if ra > 1 else ()) + (k,)
    sb = (batch[len(batch) - (rb - 2):] if rb > 2 else ()) + (k,) + ((b.dim(),) if rb > 1 else ())
    if ra > 2 and rb > 2 and b.rng.random() < 0.3:
        sa = (1,) + sa[1:]
    a = operand(b, (dt,), sa)
    c = operand(b, (dt,), sb)
    y = np.matmul(np.zeros(sa, np.float32), np.zeros(sb, np.float32)).shape
    b.node("MatMul", [a, c], [(dt, y)])


def op_gemm(b):
    dt = numeric(b, FLOAT_ONLY)
    m, k, n = b.dim(), int(b.choice([1, 2, 3, 8, 16, 33, 130])), b.dim()
    ta, tb = int(b.rng.integers(0, 2)), int(b.rng.integers(0, 2))
    a = operand(b, (dt,), (k, m) if ta else (m, k))
    w = operand(b, (dt,), (n, k) if tb else (k, n))
    ins, attrs = [a, w], {}
    if b.rng.random() < 0.6:
        cs = b.choice([(), (n,), (1, n), (m, 1), (m, n), (1,), (1, 1)])
        ins.append(operand(b, (dt,), cs))
    if ta or b.rng.random() < 0.3:
        attrs["transA"] = ta
    if tb or b.rng.random() < 0.3:
        attrs["transB"] = tb
    if b.rng.random() < 0.4:
        attrs["alpha"] = float(b.choice([0.0, 1.0, -0.5, 2.0, 1e-3]))
    if b.rng.random() < 0.4:
        attrs["beta"] = float(b.choice([0.0, 1.0, -1.5, 3.0]))
    b.node("Gemm", ins, [(dt, (m, n))], **attrs)


def op_softmax(b):
    x = operand(b, FLOAT_ONLY, rank=int(b.choice([1, 2, 3, 4])))
    attrs = {}
    # before opset 13 the default axis is 1, which a vector has not
    if b.rng.random() < 0.7 or (b.opset < 13 and x.rank < 2):
        attrs["axis"] = int(b.rng.integers(-x.rank, x.rank))
    b.node("Softmax", [x], [(x.dt, x.shape)], **attrs)


REDUCE_TYPES = {"ReduceSum": (F32, F64, I32, I64), "ReduceMean": (F32, F64, I32),
                "ReduceMax": (F32, F64, I32, I64, I8, U8)}


def op_reduce(op):
    def make(b):
        x = operand(b, REDUCE_TYPES[op], rank=int(b.choice([1, 2, 3, 4])))
        if 0 in x.shape and op == "ReduceMax":
            raise Skip()   # no identity: onnxruntime and ONNX differ on empty inputs
        axes = sorted({int(a) for a in b.rng.integers(-x.rank, x.rank,
                                                      int(b.rng.integers(0, x.rank + 1)))},
                      key=lambda a: a % x.rank)
        axes = list({a % x.rank: a for a in axes}.values())
        keep = int(b.rng.integers(0, 2))
        noop = int(not axes and b.rng.random() < 0.3)
        attrs = {"keepdims": keep} if keep == 0 or b.rng.random() < 0.5 else {}
        axes_input = b.opset >= (13 if op == "ReduceSum" else 18)
        if noop:
            if not axes_input:
                raise Skip()
            attrs["noop_with_empty_axes"] = 1
        ins = [x]
        if axes and axes_input:
            ins.append(b.const(np.array(axes, np.int64)))
        elif axes:
            attrs["axes"] = axes
        red = [a % x.rank for a in axes] if axes or noop else list(range(x.rank))
        s = tuple(1 if i in red else d for i, d in enumerate(x.shape) if keep or i not in red)
        b.node(op, ins, [(x.dt, s)], **attrs)
    return make


def op_shape(b):
    x = b.pick(lambda t: True)
    attrs = {}
    lo, hi = 0, x.rank
    if b.opset >= 15 and b.rng.random() < 0.4:
        st, en = int(b.rng.integers(-x.rank - 1, x.rank + 2)), int(b.rng.integers(-x.rank - 1, x.rank + 2))
        attrs = {"start": st, "end": en}
        lo = min(max(st + x.rank if st < 0 else st, 0), x.rank)
        hi = min(max(en + x.rank if en < 0 else en, 0), x.rank)
    b.node("Shape", [x], [(I64, (max(0, hi - lo),))], **attrs)


def op_size(b):
    x = b.pick(lambda t: True)
    b.node("Size", [x], [(I64, ())])


def op_constant_of_shape(b):
    s = b.shape(int(b.choice([0, 1, 2, 3])))
    dt = b.choice([F32, I32, I64, BOOL, F64])
    attrs = {}
    if b.rng.random() < 0.8:
        attrs["value"] = numpy_helper.from_array(values(b.rng, dt, (1,)), "value")
    else:
        dt = F32
    b.node("ConstantOfShape", [b.const(np.array(s, np.int64))], [(dt, s)], **attrs)


def op_reshape(b):
    x = b.pick(lambda t: 0 not in t.shape,
               lambda: b.fresh(numeric(b, ANY), tuple(max(1, d) for d in b.shape())))
    n = int(np.prod(x.shape, dtype=np.int64))
    dims, left = [], n
    for _ in range(int(b.rng.integers(0, 4))):
        ds = [d for d in range(1, left + 1) if left % d == 0]
        d = b.choice(ds)
        dims.append(d)
        left //= d
    dims.append(left)
    b.rng.shuffle(dims)
    spec = list(dims)
    if b.rng.random() < 0.4:
        spec[int(b.rng.integers(0, len(spec)))] = -1
    for i in range(min(len(spec), x.rank)):
        if spec[i] == x.shape[i] and b.rng.random() < 0.3:
            spec[i] = 0   # copy the input's dimension
    b.node("Reshape", [x, b.const(np.array(spec, np.int64))], [(x.dt, tuple(dims))])


def op_flatten(b):
    x = b.pick(lambda t: t.rank >= 1, lambda: b.fresh(numeric(b, ANY), b.shape(int(b.choice([1, 2, 3, 4])))))
    ax = int(b.rng.integers(-x.rank, x.rank + 1))
    a = ax % (x.rank + 1) if ax >= 0 else ax + x.rank
    s = (int(np.prod(x.shape[:a], dtype=np.int64)), int(np.prod(x.shape[a:], dtype=np.int64)))
    attrs = {"axis": ax} if ax != 1 or b.rng.random() < 0.5 else {}
    b.node("Flatten", [x], [(x.dt, s)], **attrs)


def axes_arg(b, axes):
    """Axes as an input from opset 13 on, an attribute before."""
    if b.opset >= 13:
        return [b.const(np.array(axes, np.int64))], {}
    return [], {"axes": axes}


def op_unsqueeze(b):
    x = b.pick(lambda t: t.rank < 6, lambda: b.fresh(numeric(b, ANY), b.shape()))
    k = int(b.rng.integers(1, 3))
    r = x.rank + k
    pos = sorted(int(p) for p in b.rng.choice(r, k, replace=False))
    s = list(x.shape)
    for p in pos:
        s.insert(p, 1)
    axes = [p - r if b.rng.random() < 0.3 else p for p in pos]
    ins, attrs = axes_arg(b, axes)
    b.node("Unsqueeze", [x] + ins, [(x.dt, tuple(s))], **attrs)


def op_squeeze(b):
    x = b.pick(lambda t: 1 in t.shape)
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    if b.rng.random() < 0.3:
        b.node("Squeeze", [x], [(x.dt, tuple(d for d in x.shape if d != 1))])
        return
    pick = sorted(int(i) for i in b.rng.choice(ones, int(b.rng.integers(1, len(ones) + 1)),
                                               replace=False))
    axes = [i - x.rank if b.rng.random() < 0.3 else i for i in pick]
    ins, attrs = axes_arg(b, axes)
    b.node("Squeeze", [x] + ins, [(x.dt, tuple(d for i, d in enumerate(x.shape) if i not in pick))],
           **attrs)


def op_transpose(b):
    x = b.pick(lambda t: t.rank >= 2, lambda: b.fresh(numeric(b, ANY), b.shape(int(b.choice([2, 3, 4])))))
    if b.rng.random() < 0.2:
        b.node("Transpose", [x], [(x.dt, x.shape[::-1])])
        return
    p = [int(i) for i in b.rng.permutation(x.rank)]
    b.node("Transpose", [x], [(x.dt, tuple(x.shape[i] for i in p))], perm=p)


def op_concat(b):
    x = b.pick(lambda t: t.rank >= 1, lambda: b.fresh(numeric(b, ANY), b.shape(int(b.choice([1, 2, 3])))))
    ax = int(b.rng.integers(-x.rank, x.rank))
    a = ax % x.rank
    xs = [x]
    for _ in range(int(b.rng.integers(0, 3))):
        s = list(x.shape)
        s[a] = b.dim()
        xs.append(b.pick(lambda t: t.dt == x.dt and t.rank == x.rank and
                         all(t.shape[i] == x.shape[i] for i in range(x.rank) if i != a),
                         lambda: b.fresh(x.dt, tuple(s))))
    s = list(x.shape)
    s[a] = sum(t.shape[a] for t in xs)
    b.node("Concat", xs, [(x.dt, tuple(s))], axis=ax)


def op_split(b):
    x = b.pick(lambda t: t.rank >= 1 and max(t.shape) >= 2,
               lambda: b.fresh(numeric(b, ANY), (b.dim() + 2,) + b.shape(int(b.choice([0, 1, 2])))))
    ax = b.choice([i for i in range(x.rank) if x.shape[i] >= 1])
    d = x.shape[ax]
    attrs = {}
    axis_attr = ax - x.rank if b.rng.random() < 0.3 else ax
    if axis_attr != 0 or b.rng.random() < 0.5:
        attrs["axis"] = axis_attr
    ins = [x]
    if b.rng.random() < 0.5 or d < 2:
        cuts = sorted(int(c) for c in b.rng.integers(0, d + 1, int(b.rng.integers(0, 3))))
        parts = [e - s for s, e in zip([0] + cuts, cuts + [d])]
        if b.opset >= 13:
            ins.append(b.const(np.array(parts, np.int64)))
        else:
            attrs["split"] = parts
    else:
        k = int(b.rng.integers(2, min(d, 4) + 1))
        if b.opset >= 18:
            each = -(-d // k)
            parts = [each] * (k - 1) + [d - each * (k - 1)]
            if parts[-1] <= 0:
                raise Skip()
            attrs["num_outputs"] = k
        else:
            if d % k:
                raise Skip()
            parts = [d // k] * k
    outs = []
    for p in parts:
        s = list(x.shape)
        s[ax] = p
        outs.append((x.dt, tuple(s)))
    b.node("Split", ins, outs, **attrs)


def slice_len(d, st, en, step):
    """ONNX's Slice length (not Python's: a start before the first element
    with a negative step is clamped to the first element, which it keeps)."""
    st, en = st + d if st < 0 else st, en + d if en < 0 else en
    if step > 0:
        st, en = min(max(st, 0), d), min(max(en, 0), d)
        return max(0, -(-(en - st) // step))
    st, en = min(max(st, 0), d - 1), min(max(en, -1), d - 1)
    return max(0, -(-(st - en) // -step))


def op_slice(b):
    x = b.pick(lambda t: t.rank >= 1, lambda: b.fresh(numeric(b, ANY), b.shape(int(b.choice([1, 2, 3])))))
    axes = [int(a) for a in b.rng.choice(x.rank, int(b.rng.integers(1, x.rank + 1)), replace=False)]
    starts, ends, steps, shape = [], [], [], list(x.shape)
    big = [2**63 - 1, -(2**63), 2**31, -(2**31)]
    for a in axes:
        d = x.shape[a]
        step = int(b.choice([1, 1, 1, 2, 3, -1, -2]))
        st = int(b.rng.integers(-d - 2, d + 3)) if b.rng.random() > 0.1 else int(b.choice(big))
        en = int(b.rng.integers(-d - 2, d + 3)) if b.rng.random() > 0.15 else int(b.choice(big))
        if step < 0 and en == 2**63 - 1:
            # onnxruntime reads this end as "past the first element", where
            # ONNX clamps it to the last one (an empty slice)
            en = -(2**63)
        starts.append(st)
        ends.append(en)
        steps.append(step)
        shape[a] = slice_len(d, st, en, step)
    ins = [x, b.const(np.array(starts, np.int64)), b.const(np.array(ends, np.int64))]
    if b.opset < 10:
        raise Skip()
    if b.rng.random() < 0.8 or any(s != 1 for s in steps) or axes != list(range(len(axes))):
        ins.append(b.const(np.array([a - x.rank if b.rng.random() < 0.3 else a for a in axes],
                                    np.int64)))
        if b.rng.random() < 0.6 or any(s != 1 for s in steps):
            ins.append(b.const(np.array(steps, np.int64)))
    b.node("Slice", ins, [(x.dt, tuple(shape))])


def op_gather(b):
    x = b.pick(lambda t: t.rank >= 1 and all(t.shape),
               lambda: b.fresh(numeric(b, ANY), tuple(max(1, d) for d in b.shape(int(b.choice([1, 2, 3]))))))
    ax = int(b.rng.integers(-x.rank, x.rank))
    d = x.shape[ax]
    it = b.choice([I32, I64])
    s = b.shape(int(b.choice([0, 1, 1, 2])))
    iv = b.rng.integers(-d, d, int(np.prod(s, dtype=np.int64))).reshape(s)
    kind = b.choice(["input", "input", "init", "const"])
    if iv.size and kind == "input" and out_of_range(b):
        iv.flat[int(b.rng.integers(0, iv.size))] = b.choice([d, -d - 1, 2**31 - 1 if it == I32 else 2**40])
    idx = b.add_value(it, s, kind, iv, "index")
    b.node("Gather", [x, idx], [(x.dt, x.shape[:ax % x.rank] + s + x.shape[ax % x.rank + 1:])],
           **({"axis": ax} if ax or b.rng.random() < 0.5 else {}))


def op_expand(b):
    x = operand(b, ANY, rank=int(b.choice([0, 1, 2, 3])))
    target = list(partner(b, x.shape))
    y = bshape(x.shape, tuple(target))
    b.node("Expand", [x, b.const(np.array(target, np.int64))], [(x.dt, y)])


def op_tile(b):
    """Tile: mostly the broadcast of length-1 axes mkc computes; sometimes any
    repeats (folded when x is a constant, refused otherwise)."""
    x = operand(b, ANY, rank=int(b.choice([1, 2, 3])))
    general = b.rng.random() < 0.25
    reps = [int(b.choice([1, 2, 3])) if general or d == 1 else 1 for d in x.shape]
    y = tuple(d * r for d, r in zip(x.shape, reps))
    b.node("Tile", [x, b.const(np.array(reps, np.int64))], [(x.dt, y)])


def op_trilu(b):
    """Trilu (opset 14) on the types onnxruntime's CPU kernel takes: k left
    out, a constant (any sign, past the matrix too) or an input."""
    x = operand(b, (F32, F64, I64, BOOL), rank=int(b.choice([2, 2, 3])))
    ins = [x]
    r = b.rng.random()
    if r < 0.6:
        ins.append(b.const(np.array(int(b.rng.integers(-6, 7)), np.int64)))
    elif r < 0.8:
        ins.append(b.fresh(I64, ()))
    b.node("Trilu", ins, [(x.dt, x.shape)], upper=int(b.choice([0, 1])))


def op_mha(b):
    """com.microsoft.MultiHeadAttention as onnxruntime-genai's fp16 CPU export
    writes it: 3-D query, key and value (or 4-D key and value), an additive
    attention_bias, num_heads and sometimes a scale."""
    B, H = 1, int(b.choice([1, 2, 4]))
    S, L, D = int(b.choice([1, 2, 3])), int(b.choice([1, 2, 4, 5])), int(b.choice([2, 4, 8]))
    q = b.fresh(F32, (B, S, H * D))
    if b.rng.random() < 0.7:
        k, v = b.fresh(F32, (B, L, H * D)), b.fresh(F32, (B, L, H * D))
    else:
        k, v = b.fresh(F32, (B, H, L, D)), b.fresh(F32, (B, H, L, D))
    ins = [q, k, v]
    if b.rng.random() < 0.5:
        ins += [None, None, b.fresh(F32, b.choice([(1, 1, S, L), (B, H, S, L), (B, 1, S, L)]))]
    attrs = {"num_heads": H}
    if b.rng.random() < 0.3:
        attrs["scale"] = float(b.choice([0.1, 1.0, 0.5]))
    b.node("MultiHeadAttention", ins, [(F32, (B, S, H * D))], domain="com.microsoft", **attrs)
    b.ms = True


def op_range(b):
    dt = b.choice([I32, I64, F32, I64])
    if dt in INTS:
        st, delta = int(b.rng.integers(-10, 10)), int(b.choice([1, 2, 3, -1, -3]))
        lim = st + delta * int(b.rng.integers(-1, 12))
        n = max(0, -(-(lim - st) // delta))
    else:
        st, delta = float(b.rng.integers(-20, 20)) / 4, float(b.choice([0.5, 1.0, -0.25, 0.3]))
        lim = st + delta * float(b.rng.integers(0, 40)) / 3
        n = max(0, int(np.ceil((np.float32(lim) - np.float32(st)) / np.float32(delta))))
    ins = [b.const(np.array(v, NP[dt]), dt) for v in (st, lim, delta)]
    b.node("Range", ins, [(dt, (n,))])


def op_constant(b):
    dt = b.choice([F32, I64, I32, BOOL, F64])
    s = b.shape(int(b.choice([0, 1, 2])))
    v = values(b.rng, dt, s)
    t = Tensor(b.name("c"), dt, s, "node")
    form = b.rng.random()
    if dt == F32 and s == () and form < 0.3:
        attrs = {"value_float": float(v)}
    elif dt == I64 and s == () and form < 0.3:
        attrs = {"value_int": int(v)}
    elif dt == F32 and len(s) == 1 and form < 0.3 and b.opset >= 12:
        attrs = {"value_floats": [float(a) for a in v]}
    elif dt == I64 and len(s) == 1 and form < 0.3 and b.opset >= 12:
        attrs = {"value_ints": [int(a) for a in v]}
    else:
        attrs = {"value": numpy_helper.from_array(v, t.name)}
    b.nodes.append(helper.make_node("Constant", [], [t.name], name=b.name("Constant"), **attrs))
    b.pool.append(t)
    b.all[t.name] = t


def norm_operands(b, x, axis, exact):
    """A scale (or bias) for a norm over x's axes from axis: the normalised
    shape, or (exact False) a shape that broadcasts to it."""
    ns = x.shape[axis:]
    if exact or b.rng.random() < 0.8:
        return ns
    return tuple(b.choice([1, d]) for d in ns)[int(b.rng.integers(0, len(ns))):]


def op_layernorm(b):
    x = operand(b, (F32,), rank=int(b.choice([1, 2, 3, 4])))
    ax = int(b.rng.integers(-x.rank, x.rank))
    a = ax % x.rank
    if 0 in x.shape[a:]:
        raise Skip()   # onnxruntime refuses to normalise nothing
    ins = [x, operand(b, (F32,), norm_operands(b, x, a, False))]
    if b.rng.random() < 0.6:
        ins.append(operand(b, (F32,), norm_operands(b, x, a, False)))
    attrs = {"axis": ax} if ax != -1 or b.rng.random() < 0.5 else {}
    if b.rng.random() < 0.5:
        attrs["epsilon"] = float(b.choice([1e-5, 1e-6, 0.1, 0.0]))
    stat = tuple(d if i < a else 1 for i, d in enumerate(x.shape))
    nout = int(b.choice([1, 1, 2, 3]))
    b.node("LayerNormalization", ins, [(F32, x.shape)] + [(F32, stat)] * (nout - 1), **attrs)


def op_rmsnorm(b):
    x = operand(b, (F32,), rank=int(b.choice([1, 2, 3, 4])))
    ax = int(b.rng.integers(-x.rank, x.rank))
    if 0 in x.shape[ax % x.rank:]:
        raise Skip()
    s = operand(b, (F32,), norm_operands(b, x, ax % x.rank, False))
    attrs = {"axis": ax} if ax != -1 or b.rng.random() < 0.5 else {}
    if b.rng.random() < 0.5:
        attrs["epsilon"] = float(b.choice([1e-5, 1e-6, 0.1, 0.0]))
    b.node("RMSNormalization", [x, s], [(F32, x.shape)], **attrs)


def op_simplified_ln(b):
    x = operand(b, (F32,), rank=int(b.choice([1, 2, 3])))
    s = operand(b, (F32,), x.shape[-1:])
    attrs = {"epsilon": float(b.choice([1e-5, 1e-6, 0.1]))} if b.rng.random() < 0.5 else {}
    b.node("SimplifiedLayerNormalization", [x, s], [(F32, x.shape)], axis=-1, **attrs)


def op_skip_simplified_ln(b):
    x = operand(b, (F32,), rank=int(b.choice([2, 3])))
    h = x.shape[-1]
    ins = [x, operand(b, (F32,), x.shape), operand(b, (F32,), (h,))]
    if b.rng.random() < 0.4:
        ins.append(operand(b, (F32,), (h,)))
    stat = x.shape[:-1] + (1,)
    nout = int(b.choice([1, 1, 4]))
    outs = [(F32, x.shape)] + ([(F32, stat), (F32, stat), (F32, x.shape)] if nout == 4 else [])
    attrs = {"epsilon": float(b.choice([1e-5, 1e-6, 0.1]))} if b.rng.random() < 0.5 else {}
    ts = b.node("SkipSimplifiedLayerNormalization", ins, outs, domain="com.microsoft", **attrs)
    b.ms = True
    if nout == 4:
        # output 1 (the mean) is undefined for the RMS form: nothing may read it
        b.pool.remove(ts[1])
        b.nodes[-1].output[1] = ""


def out_of_range(b):
    """Now and then an index past its table, given on purpose: onnxruntime
    refuses it at run time, and mkc must refuse it too (with a sentence),
    not read past the table."""
    if b.rng.random() < 0.1:
        b.bad = len(b.nodes)   # the node about to be added
        return True
    return False


def rotary_caches(b, rows, half, position_ids):
    """cos and sin of random angles: [rows, half], or [B, S, half] (no ids)."""
    ang = b.rng.uniform(-4, 4, rows + (half,)).astype(np.float32)
    kind = b.choice(["input", "init"])
    return (b.add_value(F32, rows + (half,), kind, np.cos(ang)),
            b.add_value(F32, rows + (half,), kind, np.sin(ang)))


def op_rotary(b):
    B, H, S, D = b.dim() or 1, int(b.choice([1, 2, 3])), int(b.choice([1, 2, 3, 5])), int(b.choice([2, 4, 6, 8, 16]))
    rot = int(b.choice([0, 0, D, max(2, D // 2) // 2 * 2]))
    r = rot or D
    three = b.rng.random() < 0.4
    x = b.fresh(F32, (B, S, H * D) if three else (B, H, S, D))
    attrs = {"interleaved": int(b.rng.integers(0, 2))}
    if three:
        attrs["num_heads"] = H
    if rot:
        attrs["rotary_embedding_dim"] = rot
    if b.rng.random() < 0.5:
        P = S + int(b.rng.integers(0, 4))
        cos, sin = rotary_caches(b, (P,), r // 2, True)
        pv = b.rng.integers(0, P, (B, S))
        if out_of_range(b):
            pv.flat[int(b.rng.integers(0, pv.size))] = b.choice([P, P + 5, -1])
        pos = b.add_value(I64, (B, S), b.choice(["input", "init"]), pv, "index")
        ins = [x, cos, sin, pos]
    else:
        cos, sin = rotary_caches(b, (B, S), r // 2, False)
        ins = [x, cos, sin]
    b.node("RotaryEmbedding", ins, [(F32, x.shape)], **attrs)


def op_ms_rotary(b):
    B, H, S, D = b.dim() or 1, int(b.choice([1, 2, 3])), int(b.choice([1, 2, 3, 5])), int(b.choice([2, 4, 8, 16]))
    x = b.fresh(F32, (B, S, H * D))
    P = S + int(b.rng.integers(0, 4))
    cos, sin = rotary_caches(b, (P,), D // 2, True)
    if b.rng.random() < 0.5:
        pv = b.rng.integers(0, P - S + 1, (B, 1)) + np.arange(S)
    else:
        pv = b.rng.integers(0, P - S + 1, (1,))
    if out_of_range(b):
        pv.flat[int(b.rng.integers(0, pv.size))] = b.choice([P, P + 5, -1])
    pos = b.add_value(I64, pv.shape, "input", pv, "index")
    attrs = {"interleaved": int(b.rng.integers(0, 2)), "num_heads": H}
    b.node("RotaryEmbedding", [x, pos, cos, sin], [(F32, x.shape)], domain="com.microsoft", **attrs)
    b.ms = True


def op_attention(b):
    B, Hk = b.dim() or 1, int(b.choice([1, 2]))
    Hq = Hk * int(b.choice([1, 2]))
    S, L, D = int(b.choice([1, 2, 3])), int(b.choice([1, 2, 4, 7])), int(b.choice([2, 4, 8]))
    Dv = D if b.rng.random() < 0.7 else int(b.choice([2, 4, 8]))
    P = int(b.choice([0, 0, 1, 3]))
    three = b.rng.random() < 0.3
    attrs = {}
    if three:
        q = b.fresh(F32, (B, S, Hq * D))
        k = b.fresh(F32, (B, L, Hk * D))
        v = b.fresh(F32, (B, L, Hk * Dv))
        attrs.update(q_num_heads=Hq, kv_num_heads=Hk)
    else:
        q, k, v = b.fresh(F32, (B, Hq, S, D)), b.fresh(F32, (B, Hk, L, D)), b.fresh(F32, (B, Hk, L, Dv))
    ins = [q, k, v]
    T = L + P
    if b.rng.random() < 0.4 or P:
        if b.rng.random() < 0.5:
            # onnxruntime takes masks of 2 to 4 dimensions
            ms = b.choice([(S, T), (1, 1, S, T), (B, 1, S, T), (B, Hq, S, T), (1, S, T)])
            mt = b.choice([F32, BOOL])
            m = b.fresh(mt, ms)
            if mt == BOOL:   # every row keeps a position: a row all masked is 0/0
                m.value[..., 0] = True
            ins.append(m)
        else:
            ins.append(None)
    if P:
        ins += [b.fresh(F32, (B, Hk, P, D)), b.fresh(F32, (B, Hk, P, Dv))]
    if b.rng.random() < 0.3:
        attrs["scale"] = float(b.choice([0.1, 1.0, 0.5]))
    if b.rng.random() < 0.15:
        attrs["softcap"] = float(b.choice([1.0, 30.0]))
    y = (B, S, Hq * Dv) if three else (B, Hq, S, Dv)
    outs = [(F32, y)]
    if P:   # onnxruntime's kernel wants the present outputs whenever a past is given
        outs += [(F32, (B, Hk, T, D)), (F32, (B, Hk, T, Dv))]
    b.node("Attention", ins, outs, **attrs)


def op_gqa(b):
    B, Hk = 1, int(b.choice([1, 2]))
    Hq = Hk * int(b.choice([1, 2, 4]))
    # onnxruntime's CPU kernel takes head sizes that are multiples of 16
    D, P = int(b.choice([16, 32])), int(b.choice([0, 1, 3, 6]))
    S = 1 if P else int(b.choice([1, 2, 3]))
    q, k, v = b.fresh(F32, (B, S, Hq * D)), b.fresh(F32, (B, S, Hk * D)), b.fresh(F32, (B, S, Hk * D))
    pk, pv = b.fresh(F32, (B, Hk, P, D)), b.fresh(F32, (B, Hk, P, D))
    # seqlens_k is the last valid position: P + S - 1 for a past that is
    # not padded; less is a right-padded past, which onnxruntime takes
    sl = P + S - 1 if b.rng.random() < 0.85 or P == 0 else int(b.rng.integers(S - 1, P + S - 1))
    seql = b.add_value(I32, (B,), "input", np.full(B, sl), "index")
    total = b.add_value(I32, (), "input", np.array(P + S), "index")
    ins = [q, k, v, pk, pv, seql, total]
    attrs = {"num_heads": Hq, "kv_num_heads": Hk}
    if b.rng.random() < 0.4:
        cos, sin = rotary_caches(b, (P + S + int(b.rng.integers(0, 3)),), D // 2, True)
        ins += [cos, sin]
        attrs["do_rotary"] = 1
        attrs["rotary_interleaved"] = int(b.rng.integers(0, 2))
    if b.rng.random() < 0.2:
        attrs["softcap"] = float(b.choice([1.0, 30.0]))
    if b.rng.random() < 0.2:
        attrs["scale"] = float(b.choice([0.1, 1.0]))
    b.node("GroupQueryAttention", ins, [(F32, (B, S, Hq * D)), (F32, (B, Hk, P + S, D)),
                                         (F32, (B, Hk, P + S, D))], domain="com.microsoft", **attrs)
    b.ms = True


# The decomposed forms mkc's canon and fuse passes rewrite into one op
# (passes/canon.c, passes/fuse.c): random graphs seldom spell them, and a
# rewrite must keep the graph's answer, special values included.

def scalar_const(b, v):
    t = b.add_value(F32, (), b.choice(["init", "const"]), np.array(v, np.float32))
    b.pool.remove(t)
    return t


def pat_swiglu(b):
    g = operand(b, (F32,))
    (s,) = b.node("Sigmoid", [g], [(F32, g.shape)])
    (y,) = b.node("Mul", [g, s] if b.rng.random() < 0.5 else [s, g], [(F32, g.shape)])
    if b.rng.random() < 0.6:
        u = b.pick(lambda t: t.dt == F32 and _bc(t.shape, g.shape) and
                   bshape(t.shape, g.shape) == g.shape, lambda: b.fresh(F32, g.shape))
        b.node("Mul", [y, u] if b.rng.random() < 0.5 else [u, y], [(F32, g.shape)])


def pat_rmsnorm(b):
    x = operand(b, (F32,), rank=int(b.choice([1, 2, 3])))
    if 0 in x.shape:
        raise Skip()
    h = x.shape[-1]
    if b.rng.random() < 0.5:
        (p,) = b.node("Pow", [x, scalar_const(b, 2.0)], [(F32, x.shape)])
    else:
        (p,) = b.node("Mul", [x, x], [(F32, x.shape)])
    red = x.shape[:-1] + (1,)
    if b.opset >= 18:
        (m,) = b.node("ReduceMean", [p, b.const(np.array([-1], np.int64))], [(F32, red)])
    else:
        (m,) = b.node("ReduceMean", [p], [(F32, red)], axes=[-1])
    eps = scalar_const(b, float(b.choice([1e-5, 1e-6, 0.0])))
    (a,) = b.node("Add", [m, eps] if b.rng.random() < 0.5 else [eps, m], [(F32, red)])
    (r,) = b.node("Sqrt", [a], [(F32, red)])
    form = b.rng.random()
    if form < 0.4:
        (n,) = b.node("Div", [x, r], [(F32, x.shape)])
    else:
        if form < 0.7:
            (inv,) = b.node("Reciprocal", [r], [(F32, red)])
        else:
            (inv,) = b.node("Div", [scalar_const(b, 1.0), r], [(F32, red)])
        (n,) = b.node("Mul", [x, inv] if b.rng.random() < 0.5 else [inv, x], [(F32, x.shape)])
    w = b.fresh(F32, b.choice([(h,), (1,)]), kind=b.choice(["init", "input"]))
    b.node("Mul", [w, n] if b.rng.random() < 0.5 else [n, w], [(F32, x.shape)])


def pat_attention(b):
    B, H, S, L, D = b.dim() or 1, int(b.choice([1, 2])), int(b.choice([1, 2, 3])), \
        int(b.choice([1, 2, 5])), int(b.choice([2, 4, 8]))
    Dv = D if b.rng.random() < 0.7 else int(b.choice([2, 4]))
    q, k, v = b.fresh(F32, (B, H, S, D)), b.fresh(F32, (B, H, L, D)), b.fresh(F32, (B, H, L, Dv))
    if b.rng.random() < 0.5:
        sc = scalar_const(b, float(b.choice([0.5, 0.35355339, 2.0])))
        (q,) = b.node("Mul", [q, sc] if b.rng.random() < 0.5 else [sc, q], [(F32, q.shape)])
    (kt,) = b.node("Transpose", [k], [(F32, (B, H, D, L))], perm=[0, 1, 3, 2])
    if b.rng.random() < 0.3:
        (kt,) = b.node("Div", [kt, scalar_const(b, float(b.choice([2.0, 8.0])))],
                       [(F32, kt.shape)])
    (s,) = b.node("MatMul", [q, kt], [(F32, (B, H, S, L))])
    guard = b.rng.random() < 0.6
    if guard and b.rng.random() < 0.6:
        if b.rng.random() < 0.5:
            c = b.fresh(BOOL, (B, 1, S, L))
            (m,) = b.node("Where", [c, scalar_const(b, 0.0), scalar_const(b, -np.inf)],
                          [(F32, c.shape)])
        else:
            m = b.fresh(F32, b.choice([(B, 1, S, L), (1, 1, S, L), (S, L)]))
        (s,) = b.node("Add", [s, m] if b.rng.random() < 0.5 else [m, s], [(F32, s.shape)])
    (p,) = b.node("Softmax", [s], [(F32, s.shape)], axis=-1)
    if guard:
        (nan,) = b.node("IsNaN", [p], [(BOOL, p.shape)])
        (p,) = b.node("Where", [nan, scalar_const(b, 0.0), p], [(F32, p.shape)])
    b.node("MatMul", [p, v], [(F32, (B, H, S, Dv))])


def pat_residual(b):
    m, k, n = b.dim() or 1, int(b.choice([2, 8, 33])), b.dim() or 1
    a = operand(b, (F32,), (m, k))
    w = b.fresh(F32, (k, n), kind="init")
    (y,) = b.node("Gemm", [a, w], [(F32, (m, n))])
    r = b.pick(lambda t: t.dt == F32 and t.shape == (m, n), lambda: b.fresh(F32, (m, n)))
    b.node("Add", [r, y] if b.rng.random() < 0.5 else [y, r], [(F32, (m, n))])


def pat_norm_products(b):
    h, n = int(b.choice([2, 4, 8, 16])), int(b.choice([1, 3, 8]))
    x = b.fresh(F32, (1, h) if b.rng.random() < 0.7 else (1, 1, h))
    sc = b.fresh(F32, (h,), kind="init")
    if b.opset >= 23 and b.rng.random() < 0.7:
        (y,) = b.node("RMSNormalization", [x, sc], [(F32, x.shape)], axis=-1)
    else:
        (y,) = b.node("SimplifiedLayerNormalization", [x, sc], [(F32, x.shape)], axis=-1)
    outs = []
    for _ in range(int(b.choice([1, 2, 2, 3]))):
        w = b.fresh(F32, (h, n), kind="init")
        if x.rank == 2 and b.rng.random() < 0.5:
            (o,) = b.node("Gemm", [y, w], [(F32, (1, n))])
        else:
            (o,) = b.node("MatMul", [y, w], [(F32, x.shape[:-1] + (n,))])
        outs.append(o)
    if len(outs) >= 2 and b.rng.random() < 0.7:
        g, u = outs[0], outs[1]
        (sg,) = b.node("Sigmoid", [g], [(F32, g.shape)])
        (sl,) = b.node("Mul", [g, sg], [(F32, g.shape)])
        b.node("Mul", [sl, u], [(F32, g.shape)])


PATTERNS = {"pattern.SwiGLU": (2, 1, pat_swiglu), "pattern.RMSNorm": (2, 1, pat_rmsnorm),
            "pattern.Attention": (2, 13, pat_attention), "pattern.residual": (1, 1, pat_residual),
            "pattern.NormProducts": (2, 1, pat_norm_products)}


# op -> (weight, first opset, maker). Every op of ir/ops.def read from a
# model is here (a test checks it), so a new row there needs a maker here.
OPS = {
    **{op: (2, 1, op_unary(op)) for op in UNARY},
    "Not": (1, 1, op_not), "IsNaN": (1, 9, op_isnan),
    "Cast": (3, 1, op_cast), "CastLike": (1, 15, lambda b: op_cast(b, like=True)),
    **{op: (3, 1, op_binary(op, ARITH)) for op in ("Add", "Sub", "Mul", "Div")},
    "Pow": (3, 1, op_pow),
    "Max": (3, 1, op_variadic("Max")), "Min": (3, 1, op_variadic("Min")),
    **{op: (2, 1, op_binary(op, CMP, True))
       for op in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")},
    "And": (1, 1, op_binary("And", (BOOL,), True)), "Or": (1, 1, op_binary("Or", (BOOL,), True)),
    "Where": (2, 9, op_where),
    "MatMul": (3, 1, op_matmul), "Gemm": (2, 1, op_gemm), "Softmax": (2, 1, op_softmax),
    **{op: (2, 1, op_reduce(op)) for op in REDUCE_TYPES},
    "Constant": (1, 1, op_constant), "Shape": (1, 1, op_shape), "Size": (1, 1, op_size),
    "ConstantOfShape": (1, 9, op_constant_of_shape), "Reshape": (2, 5, op_reshape),
    "Flatten": (1, 1, op_flatten), "Unsqueeze": (1, 1, op_unsqueeze), "Squeeze": (1, 1, op_squeeze),
    "Transpose": (2, 1, op_transpose), "Concat": (2, 4, op_concat), "Split": (2, 2, op_split),
    "Slice": (2, 10, op_slice), "Gather": (2, 1, op_gather), "Expand": (2, 8, op_expand),
    "Range": (1, 11, op_range),
    "LayerNormalization": (2, 17, op_layernorm), "RMSNormalization": (2, 23, op_rmsnorm),
    "RotaryEmbedding": (2, 23, op_rotary), "Attention": (2, 23, op_attention),
    "SimplifiedLayerNormalization": (1, 1, op_simplified_ln),
    "com.microsoft.SkipSimplifiedLayerNormalization": (1, 1, op_skip_simplified_ln),
    "com.microsoft.RotaryEmbedding": (1, 1, op_ms_rotary),
    "com.microsoft.GroupQueryAttention": (1, 1, op_gqa),
    "com.microsoft.MultiHeadAttention": (1, 1, op_mha),
    "Tile": (1, 6, op_tile), "Trilu": (1, 14, op_trilu),
    **PATTERNS,
}

OPSETS = [(11, 1), (13, 2), (17, 1), (18, 2), (21, 1), (23, 7)]


class Case:
    """A graph with its inputs' values, as mkc test will see it."""

    def __init__(self, b, outputs, args, sym):
        self.b, self.outputs, self.args, self.sym = b, outputs, args, sym
        self.nodes, self.inputs, self.inits = b.nodes, b.inputs, b.inits
        self.opset, self.ms = b.opset, b.ms


def weighted(rng, items, weights):
    w = np.asarray(weights, float)
    return items[int(rng.choice(len(items), p=w / w.sum()))]


def make_case(seed, index):
    """Graph index of run seed: the same graph on every machine."""
    rng = np.random.default_rng([seed, index])
    opset = weighted(rng, [o for o, _ in OPSETS], [w for _, w in OPSETS])
    b = Builder(rng, opset)
    names = [k for k, (w, first, _) in OPS.items()
             if first <= opset and (not k.startswith("com.") or opset >= 13)]
    # a pattern counts as one node of the graph's few
    want, made, tries = int(rng.integers(1, 6)), 0, 0
    while made < want and tries < 60:
        tries += 1
        op = weighted(rng, names, [OPS[k][0] for k in names])
        saved = (len(b.nodes), list(b.pool), len(b.inputs), len(b.inits), b.ms, b.bind_consts,
                 b.bad)
        try:
            OPS[op][2](b)
            made += 1
        except Skip:
            b.nodes[saved[0]:] = []
            b.pool[:] = saved[1]
            b.inputs[saved[2]:] = []
            b.inits[saved[3]:] = []
            b.ms, b.bind_consts, b.bad = saved[4], saved[5], saved[6]
    read = {i for n in b.nodes for i in n.input}
    made_here = [t for t in b.pool if t.kind == "node"]
    outs = [t for t in made_here if t.name not in read or rng.random() < 0.2]
    if not outs:
        return None
    args = []
    if rng.random() < 0.25:
        args += ["--workers", str(int(rng.choice([1, 2, 3, 5, 16])))]
    if rng.random() < 0.15:
        args += ["--no-fuse"]
    if rng.random() < 0.15:
        args += ["--no-reuse"]
    if rng.random() < 0.15:
        args += ["--shuffle", str(int(rng.integers(1, 1000))), "--threads", str(int(rng.choice([2, 3])))]
    if b.bind_consts:
        args += ["--bind-consts"]
    # now and then a dimension of the inputs becomes a symbol (its value
    # comes from the input files at run time, as a sequence length does)
    sym = None
    dims = sorted({d for t in b.inputs if t.role != "const" for d in t.shape if d > 1})
    if dims and rng.random() < 0.15:
        sym = int(rng.choice(dims))
        # the arena is sized for N at --max-dim (4096 by default): an input
        # of N x N x N would want 256 GiB, more than this machine has
        if max(t.shape.count(sym) for t in b.inputs if t.role != "const") >= 3:
            args += ["--max-dim", "64"]
    return Case(b, outs, args, sym)


def vinfo(t, sym=None, unknown=False):
    """t's type; with sym, its dimensions of that size are the symbol N (an
    input's) or unknown (unknown: an output's every dimension, since what
    mkc makes of N + 3 is not 6)."""
    if t.role == "const":
        sym = None   # bound at compile time by --bind-consts: no symbol of its own
    if unknown and sym is not None:
        return helper.make_tensor_value_info(t.name, t.dt, [None] * t.rank)
    shape = ["N" if d == sym else d for d in t.shape]
    return helper.make_tensor_value_info(t.name, t.dt, shape)


def model_of(case, outputs, symbolic):
    """The ONNX model of case with these outputs; symbolic: the inputs' dims
    equal to case.sym become the symbol N (outputs' such dims unknown)."""
    sym = case.sym if symbolic else None
    g = helper.make_graph(list(case.nodes), "difftest",
                          [vinfo(t, sym) for t in case.inputs],
                          [vinfo(t, sym, unknown=True) for t in outputs],
                          [numpy_helper.from_array(t.value, t.name) for t in case.inits])
    ops = [helper.make_opsetid("", case.opset)]
    if case.ms:
        ops.append(helper.make_opsetid("com.microsoft", 1))
    m = helper.make_model(g, opset_imports=ops, producer_name="mkc difftest")
    m.ir_version = min(m.ir_version, 10)
    return m


def check(m):
    """onnx.checker, full. SimplifiedLayerNormalization is onnxruntime's op
    in the default domain, which the checker does not know: it checks a
    copy with that op put in onnxruntime's own domain (not checked)."""
    c = onnx.ModelProto()
    c.CopyFrom(m)
    for n in c.graph.node:
        if n.op_type == "SimplifiedLayerNormalization":
            n.domain = "com.microsoft"
    if not any(o.domain == "com.microsoft" for o in c.opset_import):
        c.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.checker.check_model(c, full_check=True)


def ort_run(m, feeds):
    so = ort.SessionOptions()
    # the reference computes each op as written: no fusions of its own
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


class Undefined(Exception):
    """The graph computes something ONNX leaves undefined."""


def undefined(case, vals):
    """Raises Undefined where a node's values leave ONNX's result undefined
    (or where onnxruntime computes in double what must be exact)."""
    for n in case.nodes:
        ins = [vals.get(i) if i else None for i in n.input]
        if n.op_type in ("Cast", "CastLike"):
            to = ([a.i for a in n.attribute if a.name == "to"] or [None])[0]
            to = to if n.op_type == "Cast" else np.asarray(ins[1]).dtype
            x = np.asarray(ins[0])
            if x.dtype.kind == "f" and to is not None:
                npt = np.dtype(NP[to]) if isinstance(to, int) else to
                if npt.kind in "iu":
                    info = np.iinfo(npt)
                    t = np.trunc(x.astype(np.float64))
                    if not np.all(np.isfinite(t)) or t.min(initial=0) < info.min or \
                       t.max(initial=0) > info.max:
                        raise Undefined(f"Cast of {x.dtype} to {npt}: a value it cannot hold")
        if n.op_type == "Pow" and np.asarray(ins[0]).dtype.kind in "iu":
            a, e = np.broadcast_arrays(np.asarray(ins[0]).astype(np.float64),
                                       np.asarray(ins[1]).astype(np.float64))
            with np.errstate(all="ignore"):
                r = np.power(a, e)
            info = np.iinfo(np.asarray(ins[0]).dtype)
            if not np.all(np.isfinite(r)) or np.any(np.abs(r) >= 2.0**53) or \
               r.min(initial=0) < info.min or r.max(initial=0) > info.max:
                raise Undefined("integer Pow: a result that does not fit (onnxruntime goes "
                                "through double)")
        if n.op_type in ("ReduceSum", "ReduceMean") and np.asarray(ins[0]).dtype.kind in "iu":
            x = np.asarray(ins[0]).astype(np.float64)
            top = float(np.iinfo(np.asarray(ins[0]).dtype).max)
            # seen: onnxruntime's int32 sums past the type saturate, mkc's wrap
            if x.size and np.abs(x).max() * x.size >= min(2.0**53, top):
                # seen: onnxruntime's int64 ReduceSum of INT64_MAX, -2 and 1 is INT64_MAX
                raise Undefined(f"integer {n.op_type}: a sum past 2^53 or the type (onnxruntime "
                                "goes through double)")
        if n.op_type == "GroupQueryAttention" and \
           any(not np.all(np.isfinite(np.asarray(v))) for v in ins[:5] if v is not None):
            # onnxruntime's kernel is this op's only definition, and it treats
            # masked positions two ways: an inf key there is left out, a NaN
            # value there reaches every query (weight 0 times NaN)
            raise Undefined("GroupQueryAttention of non-finite values")
        if n.op_type == "ReduceMax" and _has_nan(ins[0]) and \
           not same_nans(vals[n.output[0]], numpy_reduce_max(n, ins)):
            # onnxruntime keeps a NaN only where it comes first in its row
            raise Undefined("ReduceMax of a NaN after the first element of its row, which "
                            "onnxruntime drops")
        bound = sum_bound(n, ins)
        if bound >= 1e37:
            raise Undefined(f"{n.op_type}: float32 overflow inside a sum ({bound:.2g}), whose "
                            f"result (inf or NaN) depends on the order of the sum")
        if n.op_type in ("Neg", "Abs") and np.asarray(ins[0]).dtype == np.int64 and \
           np.any(np.asarray(ins[0]) == np.iinfo(np.int64).min):
            raise Undefined(f"{n.op_type} of INT64_MIN")


def numpy_reduce_max(n, ins):
    """ReduceMax as numpy's max computes it (NaN anywhere gives NaN)."""
    x = np.asarray(ins[0])
    axes = _attr(n, "axes")
    if axes is None and len(ins) > 1 and ins[1] is not None:
        axes = [int(a) for a in np.asarray(ins[1]).ravel()]
    if not axes:
        axes = None if not _attr(n, "noop_with_empty_axes", 0) else []
    if axes == []:
        return x
    return np.max(x, axis=tuple(a % x.ndim for a in axes) if axes is not None else None,
                  keepdims=bool(_attr(n, "keepdims", 1)))


def same_nans(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all(np.isnan(a) == np.isnan(b)))


def _maxabs(v):
    v = np.asarray(v) if v is not None else np.zeros(0)
    if v.dtype.kind != "f" or v.size == 0:
        return 0.0
    f = np.abs(v[np.isfinite(v)].astype(np.float64))
    return float(f.max(initial=0.0))


def sum_bound(n, ins):
    """A bound on the magnitude of the partial sums (and products) a node
    of an op that sums computes from its finite inputs. Past float32's
    range, a sum may meet inf and -inf in one order and not in another:
    onnxruntime's blocked kernels and mkc's loops then differ, and both
    are right."""
    op, m = n.op_type, [_maxabs(v) for v in ins]
    x = np.asarray(ins[0]) if ins and ins[0] is not None else np.zeros(0)
    if op in ("MatMul", "Gemm"):
        a = np.asarray(ins[0])
        k = a.shape[0 if op == "Gemm" and any(t.name == "transA" and t.i for t in n.attribute)
                    else -1] if a.ndim else 1
        alpha = max([abs(t.f) for t in n.attribute if t.name == "alpha"] or [1.0])
        beta = max([abs(t.f) for t in n.attribute if t.name == "beta"] or [1.0])
        return m[0] * m[1] * max(k, 1) * max(alpha, 1.0) + (m[2] * beta if len(m) > 2 else 0)
    if op in ("ReduceSum", "ReduceMean"):
        return m[0] * max(x.size, 1)
    if op in ("LayerNormalization", "RMSNormalization", "SimplifiedLayerNormalization",
              "SkipSimplifiedLayerNormalization"):
        big = sum(m[:2]) if op.startswith("Skip") else m[0]
        return max(big * big, big) * max(x.size, 1) * max(m[1:] + [1.0])
    if op in ("Attention", "GroupQueryAttention"):
        # the keys and values the scores sum over include the past ones
        # (Attention's inputs 4 and 5, GroupQueryAttention's 3 and 4)
        pk = 4 if op == "Attention" else 3
        k = max(m[1], m[pk] if len(m) > pk else 0.0)
        v = max(m[2], m[pk + 1] if len(m) > pk + 1 else 0.0)
        return m[0] * k * max(x.shape[-1] if x.ndim else 1, 1) + v * max(x.size, 1)
    return 0.0


def write_tensor(path, v, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.asarray(v), name).SerializeToString())


def write_case(d, m, inputs, outputs, args, note):
    """A folder mkc test reads: model.onnx, test_data_set_0/, args.txt."""
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for k, (name, v) in enumerate(inputs):
        write_tensor(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), v, name)
    for k, (name, v) in enumerate(outputs):
        write_tensor(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), v, name)
    with open(os.path.join(d, "args.txt"), "w") as f:
        f.write(" ".join(args) + "\n")
    if note:
        with open(os.path.join(d, "note.txt"), "w") as f:
            f.write(note.rstrip() + "\n")


def repro(mkc, d):
    args = open(os.path.join(d, "args.txt")).read().split()
    return " ".join([os.path.relpath(mkc, ROOT) if mkc.startswith(ROOT) else mkc, "test"] +
                    args + [os.path.relpath(d, ROOT) if d.startswith(ROOT) else d])


# ---------------------------------------------------------------------------
# Running mkc test

class Outcome:
    def __init__(self, kind, msg="", folded=False):
        self.kind, self.msg, self.folded = kind, msg, folded   # pass, refused, fail
        self.got = None

    def __repr__(self):
        return f"{self.kind}: {self.msg}"


TIMEOUT = 120


def run_mkc(mkc, d, scratch, elementwise=True):
    """mkc test on folder d, then this tool's own comparison of each
    element; the Outcome holds mkc's outputs of the first step (got)."""
    args = open(os.path.join(d, "args.txt")).read().split()
    env = dict(os.environ, TMPDIR=scratch)
    # no debug information in the emitted code's build: a sixth of its time
    env.setdefault("MKC_TEST_CFLAGS", "-g0")
    try:
        p = subprocess.run([mkc, "test", "--keep"] + args + [d], capture_output=True, text=True,
                           timeout=TIMEOUT, env=env, errors="replace")
    except subprocess.TimeoutExpired:
        return Outcome("fail", f"hang: mkc test ran past {TIMEOUT} s")
    kept = re.findall(r"mkc: kept (\S+)", p.stderr)
    try:
        refs = references(d)
        got = outputs_of(kept[0], refs) if kept else None
        o = judge(p, d, kept[0] if kept else None)
        if o.kind == "pass" and elementwise and got:
            bad = compare_elements(refs, got)
            if bad:
                o = Outcome("fail", "wrong answer (element by element): " + bad)
        o.got = got
        return o
    finally:
        for k in kept:
            shutil.rmtree(k, ignore_errors=True)


def references(d):
    refs, k = [], 0
    while os.path.exists(os.path.join(d, "test_data_set_0", f"output_{k}.pb")):
        refs.append(numpy_helper.to_array(onnx.load_tensor(
            os.path.join(d, "test_data_set_0", f"output_{k}.pb"))))
        k += 1
    return refs


def outputs_of(kept, refs):
    """What the emitted code wrote for each output on its first step (None
    where there is no such file or it has not the reference's size)."""
    got = []
    for k, ref in enumerate(refs):
        path = os.path.join(kept, f"out{k}.0.bin")
        v = np.fromfile(path, dtype=ref.dtype) if os.path.exists(path) else None
        got.append(v.reshape(ref.shape) if v is not None and v.size == ref.size else None)
    return got if any(g is not None for g in got) else None


def judge(p, d, kept):
    out = p.stdout
    if p.returncode not in (0, 1) or not re.search(r"^\d+ passed, \d+ failed$", out, re.M):
        return Outcome("fail", f"crash: mkc test exited with status {p.returncode}: "
                       f"{(p.stderr or out).strip()[-400:]}")
    m = re.search(r"^FAIL (\S+?): (.*)$", out, re.M)
    if not m:
        if not re.search(r"^PASS ", out, re.M):
            return Outcome("fail", "mkc test printed no result")
        return Outcome("pass", folded="(folded:" in out)
    where, msg = m.group(1), m.group(2)
    rest = out[m.end():].split("\n")
    if where.rstrip("/") == d.rstrip("/"):
        # compiling failed: a refusal if mkc said why in a sentence
        if msg.startswith("does not compile") or not re.search(r"model\.onnx: \S", msg):
            return Outcome("fail", "compile failed without a sentence: " + msg)
        if re.search(r"is declared .* but computed as", msg):
            # the checker's shape inference and onnxruntime agree with the declaration
            return Outcome("fail", "shape differs from ONNX's: " + msg)
        return Outcome("refused", msg)
    step = re.match(r"step \d+: (.*)", msg)
    if step:
        if "differs from step 0" in msg:
            return Outcome("fail", "race: " + msg)
        return Outcome("fail", "wrong answer: " + msg)
    if msg.startswith("the emitted code does not build"):
        log = open(os.path.join(kept, "build.log"), errors="replace").read() if kept else ""
        first = [line for line in log.splitlines() if "error" in line][:3]
        return Outcome("fail", "emitted code does not build: " + " | ".join(first)[:600])
    if msg.startswith("the run failed"):
        text = msg[len("the run failed: "):].strip()
        if "watchdog" in text:
            return Outcome("fail", "hang: " + text)
        if re.match(r"(step|decoy step) \d+: \S.*", text) and "Sanitizer" not in text:
            return Outcome("refused", "at run time: " + text)
        return Outcome("fail", "crash at run time: " + (text or "no message"))
    return Outcome("fail", "mkc test: " + msg + " ".join(rest[:1]))


def differ(ref, got):
    """Where got differs from ref: NaN where NaN, infinities equal, finite
    values within 1e-4 relative or 1e-6 absolute, plus 4 float32 ulps of
    the tensor's largest value: an element that cancels terms of about
    that size (LayerNormalization's bias can) keeps their rounding in
    mkc's float32 and onnxruntime's alike (seed 65190142's g43: -0.114624
    and -0.114606 where float64 gives -0.114614), while an element wrong
    beside a much larger one still shows; other types exactly."""
    if ref.dtype.kind != "f":
        return got != ref
    r, g = ref.astype(np.float64), got.astype(np.float64)
    fin = np.isfinite(r) & np.isfinite(g)
    bad = (np.isnan(r) != np.isnan(g)) | ((np.isinf(r) | np.isinf(g)) & ~fin & ~(r == g))
    big = float(np.abs(r[fin]).max()) if fin.any() else 0.0
    with np.errstate(all="ignore"):
        bad |= fin & (np.abs(r - g) > 1e-4 * np.abs(r) + 1e-6 + 4 * 2.0 ** -24 * big)
    return bad


def compare_elements(refs, got):
    """Each output element against the reference (differ): mkc test's
    relative L2 error over a whole tensor cannot see one element wrong
    beside a much larger one. Returns what differs, or ''."""
    for k, (ref, g) in enumerate(zip(refs, got)):
        if g is None:
            continue
        bad = differ(ref, g).ravel()
        if bad.any():
            i = int(np.argmax(bad))
            return f"output {k} [{i}] is {g.ravel()[i]!r}, the reference {ref.ravel()[i]!r} " \
                   f"({int(bad.sum())} of {bad.size} differ)"
    return ""


# ---------------------------------------------------------------------------
# One graph, start to end

class Result:
    def __init__(self, index, outcome, case=None, folder=None, reduced=None, known=None, note=""):
        self.index, self.outcome, self.case = index, outcome, case
        self.folder, self.reduced, self.known, self.note = folder, reduced, known, note


def probe(case):
    """onnxruntime's values of every tensor the nodes make, with the
    graph's inputs and initializers: name -> array."""
    outs = [case.b.all[o] for n in case.nodes for o in n.output if o]
    res = ort_run(model_of(case, outs, False), {t.name: t.value for t in case.inputs})
    vals = {t.name: t.value for t in case.inputs + case.inits}
    for t, v in zip(outs, res):
        vals[t.name] = v
    return vals


def const_mask():
    """op -> the inputs ir/ops.def says must be known at compile time."""
    masks = {}
    for line in open(os.path.join(ROOT, "ir/ops.def")):
        f = re.match(r'OP\(\w+, "(\w+)", "(.*?)",(.*)\)\s*$', line)
        if f:
            cols = [c.strip() for c in f.group(3).split(",")]
            key = (f.group(2) + "." if f.group(2) else "") + f.group(1)
            masks[key] = int(cols[7], 0)
    return masks


CONST_INPUTS = const_mask()


def node_key(n):
    return (n.domain + "." if n.domain else "") + n.op_type


def single_node(case, i, vals):
    """Node i alone: its inputs that nodes made become graph inputs holding
    onnxruntime's values (initializers where mkc needs them at compile
    time); the graph's own inputs and initializers stay what they were."""
    n = case.nodes[i]
    b = Builder(case.b.rng, case.opset)
    inputs, inits = [], []
    declared = {t.name: t for t in case.inputs + case.inits}
    mask = CONST_INPUTS.get(node_key(n), 0)
    for k, name in enumerate(n.input):
        if not name or any(t.name == name for t in inputs + inits):
            continue
        v = np.asarray(vals[name])
        t = declared.get(name)
        kind = t.kind if t else "init" if mask >> k & 1 else "input"
        if t is None and not mask >> k & 1 and any(c.output and c.output[0] == name and
                                                   c.op_type == "Constant" for c in case.nodes):
            kind = "init"   # a Constant node's value: folded as before
        nt = Tensor(name, onnx.helper.np_dtype_to_tensor_dtype(v.dtype), v.shape, kind, v)
        (inputs if kind == "input" else inits).append(nt)
    b.inputs, b.inits, b.nodes = inputs, inits, [n]
    b.ms = bool(n.domain)
    outs = []
    for o in n.output:
        if o:
            v = np.asarray(vals[o])
            outs.append(Tensor(o, onnx.helper.np_dtype_to_tensor_dtype(v.dtype), v.shape, "node"))
    c = Case(b, outs, case.args, case.sym if any(t.kind == "input" and case.sym in t.shape
                                                 for t in inputs) else None)
    return c


def cone(case, out):
    """The nodes out depends on, with the inputs they read."""
    need, nodes = {out.name}, []
    for n in reversed(case.nodes):
        if any(o in need for o in n.output):
            nodes.insert(0, n)
            need.update(i for i in n.input if i)
    b = Builder(case.b.rng, case.opset)
    b.all = case.b.all
    b.nodes = nodes
    b.inputs = [t for t in case.inputs if t.name in need]
    b.inits = [t for t in case.inits if t.name in need]
    b.ms = any(n.domain for n in nodes)
    return Case(b, [out], case.args, case.sym)


def materialise(case, d, vals, note=""):
    m = model_of(case, case.outputs, case.sym is not None)
    check(m)
    write_case(d, m, [(t.name, t.value) for t in case.inputs],
               [(t.name, vals[t.name]) for t in case.outputs], case.args, note)
    return m


def fewer_args(mkc, d, sub, scratch, kind):
    """Drops mkc test's options that the failure does not need."""
    path = os.path.join(d, "args.txt")
    args = open(path).read().split()
    groups = {"--workers": 2, "--shuffle": 4, "--no-fuse": 1, "--no-reuse": 1}
    for opt, n in groups.items():
        if opt in args:
            i = args.index(opt)
            fewer = args[:i] + args[i + n:]
            open(path, "w").write(" ".join(fewer) + "\n")
            o = run_mkc(mkc, d, scratch)
            if o.kind == "fail" and failure_class(o.msg) == kind:
                args = fewer
            else:
                open(path, "w").write(" ".join(args) + "\n")
    sub.args = args
    return sub


def failure_class(msg):
    """What kind of failure a message says (reducing keeps to one kind)."""
    return re.sub(r" \(element by element\)", "", msg.split(":")[0])


def reduce_failure(mkc, case, vals, d, scratch, kind):
    """The smallest graph that still fails: one node alone, else the cone
    of one output. Returns (folder, case, outcome) or Nones."""
    for i, n in enumerate(case.nodes):
        if n.op_type == "Constant":
            continue
        sub = single_node(case, i, vals)
        sd = os.path.join(d, "reduced")
        shutil.rmtree(sd, ignore_errors=True)
        try:
            materialise(sub, sd, vals)
        except Exception:
            continue
        ro = run_mkc(mkc, sd, scratch)
        if ro.kind == "fail" and failure_class(ro.msg) == kind:
            return sd, fewer_args(mkc, sd, sub, scratch, kind), ro
    if len(case.outputs) > 1:
        for out in case.outputs:
            sub = cone(case, out)
            sd = os.path.join(d, "reduced")
            shutil.rmtree(sd, ignore_errors=True)
            materialise(sub, sd, vals)
            ro = run_mkc(mkc, sd, scratch)
            if ro.kind == "fail" and failure_class(ro.msg) == kind:
                return sd, fewer_args(mkc, sd, sub, scratch, kind), ro
    shutil.rmtree(os.path.join(d, "reduced"), ignore_errors=True)
    return None, None, None


# ---------------------------------------------------------------------------
# Known defects: failures that issue 33's fixes are being made for. Each
# names a regression case in tests/diff/expected_failures.txt; a failure
# reduced to one node that a predicate matches counts as known, not as a
# failure of the run. When the fix lands, its cases pass, --replay says
# they pass unexpectedly, and the entry here goes with them.

def _has_nan(v):
    v = np.asarray(v) if v is not None else None
    return v is not None and v.dtype.kind == "f" and bool(np.isnan(v).any())




def _attr(n, name, default=None):
    for a in n.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default




def _float64(n, ins):
    moves = ("Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat",
             "Split", "Slice", "Gather", "Expand", "Shape", "Size", "Constant")
    return n.op_type not in moves and any(v is not None and np.asarray(v).dtype == np.float64
                                          for v in ins)


KNOWN = {
    "new-float64": ("float64 tensors are computed in float32 (neither refused nor exact)",
                    _float64),
    "new-uint64": ("uint64 values from 2^63 on are computed as negative int64",
                   lambda n, ins: any(v is not None and np.asarray(v).dtype == np.uint64 and
                                      bool(np.any(np.asarray(v) >= 2**63)) for v in ins)),
    "new-attention-nan": ("Attention drops a NaN score (a NaN query or key, inf * 0, a product "
                          "q k that overflows float32, a NaN or +inf in the additive mask) "
                          "instead of giving NaN",
                          lambda n, ins: (n.op_type == "Attention" and
                          (_nonfinite(ins[:3] + ins[4:]) or _attention_products_overflow(ins) or
                           _nan_or_posinf(ins[3:4]))) or
                          # MultiHeadAttention is Attention in mkc; its bias (input 5) too
                          (n.op_type == "MultiHeadAttention" and
                           (_nonfinite(ins[:3] + ins[5:]) or
                            _attention_products_overflow([_as_heads(n, v) for v in ins[:2]])))),
}


def _nonfinite(vs):
    """Whether a float value among vs (None: an input left out) holds a NaN or an inf."""
    return any(v is not None and np.asarray(v).dtype.kind == "f" and
               not np.all(np.isfinite(np.asarray(v))) for v in vs)


def _nan_or_posinf(vs):
    """Whether a float value among vs (an additive mask, whose -inf is an
    ordinary masked position) holds a NaN or a +inf."""
    return any(v is not None and np.asarray(v).dtype.kind == "f" and
               bool(np.any(np.isnan(np.asarray(v)) | np.isposinf(np.asarray(v)))) for v in vs)


def _as_heads(n, v):
    """A MultiHeadAttention input [B, S, N * H] as heads [B, N, S, H] (4-D as it is)."""
    v = np.asarray(v)
    if v.ndim != 3:
        return v
    heads = max([a.i for a in n.attribute if a.name == "num_heads"] or [1])
    b, s, w = v.shape
    return v.reshape(b, s, heads, w // heads).transpose(0, 2, 1, 3)


def _attention_products_overflow(ins):
    """A product q[d] * k[d] of a score past float32's range (inf in the
    sum, inf - inf in the softmax: NaN in onnxruntime), for 4-D inputs
    with the past keys, if any, before the new ones."""
    q, k = (np.asarray(v, np.float64) for v in ins[:2])
    if q.ndim != 4 or k.ndim != 4:
        return False
    if len(ins) > 4 and ins[4] is not None:
        k = np.concatenate([np.asarray(ins[4], np.float64), k], axis=2)
    qa, ka = np.abs(q).max(axis=(1, 2)), np.abs(k).max(axis=(1, 2))   # [batch, head size]
    return bool(np.any(qa * ka > np.finfo(np.float32).max))


def _attention_pattern_nan(sub, vals):
    """canon.c's decomposed attention (MatMul, Softmax, MatMul) over
    non-finite values: rewritten into Attention, it meets new-attention-nan."""
    ops = {n.op_type for n in sub.nodes}
    return {"MatMul", "Softmax"} <= ops and \
        _nonfinite(vals[t.name] for t in sub.inputs + sub.inits)


# Defects a graph of several nodes shows (a rewrite of a whole pattern):
# key of KNOWN -> predicate on the reduced case and the values.
KNOWN_PATTERNS = {"new-attention-nan": _attention_pattern_nan}


def known_defect(sub, vals):
    if sub is None:
        return None
    if len(sub.nodes) != 1:
        for key, pred in KNOWN_PATTERNS.items():
            if pred(sub, vals):
                return key
        return None
    n = sub.nodes[0]
    ins = [vals.get(i) if i else None for i in n.input]
    for key, (_, pred) in KNOWN.items():
        try:
            if pred(n, ins):
                return key
        except Exception:
            pass
    return None


def one_graph(mkc, seed, index, out_dir, scratch, reduce=True):
    try:
        return graph_outcome(mkc, seed, index, out_dir, scratch, reduce)
    except Exception as e:   # this tool's own bug: a failure to see, not a stop
        import traceback
        return Result(index, Outcome("fail", f"difftest itself: {e!r} at "
                                     f"{traceback.format_exc().splitlines()[-3].strip()}"))


def graph_outcome(mkc, seed, index, out_dir, scratch, reduce):
    try:
        case = make_case(seed, index)
    except Skip:
        case = None
    if case is None:
        return Result(index, Outcome("skipped", "the generator made no node"))
    try:
        m = model_of(case, case.outputs, case.sym is not None)
        check(m)
        check(model_of(case, case.outputs, False))
    except Exception as e:
        return Result(index, Outcome("fail", f"generator: onnx.checker refused the graph: "
                                     f"{str(e).splitlines()[0][:300]}"), case)
    d = os.path.join(out_dir, f"s{seed}-g{index}")
    note = f"made by: python3 tools/difftest.py --seed {seed} --only {index}\n"
    try:
        vals = probe(case)
    except Exception as e:
        if case.b.bad is not None:
            return both_refuse(mkc, case, m, d, note, scratch, index, short_ort_error(str(e)))
        return Result(index, Outcome("skipped", "onnxruntime: " + short_ort_error(str(e))), case)
    for t in case.outputs:
        if tuple(np.asarray(vals[t.name]).shape) != t.shape:
            return Result(index, Outcome("fail", f"generator: '{t.name}' is "
                                         f"{np.asarray(vals[t.name]).shape} in onnxruntime, "
                                         f"{t.shape} in the generator"), case)
    try:
        undefined(case, vals)
    except Undefined as e:
        return Result(index, Outcome("skipped", "undefined in ONNX: " + str(e)), case)
    shutil.rmtree(d, ignore_errors=True)
    write_case(d, m, [(t.name, t.value) for t in case.inputs],
               [(t.name, vals[t.name]) for t in case.outputs], case.args, note)
    o = run_mkc(mkc, d, scratch)
    if o.kind != "fail":
        shutil.rmtree(d, ignore_errors=True)
        return Result(index, o, case)
    if not reduce:
        return Result(index, o, case, d)
    return triage(mkc, case, vals, o, d, note, scratch, index)


def both_refuse(mkc, case, m, d, note, scratch, index, why):
    """A graph given an index out of range on purpose, which onnxruntime
    refuses: mkc must refuse it too (at compile time or at run time, with
    a sentence). Its reference outputs are zeros, which no run may match."""
    shutil.rmtree(d, ignore_errors=True)
    write_case(d, m, [(t.name, t.value) for t in case.inputs],
               [(t.name, np.zeros(t.shape, NP[t.dt])) for t in case.outputs], case.args,
               note + f"onnxruntime refuses it: {why}\n")
    with open(os.path.join(d, "expect.txt"), "w") as f:
        f.write("refused: .\n")
    o = run_mkc(mkc, d, scratch, elementwise=False)
    if o.kind == "refused":
        shutil.rmtree(d, ignore_errors=True)
        return Result(index, Outcome("refused", f"as onnxruntime does ({why}): {o.msg}"), case)
    n = case.nodes[case.b.bad]
    o = Outcome("fail", f"onnxruntime refuses an index out of range ({why}); mkc: {o}")
    key = None
    for k, (_, pred) in KNOWN.items():
        if pred(n, [case.b.all[i].value if i in case.b.all else None for i in n.input]):
            key = k
    return Result(index, o, case, d, None, key)


def triage(mkc, case, vals, o, d, note, scratch, index):
    """A failure reduced, and told apart from rounding: the one node that
    fails alone is compared with the float64 answer too (onnxruntime is not
    always the more accurate); a failure of several nodes that no node
    shows alone is checked node by node on mkc's own intermediate values
    (a rounding difference that grows through the graph is no defect)."""
    text = f"{note}mkc test: {o.msg}\n"
    red, sub, ro = reduce_failure(mkc, case, vals, d, scratch, failure_class(o.msg))
    if red and len(sub.nodes) == 1 and ro.got and not_less_accurate(sub.nodes[0], sub, vals, ro.got):
        shutil.rmtree(d, ignore_errors=True)
        return Result(index, Outcome("pass", f"onnxruntime less accurate on "
                                     f"{node_key(sub.nodes[0])}"), case, note="ort-less-accurate")
    if (not red or len(sub.nodes) > 1) and o.msg.startswith("wrong answer") and o.got:
        big, got = (sub, ro.got) if red else (case, o.got)
        verdict, red1, sub1, ro1 = local_check(mkc, big, vals, d, scratch, got)
        if red1:   # one node, fed mkc's own values, fails alone
            red, sub, ro = red1, sub1, ro1
        if verdict == "consistent":
            shutil.rmtree(d, ignore_errors=True)
            return Result(index, Outcome("pass", "rounding grew through the graph"), case,
                          note="ill-conditioned")
        text += f"node by node on mkc's own values: {verdict}\n"
    known = known_defect(sub, {**vals, **(sub.vals if sub is not None and hasattr(sub, "vals")
                                          else {})})
    if red:
        text += f"reduced to {len(sub.nodes)} node(s) ({', '.join(node_key(n) for n in sub.nodes)}): " \
                f"{ro.msg}\nreduced repro: {repro(mkc, red)}\n"
    with open(os.path.join(d, "note.txt"), "w") as f:
        f.write(text)
    return Result(index, o, case, d, red, known)


def eval_node(n, ins, opset, f64=False):
    """Node n alone on these input values: onnxruntime's outputs, or (f64)
    the ONNX reference evaluator's in float64 from float32 inputs widened."""
    names = [f"i{k}" if v is not None else "" for k, v in enumerate(ins)]
    node = helper.make_node(n.op_type, names, [f"o{k}" if o else "" for k, o in enumerate(n.output)],
                            domain=n.domain)
    node.attribute.extend(n.attribute)
    feeds, vis = {}, []
    for name, v in zip(names, ins):
        if v is None:
            continue
        v = np.asarray(v)
        if f64 and v.dtype == np.float32:
            v = v.astype(np.float64)
        feeds[name] = v
        vis.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype),
                                                 v.shape))
    outs = [onnx.ValueInfoProto(name=o) for o in node.output if o]
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(n.domain, 1)] if n.domain else [])
    m = helper.make_model(helper.make_graph([node], "n", vis, outs), opset_imports=ops)
    m.ir_version = 10
    if f64:
        import warnings
        from onnx.reference import ReferenceEvaluator
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ReferenceEvaluator(m).run(None, feeds)
    return ort_run(m, feeds)


def not_less_accurate(n, sub, vals, got):
    """Whether mkc's outputs of node n are, wherever they differ from
    onnxruntime's, at least as close to the float64 answer (or within two
    float32 rounding steps of it)."""
    if n.domain or n.op_type in ("Cast", "CastLike", "ConstantOfShape", "Constant"):
        return False
    ins = [sub_value(sub, vals, i) if i else None for i in n.input]
    try:
        truth = eval_node(n, ins, sub.opset, f64=True)
    except Exception:
        return False
    outs = [o for o in n.output if o]
    for o, t, g in zip(outs, truth, got):
        ref = np.asarray(vals[o])
        if g is None or ref.dtype != np.float32:
            if g is not None and differ(ref, g).any():
                return False
            continue
        bad = differ(ref, g)
        if not bad.any():
            continue
        t = np.broadcast_to(np.asarray(t, np.float64), ref.shape)[bad]
        r, m = ref[bad].astype(np.float64), g[bad].astype(np.float64)
        with np.errstate(all="ignore"):
            close = (np.isnan(t) & np.isnan(m)) | (m == t) | \
                (np.isfinite(m) & np.isfinite(t) &
                 (np.abs(m - t) <= np.maximum(np.abs(r - t), 2.4e-7 * np.abs(t))))
        if not close.all():
            return False
    return True


def sub_value(sub, vals, name):
    for t in sub.inputs + sub.inits:
        if t.name == name:
            return t.value
    return vals[name]


def local_check(mkc, case, vals, d, scratch, got_final):
    """Runs the graph with every tensor a node makes as an output, then each
    node in onnxruntime on mkc's own values of its inputs. Returns
    (verdict, reduced folder, case, outcome): 'consistent' when every node
    agrees with onnxruntime on the same inputs and the outputs are those of
    the first run; else what differs, reduced to that one node where it
    fails alone."""
    outs = [case.b.all[o] for n in case.nodes for o in n.output if o]
    pc = Case(case.b, outs, case.args, case.sym)
    pd = os.path.join(d, "probe")
    shutil.rmtree(pd, ignore_errors=True)
    materialise(pc, pd, vals)
    po = run_mkc(mkc, pd, scratch, elementwise=False)
    shutil.rmtree(pd, ignore_errors=True)
    if not po.got:
        return f"the graph with its intermediate values as outputs: {po}", None, None, None
    mine = {t.name: g for t, g in zip(outs, po.got) if g is not None}
    for i, n in enumerate(case.nodes):
        ins = [mine.get(x, vals.get(x)) if x else None for x in n.input]
        try:
            ref = eval_node(n, ins, case.opset)
        except Exception:
            continue
        for o, r in zip([o for o in n.output if o], ref):
            if o in mine and differ(np.asarray(r), mine[o]).any():
                nv = dict(vals)
                nv.update({x: v for x, v in zip(n.input, ins) if x})
                nv.update({o2: r2 for o2, r2 in zip([o for o in n.output if o], ref)})
                sub = single_node(case, i, nv)
                sub.vals = nv
                if not_less_accurate(n, sub, nv, [mine.get(o2) for o2 in n.output if o2]):
                    continue
                sd = os.path.join(d, "reduced")
                shutil.rmtree(sd, ignore_errors=True)
                materialise(sub, sd, nv)
                ro = run_mkc(mkc, sd, scratch)
                if ro.kind == "fail":
                    return f"{node_key(n)} differs from onnxruntime on mkc's inputs", sd, sub, ro
                shutil.rmtree(sd, ignore_errors=True)
                return f"{node_key(n)} differs from onnxruntime on mkc's inputs (not alone)", \
                    None, None, None
    for t, g in zip(case.outputs, got_final):
        if g is not None and t.name in mine and differ(g, mine[t.name]).any():
            return f"'{t.name}' changes when the intermediate values are outputs too (a " \
                   f"fusion or canonicalisation changes the answer?)", None, None, None
    return "consistent", None, None, None


def short_ort_error(s):
    s = re.sub(r"\[ONNXRuntimeError\] : \d+ : ", "", s.splitlines()[0] if s else "")
    s = s.split("Status Message: ")[-1]
    s = re.sub(r"^/onnxruntime_src/\S+ ", "", s)
    s = re.sub(r"'[^']*'", "'…'", s)
    s = re.sub(r"\d+", "N", s)
    return s[:200]


# ---------------------------------------------------------------------------
# Regression cases

def read_expected(path):
    exp = {}
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line and not line.startswith("#"):
                name, defect, why = (line.split(None, 2) + ["", ""])[:3]
                exp[name] = (defect, why)
    return exp


def ops_without_maker():
    """The ops of ir/ops.def a model may use that OPS has no maker for."""
    missing = []
    for line in open(os.path.join(ROOT, "ir/ops.def")):
        f = re.match(r'OP\(\w+, "(\w+)", "(.*?)"', line)
        if f and f.group(2) != "mkc.internal":
            key = (f.group(2) + "." if f.group(2) else "") + f.group(1)
            if key not in OPS:
                missing.append(key)
    return missing


def replay(mkc, root, jobs, scratch):
    """Runs root/cases/*; returns the lines that are wrong (empty: all as expected)."""
    cases_dir = os.path.join(root, "cases")
    names = sorted(os.listdir(cases_dir)) if os.path.isdir(cases_dir) else []
    expected = read_expected(os.path.join(root, "expected_failures.txt"))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        outcomes = list(pool.map(lambda n: run_mkc(mkc, os.path.join(cases_dir, n), scratch), names))
    bad, counts = [], {"pass": 0, "xfail": 0, "refused": 0}
    for name, o in zip(names, outcomes):
        d = os.path.join(cases_dir, name)
        path = os.path.join(d, "expect.txt")
        want = open(path).read().strip() if os.path.exists(path) else "pass"
        # a case meets its expectation by passing, or (expect.txt) by a refusal
        # whose sentence matches
        refusal = want.startswith("refused:")
        meets = o.kind == "refused" and bool(re.search(want[len("refused:"):].strip(), o.msg)) \
            if refusal else o.kind == "pass"
        if name in expected:
            if meets:
                bad.append(f"UNEXPECTEDLY PASSING {name} ({o.kind}), listed as {expected[name][0]}: "
                           f"take it off tests/diff/expected_failures.txt (and its KNOWN entry in "
                           f"tools/difftest.py once no case names it)")
            elif o.kind == "fail" or (o.kind == "refused" and expected[name][1].startswith("refused")):
                counts["xfail"] += 1
            else:   # a fail became a refusal, or the other way round
                bad.append(f"CHANGED {name}: now {o}, listed as {expected[name][1]!r}: update "
                           f"tests/diff/expected_failures.txt, or the case's expect.txt")
        elif meets:
            counts["refused" if refusal else "pass"] += 1
        else:
            bad.append(f"FAIL {name}: expected {want}, got {o}\n  repro: {repro(mkc, d)}")
    for name in expected:
        if name not in names:
            bad.append(f"{name} is listed in tests/diff/expected_failures.txt but has no folder")
    for op in ops_without_maker():
        bad.append(f"{op} is in ir/ops.def but tools/difftest.py has no maker for it (OPS)")
    named = {v[0] for v in expected.values()}
    for key in KNOWN:
        if key not in named:
            bad.append(f"KNOWN['{key}'] in tools/difftest.py has no expected failure left: "
                       f"its fix has landed, remove it")
    print(f"difftest replay: {len(names)} regression cases: {counts['pass']} pass, "
          f"{counts['refused']} refused as expected, {counts['xfail']} fail as expected "
          f"(tests/diff/expected_failures.txt), {len(bad)} wrong")
    return bad


# ---------------------------------------------------------------------------

def reason_key(msg):
    """A refusal or skip reason without the names and numbers of one graph."""
    msg = re.sub(r"^\S*model\.onnx: ", "", msg)
    msg = re.sub(r"node '[^']*' ", "node ", msg)
    msg = re.sub(r"'[^']*'", "'…'", msg)
    msg = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", msg)
    return msg[:160]


def cpu_seconds():
    import resource
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mkc", default=os.path.join(ROOT, "build/mkc"))
    ap.add_argument("--seed", type=int, help="the run's seed (default: a random one, printed)")
    ap.add_argument("--count", type=int, help="graphs to make (default 50, 0 with --replay)")
    ap.add_argument("--start", type=int, default=0, help="index of the first graph")
    ap.add_argument("--only", type=int, help="make and test only graph ONLY of the seed")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", default=os.path.join(ROOT, "build/difftest"),
                    help="where failing graphs are written (default build/difftest)")
    ap.add_argument("--no-reduce", action="store_true", help="do not reduce failures")
    ap.add_argument("--replay", metavar="DIR", help="run the regression cases of DIR (tests/diff)")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per graph")
    a = ap.parse_args(argv[1:])
    mkc = os.path.abspath(a.mkc)
    t0, c0 = time.time(), cpu_seconds()
    scratch = tempfile.mkdtemp(prefix="difftest_")
    status = 0
    try:
        if a.replay:
            bad = replay(mkc, a.replay, a.jobs, scratch)
            for line in bad:
                print(line)
            status |= 1 if bad else 0
        count = a.count if a.count is not None else 0 if a.replay else 50
        if a.only is not None:
            indices = [a.only]
        else:
            indices = list(range(a.start, a.start + count))
        if indices:
            status |= random_run(a, mkc, indices, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"difftest: {cpu_seconds() - c0:.1f} CPU seconds, {time.time() - t0:.1f} s wall")
    return status


def random_run(a, mkc, indices, scratch):
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little") % 10**9
    print(f"difftest: seed {seed}, graphs {indices[0]}..{indices[-1]} "
          f"(python3 tools/difftest.py --seed {seed} --only I makes graph I again)", flush=True)
    os.makedirs(a.out, exist_ok=True)
    results = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futs = [pool.submit(one_graph, mkc, seed, i, a.out, scratch, not a.no_reduce)
                for i in indices]
        for f in futs:
            r = f.result()
            results.append(r)
            if a.verbose:
                ops = ",".join(node_key(n) for n in r.case.nodes) if r.case else ""
                print(f"  g{r.index} [{ops}] {r.outcome}", flush=True)
    kinds = {}
    for r in results:
        k = "known" if r.known else r.outcome.kind
        kinds.setdefault(k, []).append(r)
    passes = kinds.get("pass", [])
    folded = sum(1 for r in passes if r.outcome.folded)
    grew = sum(1 for r in passes if r.note == "ill-conditioned")
    less = sum(1 for r in passes if r.note == "ort-less-accurate")
    print(f"difftest: seed {seed}: {len(results)} graphs: {len(passes)} pass "
          f"({folded} folded to constants; {grew} where rounding grew through the graph and "
          f"{less} where onnxruntime is the less accurate, each node agreeing), "
          f"{len(kinds.get('refused', []))} refused, "
          f"{len(kinds.get('skipped', []))} skipped, {len(kinds.get('known', []))} known defects, "
          f"{len(kinds.get('fail', []))} fail")
    for note, title in (("ill-conditioned", "rounding grew"), ("ort-less-accurate",
                                                               "onnxruntime less accurate")):
        ix = [f"g{r.index} ({r.outcome.msg})" for r in passes if r.note == note]
        if ix:
            print(f"  passed, {title}: {', '.join(ix)}")
    for kind, title in (("refused", "refused by mkc (is each one a limit the README states?)"),
                        ("skipped", "skipped")):
        reasons = {}
        for r in kinds.get(kind, []):
            reasons.setdefault(reason_key(r.outcome.msg), []).append(r.index)
        if reasons:
            print(f"  {title}:")
            for why, ix in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
                print(f"    {len(ix):4d}  {why}  (g{ix[0]})")
    for r in kinds.get("known", []):
        print(f"  known {r.known} ({KNOWN[r.known][0]}): g{r.index}, {r.reduced or r.folder}")
    for r in kinds.get("fail", []):
        print(f"FAIL g{r.index}: {r.outcome.msg}")
        if r.folder:
            print(f"  repro: {repro(mkc, r.folder)}")
        if r.reduced:
            print(f"  reduced: {repro(mkc, r.reduced)}")
    return 1 if kinds.get("fail") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

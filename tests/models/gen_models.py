#!/usr/bin/env python3
"""Generate the small hand-made ONNX models used by mkc's C test-suite.

Run:  python3 tests/models/gen_models.py [OUTDIR]
      (OUTDIR defaults to tests/models/hand next to this script)

It writes valid models (every initializer storage form, external data, every
attribute type, Constant forms, symbolic dims, a shape mismatch, a small MLP
with backend-test data) and deliberately broken inputs (empty, truncated,
random bytes, unknown ops, a dangling input, a cycle, bad external data, a
duplicated output name).  json/ holds JSON twins of several valid models
(onnx's JSON form, plus variants in the other spellings protobuf's JSON parser
takes) and json_bad/ tiny broken JSON files.  See hand/README.md for what
each test should assert.

Output is deterministic: fixed seeds, no timestamps, and models are written
with SerializeToString() rather than onnx.save (which would also try to write
external-data files, including ones that point outside the folder); JSON
with onnx's JSON serializer, the one onnx.save(..., format="json") uses (the
same bytes for models without external data).  Only onnx (with the protobuf
package it depends on), numpy and the standard library are used.
"""

import json
import os
import sys

import numpy as np
import onnx
from google.protobuf import json_format
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 10
OPSET = 18
F32 = TensorProto.FLOAT
I64 = TensorProto.INT64


# ----------------------------------------------------------------- helpers

def make_model(graph, extra_opsets=()):
    """Wrap a graph with ir_version 10, opset 18 and fixed producer fields."""
    opsets = [helper.make_opsetid("", OPSET)]
    opsets += [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets,
                              producer_name="mkc-gen_models",
                              producer_version="1")
    model.ir_version = IR_VERSION
    return model


def write_bytes(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_model(outdir, name, model):
    """Serialize directly (never onnx.save: see the module docstring)."""
    data = model.SerializeToString()
    write_bytes(os.path.join(outdir, name), data)
    return data


def value_info(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def identity_graph(name, initializers, elem_types):
    """One Identity per initializer; each Identity output is a graph output."""
    nodes, outputs = [], []
    for init in initializers:
        out = init.name + "_out"
        nodes.append(helper.make_node("Identity", [init.name], [out],
                                      name="id_" + init.name))
        outputs.append(value_info(out, elem_types[init.name], list(init.dims)))
    return helper.make_graph(nodes, name, [], outputs, initializer=initializers)


def tensor(name, data_type, dims, **fields):
    """A TensorProto with exactly the storage fields given (raw_data, ...)."""
    t = TensorProto(name=name, data_type=data_type, dims=dims)
    for field, value in fields.items():
        if field == "raw_data":
            t.raw_data = value
        else:
            getattr(t, field).extend(value)
    return t


def raw(name, data_type, array):
    """Little-endian raw_data tensor from a numpy array."""
    return tensor(name, data_type, list(array.shape),
                  raw_data=array.astype(array.dtype.newbyteorder("<")).tobytes())


def external(name, dims, location, offset=None, length=None):
    """A float32 tensor whose data lives in an external file."""
    t = TensorProto(name=name, data_type=F32, dims=dims,
                    data_location=TensorProto.EXTERNAL)
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for key, value in entries:
        t.external_data.add(key=key, value=value)
    return t


# ------------------------------------------------------------ valid models

def storage_initializers():
    f32, f16, bf16 = F32, TensorProto.FLOAT16, TensorProto.BFLOAT16
    return [
        raw("w_f32_raw", f32, np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1),
        tensor("w_f32_typed", f32, [3], float_data=[1.5, -2.25, 3.0]),
        raw("w_f16_raw", f16, np.array([1.0, -2.0, 0.5, 65504], np.float16)),
        # typed fp16/bf16: int32_data holds the uint16 bit patterns, zero-extended
        tensor("w_f16_typed", f16, [2], int32_data=[0x3C00, 0xB800]),
        raw("w_bf16_raw", bf16, np.array([0x3F80, 0xC000, 0x4060], np.uint16)),
        tensor("w_bf16_typed", bf16, [2], int32_data=[0x3F00, 0xBF80]),
        raw("w_i64_raw", I64, np.array([1, -2, 3000000000], np.int64)),
        tensor("w_i64_typed", I64, [2], int64_data=[-7, 9]),
        raw("w_i32_raw", TensorProto.INT32, np.array([-5, 7], np.int32)),
        tensor("w_i32_typed", TensorProto.INT32, [2], int32_data=[11, -12]),
        raw("w_i8_raw", TensorProto.INT8, np.array([-128, 0, 127], np.int8)),
        tensor("w_i8_typed", TensorProto.INT8, [2], int32_data=[-3, 4]),
        raw("w_bool_raw", TensorProto.BOOL, np.array([1, 0, 1], np.uint8)),
        tensor("w_bool_typed", TensorProto.BOOL, [2], int32_data=[0, 1]),
        tensor("w_f64_typed", TensorProto.DOUBLE, [2], double_data=[0.25, -8.0]),
        raw("w_u8_raw", TensorProto.UINT8, np.array([0, 255], np.uint8)),
        raw("w_scalar", f32, np.array(42.0, np.float32)),
    ]


def gen_storage(outdir):
    inits = storage_initializers()
    graph = identity_graph("storage", inits, {t.name: t.data_type for t in inits})
    model = make_model(graph)
    onnx.checker.check_model(model, full_check=True)
    return write_model(outdir, "storage.onnx", model)


EXTERNAL_GAP_FILL = b"\xff"  # bytes 32..63 of external.bin (NaN if misread)


def gen_external(outdir):
    blob = bytearray(76)
    blob[0:16] = np.array([1, 2, 3, 4], "<f4").tobytes()
    blob[16:32] = np.array([5, 6, 7, 8], "<f4").tobytes()
    blob[32:64] = EXTERNAL_GAP_FILL * 32
    blob[64:76] = np.array([9, 10, 11], "<f4").tobytes()
    write_bytes(os.path.join(outdir, "external.bin"), bytes(blob))
    inits = [
        external("ext_a", [4], "external.bin", length=16),           # offset defaults to 0
        external("ext_b", [2, 2], "external.bin", offset=16, length=16),
        external("ext_c", [3], "external.bin", offset=64),           # no length
    ]
    graph = identity_graph("external", inits, {t.name: F32 for t in inits})
    model = make_model(graph)
    write_model(outdir, "external.onnx", model)
    onnx.checker.check_model(os.path.join(outdir, "external.onnx"), full_check=True)


def tiny_subgraph(name, op, node_name):
    node = helper.make_node(op, ["g_in"], ["g_out"], name=node_name)
    return helper.make_graph([node], name, [value_info("g_in", F32, [2])],
                             [value_info("g_out", F32, [2])])


def gen_attrs(outdir):
    all_attrs = helper.make_node(
        "AllAttrs", ["x"], ["y"], name="all_attrs", domain="test.attrs",
        f=1.5, i=-7, s="hello",
        t=numpy_helper.from_array(np.array([3, 4], np.int64), "t_val"),
        g=tiny_subgraph("g_body", "Identity", "g_identity"),
        floats=[0.5, -1.0], ints=[1, 2, 3], strings=["a", "bc"],
        tensors=[numpy_helper.from_array(np.array([0.25, 0.75], np.float32), "ts0"),
                 numpy_helper.from_array(np.array([1, -1, 2], np.int32), "ts1")],
        graphs=[tiny_subgraph("gs_body0", "Neg", "gs_neg")])
    fused = helper.make_node("FusedMatMul", ["x", "x"], ["fm"], name="fused_matmul",
                             domain="com.microsoft", alpha=1.0, transA=0)
    graph = helper.make_graph(
        [all_attrs, fused], "attrs", [value_info("x", F32, [2])],
        [value_info("y", F32, [2]), value_info("fm", F32, None)])
    model = make_model(graph, [("test.attrs", 1), ("com.microsoft", 1)])
    write_model(outdir, "attrs.onnx", model)  # custom ops: checker skipped


def gen_constants(outdir):
    const = lambda out, **attr: helper.make_node("Constant", [], [out],
                                                 name="const_" + out[2:], **attr)
    nodes = [
        const("c_value", value=numpy_helper.from_array(
            np.array([1, 2], np.float32), "c_value_t")),
        const("c_value_float", value_float=3.5),
        const("c_value_floats", value_floats=[1.0, 2.0, 3.0]),
        const("c_value_int", value_int=7),
        const("c_value_ints", value_ints=[4, 5]),
        helper.make_node("Add", ["c_value", "c_value_float"], ["c_sum"], name="add_consts"),
    ]
    outputs = [value_info("c_value", F32, [2]), value_info("c_value_float", F32, []),
               value_info("c_value_floats", F32, [3]), value_info("c_value_int", I64, []),
               value_info("c_value_ints", I64, [2]), value_info("c_sum", F32, [2])]
    model = make_model(helper.make_graph(nodes, "constants", [], outputs))
    onnx.checker.check_model(model, full_check=True)
    write_model(outdir, "constants.onnx", model)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def gen_symbolic(outdir):
    n = helper.make_node
    nodes = [
        n("Unsqueeze", ["x", "axes_1"], ["xu"], name="unsq_x"),
        n("Concat", ["y", "xu"], ["z"], name="concat_z", axis=1),
        n("Shape", ["y"], ["y_shape"], name="shape_y"),
        n("Gather", ["y_shape", "idx_1"], ["past"], name="gather_past", axis=0),
        n("Add", ["past", "one"], ["past_p1"], name="add_one"),
        n("Unsqueeze", ["past_p1", "axes_0"], ["past_p1_1d"], name="unsq_len"),
        n("Concat", ["c_neg1", "past_p1_1d", "c_4"], ["shape_d"], name="concat_shape_d", axis=0),
        n("Reshape", ["z", "shape_d"], ["d"], name="reshape_d"),
    ]
    inits = [i64("axes_1", [1]), i64("idx_1", 1), i64("one", 1), i64("axes_0", [0]),
             i64("c_neg1", [-1]), i64("c_4", [4])]
    inputs = [value_info("x", F32, ["batch", 4]),
              value_info("y", F32, ["batch", "past_len", 4])]
    outputs = [value_info("z", F32, ["batch", None, 4]),  # middle dim left unknown
                value_info("d", F32, ["batch", "past_len + 1", 4])]
    graph = helper.make_graph(nodes, "symbolic", inputs, outputs, initializer=inits)
    model = make_model(graph)
    onnx.checker.check_model(model, full_check=True)
    write_model(outdir, "symbolic.onnx", model)


def gen_symbolic_product(outdir):
    """Reshape [batch, past_len, 4] -> [-1, 4]: batch * past_len is not affine
    in one symbol, which mkc rejects with an error naming 'reshape_w'."""
    n = helper.make_node
    nodes = [n("Reshape", ["y", "shape_w"], ["w"], name="reshape_w")]
    graph = helper.make_graph(nodes, "symbolic_product",
                              [value_info("y", F32, ["batch", "past_len", 4])],
                              [value_info("w", F32, ["N", 4])],
                              initializer=[i64("shape_w", [-1, 4])])
    model = make_model(graph)
    onnx.checker.check_model(model, full_check=True)
    write_model(outdir, "symbolic_product.onnx", model)


def gen_matmul_mismatch(outdir):
    b = np.random.default_rng(6).uniform(-1, 1, (512, 4)).astype(np.float32)
    node = helper.make_node("MatMul", ["a", "b"], ["c"], name="bad_matmul")
    graph = helper.make_graph([node], "matmul_mismatch", [value_info("a", F32, [2, 256])],
                              [value_info("c", F32, [2, 4])],
                              initializer=[numpy_helper.from_array(b, "b")])
    write_model(outdir, "matmul_mismatch.onnx", make_model(graph))


def mlp_weights():
    rng = np.random.default_rng(7)
    u = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)
    return {"W1": u(8, 16), "b1": u(16), "W2": u(16, 4), "x": u(1, 8)}


def mlp_reference(p):
    """y = (h * sigmoid(h)) @ W2 with h = x @ W1 + b1, in float64."""
    h = p["x"].astype(np.float64) @ p["W1"].astype(np.float64) + p["b1"].astype(np.float64)
    return ((h / (1.0 + np.exp(-h))) @ p["W2"].astype(np.float64)).astype(np.float32)


def gen_small_mlp(outdir):
    p = mlp_weights()
    n = helper.make_node
    nodes = [n("MatMul", ["x", "W1"], ["h0"], name="mm1"),
             n("Add", ["h0", "b1"], ["h"], name="add_b1"),
             n("Sigmoid", ["h"], ["s"], name="sigmoid"),
             n("Mul", ["h", "s"], ["m"], name="mul_silu"),
             n("MatMul", ["m", "W2"], ["y"], name="mm2")]
    inits = [numpy_helper.from_array(p[k], k) for k in ("W1", "b1", "W2")]
    graph = helper.make_graph(nodes, "small_mlp", [value_info("x", F32, [1, 8])],
                              [value_info("y", F32, [1, 4])], initializer=inits)
    model = make_model(graph)
    onnx.checker.check_model(model, full_check=True)
    folder = os.path.join(outdir, "small_mlp")
    write_model(folder, "model.onnx", model)
    data = os.path.join(folder, "test_data_set_0")
    write_bytes(os.path.join(data, "input_0.pb"),
                numpy_helper.from_array(p["x"], "x").SerializeToString())
    write_bytes(os.path.join(data, "output_0.pb"),
                numpy_helper.from_array(mlp_reference(p), "y").SerializeToString())


def gen_small_mlp_ext(outdir):
    """small_mlp with its weights as external data in weights.bin (W2 first,
    with a gap, so that offsets matter), the same test data."""
    p = mlp_weights()
    folder = os.path.join(outdir, "small_mlp_ext")
    blob, inits, at = bytearray(), [], 0
    for k in ("W2", "W1", "b1"):
        data = p[k].astype("<f4").tobytes()
        blob += data + b"\xff" * 64   # NaN bytes between tensors
        inits.append(external(k, list(p[k].shape), "weights.bin", offset=at, length=len(data)))
        at += len(data) + 64
    write_bytes(os.path.join(folder, "weights.bin"), bytes(blob))
    n = helper.make_node
    nodes = [n("MatMul", ["x", "W1"], ["h0"], name="mm1"),
             n("Add", ["h0", "b1"], ["h"], name="add_b1"),
             n("Sigmoid", ["h"], ["s"], name="sigmoid"),
             n("Mul", ["h", "s"], ["m"], name="mul_silu"),
             n("MatMul", ["m", "W2"], ["y"], name="mm2")]
    graph = helper.make_graph(nodes, "small_mlp_ext", [value_info("x", F32, [1, 8])],
                              [value_info("y", F32, [1, 4])], initializer=inits)
    write_model(folder, "model.onnx", make_model(graph))
    data = os.path.join(folder, "test_data_set_0")
    write_bytes(os.path.join(data, "input_0.pb"),
                numpy_helper.from_array(p["x"], "x").SerializeToString())
    write_bytes(os.path.join(data, "output_0.pb"),
                numpy_helper.from_array(mlp_reference(p), "y").SerializeToString())


def gen_escape_names(outdir):
    """Names with quotes, backslashes, '%', '?' and comment ends, which the
    emitted C must escape in string literals and comments."""
    folder = os.path.join(outdir, "escape_names")
    wname, iname, oname = 'w"\\?x', "ids%d*/", 'y */ "q"\\'
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    node = helper.make_node("Gather", [wname, iname], [oname], name='g */ "quote" \\back %s ??=')
    graph = helper.make_graph([node], "escape_names",
                              [value_info(iname, TensorProto.INT64, [2])],
                              [value_info(oname, F32, [2, 3])],
                              initializer=[numpy_helper.from_array(w, wname)])
    write_model(folder, "model.onnx", make_model(graph))
    data = os.path.join(folder, "test_data_set_0")
    ids = np.array([3, 1], np.int64)
    write_bytes(os.path.join(data, "input_0.pb"),
                numpy_helper.from_array(ids, iname).SerializeToString())
    write_bytes(os.path.join(data, "output_0.pb"),
                numpy_helper.from_array(w[ids], oname).SerializeToString())


def write_case(folder, model, feeds):
    """model.onnx and test_data_set_0 with onnxruntime's outputs as the reference."""
    import onnxruntime as ort
    write_model(folder, "model.onnx", model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    data = os.path.join(folder, "test_data_set_0")
    for k, i in enumerate(sess.get_inputs()):
        write_bytes(os.path.join(data, "input_%d.pb" % k),
                    numpy_helper.from_array(feeds[i.name], i.name).SerializeToString())
    for k, (o, v) in enumerate(zip(sess.get_outputs(), outs)):
        write_bytes(os.path.join(data, "output_%d.pb" % k),
                    numpy_helper.from_array(v, o.name).SerializeToString())


def gen_elementwise_tiles(outdir):
    """Elementwise nodes whose tiles are runs of consecutive elements (the
    emitter walks them by flat index) and nodes whose tiles or operands are
    not (a broadcast operand; tiles cut below a symbolic axis), with
    onnxruntime's outputs as the reference. On 8 workers: a, b [2,4096] are
    cut in 2 tiles of 4096, u, v [2,S,8] in 2 of [1,S,8]; s, t [S,3,64] in 3
    tiles [S,1,64], which are not runs when S > 1 (the test data has S = 2).
    Two Reshapes into graph outputs (copies, not views): a [1,1,8192] in 2
    tiles that are runs, and s as [S,192], cut along 192, not runs."""
    n = helper.make_node
    nodes = [n("Add", ["a", "b"], ["y_add"], name="add_ab"),
             n("Sigmoid", ["a"], ["sa"], name="sigmoid_a"),
             n("Mul", ["a", "sa"], ["ma"], name="silu_a"),
             n("Mul", ["ma", "b"], ["y_swiglu"], name="swiglu"),
             n("Less", ["a", "b"], ["lt"], name="less_ab"),
             n("Where", ["lt", "a", "b"], ["y_where"], name="where_ab"),
             n("Sub", ["s", "t"], ["y_sub"], name="sub_st"),
             n("Mul", ["s", "c"], ["y_bcast"], name="mul_sc"),
             n("Add", ["u", "v"], ["y_uv"], name="add_uv"),
             n("Reshape", ["a", "flat_shape"], ["y_flat"], name="reshape_a"),
             n("Reshape", ["s", "rows_shape"], ["y_rows"], name="reshape_s")]
    inputs = [value_info("a", F32, [2, 4096]), value_info("b", F32, [2, 4096]),
              value_info("s", F32, ["S", 3, 64]), value_info("t", F32, ["S", 3, 64]),
              value_info("c", F32, [64]), value_info("u", F32, [2, "S", 8]),
              value_info("v", F32, [2, "S", 8])]
    outputs = [value_info("y_add", F32, [2, 4096]), value_info("y_swiglu", F32, [2, 4096]),
               value_info("y_where", F32, [2, 4096]), value_info("y_sub", F32, ["S", 3, 64]),
               value_info("y_bcast", F32, ["S", 3, 64]), value_info("y_uv", F32, [2, "S", 8]),
               value_info("y_flat", F32, [1, 1, 8192]), value_info("y_rows", F32, ["S", 192])]
    shapes = [numpy_helper.from_array(np.array([1, 1, 8192], np.int64), "flat_shape"),
              numpy_helper.from_array(np.array([-1, 192], np.int64), "rows_shape")]
    model = make_model(helper.make_graph(nodes, "elementwise_tiles", inputs, outputs,
                                         initializer=shapes))
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(11)
    u = lambda *shape: rng.uniform(-4, 4, shape).astype(np.float32)
    feeds = {"a": u(2, 4096), "b": u(2, 4096), "s": u(2, 3, 64), "t": u(2, 3, 64),
             "c": u(64), "u": u(2, 2, 8), "v": u(2, 2, 8)}
    write_case(os.path.join(outdir, "elementwise_tiles"), model, feeds)


def write_reference_case(folder, model, feeds, outputs):
    """model.onnx and test_data_set_0 with the outputs given (in graph order)."""
    write_model(folder, "model.onnx", model)
    data = os.path.join(folder, "test_data_set_0")
    for k, i in enumerate(model.graph.input):
        write_bytes(os.path.join(data, "input_%d.pb" % k),
                    numpy_helper.from_array(feeds[i.name], i.name).SerializeToString())
    for k, (o, v) in enumerate(zip(model.graph.output, outputs)):
        write_bytes(os.path.join(data, "output_%d.pb" % k),
                    numpy_helper.from_array(v, o.name).SerializeToString())


def gen_ext_odd(outdir):
    """Initializers in external data at odd offsets: W [4,3] at byte 1 (the
    MatMul's weight, embedded in the emitted file) and c [3] at byte 49
    (folded: Mul(c, 2) is computed at compile time). A reader that takes
    their bytes as an array of floats in place reads through a misaligned
    pointer, which UBSan reports. y = x @ W + 2c, in float64 then float32."""
    rng = np.random.default_rng(13)
    w = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    c = rng.uniform(-1, 1, 3).astype(np.float32)
    x = rng.uniform(-1, 1, (1, 4)).astype(np.float32)
    folder = os.path.join(outdir, "ext_odd")
    blob = b"\x01" + w.astype("<f4").tobytes() + c.astype("<f4").tobytes()
    write_bytes(os.path.join(folder, "odd.bin"), blob)
    n = helper.make_node
    nodes = [n("MatMul", ["x", "W"], ["h"], name="mm"),
             n("Mul", ["c", "two"], ["c2"], name="twice_c"),
             n("Add", ["h", "c2"], ["y"], name="add_c2")]
    inits = [external("W", [4, 3], "odd.bin", offset=1, length=48),
             external("c", [3], "odd.bin", offset=49, length=12),
             numpy_helper.from_array(np.array(2.0, np.float32), "two")]
    graph = helper.make_graph(nodes, "ext_odd", [value_info("x", F32, [1, 4])],
                              [value_info("y", F32, [1, 3])], initializer=inits)
    y = (x.astype(np.float64) @ w.astype(np.float64) + 2.0 * c.astype(np.float64))
    write_reference_case(folder, make_model(graph), {"x": x}, [y.astype(np.float32)])


def gen_first_step(outdir):
    """A decode step's first token: opset-23 Attention with its past key and
    value at past_len 0 (the cache becomes state; its past is empty), with
    onnxruntime's outputs as the reference."""
    heads, dim = 2, 4
    io = lambda name, seq: value_info(name, F32, [1, heads, seq, dim])
    node = helper.make_node("Attention", ["q", "k", "v", "", "past_key", "past_value"],
                            ["y", "present_key", "present_value"], name="attention")
    graph = helper.make_graph(
        [node], "first_step",
        [io("q", 1), io("k", 1), io("v", 1), io("past_key", "past_len"),
         io("past_value", "past_len")],
        [io("y", 1), io("present_key", "past_len + 1"), io("present_value", "past_len + 1")])
    model = make_model(graph)
    model.opset_import[0].version = 23
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(17)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    feeds = {"q": f(1, heads, 1, dim), "k": f(1, heads, 1, dim), "v": f(1, heads, 1, dim),
             "past_key": f(1, heads, 0, dim), "past_value": f(1, heads, 0, dim)}
    write_case(os.path.join(outdir, "first_step"), model, feeds)


def gen_nan_propagation(outdir):
    """Max, Min, Relu and ReduceMax with NaN operands in every position, at
    run time (inputs) and folded at compile time (initializers): a NaN
    operand gives NaN, as ONNX's reference (numpy) computes them, which is
    the reference here. onnxruntime agrees on Max, Min and Relu (checked);
    its ReduceMax gives NaN only when the NaN comes first in the reduction
    (Eigen's max), so rows 2 and 3 of r_max1 and column 2 of r_max0 differ
    from it."""
    from onnx.reference import ReferenceEvaluator
    import onnxruntime as ort
    nan, inf = np.nan, np.inf
    a = np.array([[nan, 1, -2, nan], [3, -0.0, inf, -inf], [1, 2, nan, 0],
                  [-1, nan, -3, -4]], np.float32)
    b = np.array([[1, nan, nan, 2], [-inf, 0.0, nan, 5], [2, 1, 0, 0],
                  [nan, -2, 7, -5]], np.float32)
    c = np.array([0.5, nan, -1, 7], np.float32)
    n = helper.make_node
    nodes = [n("Max", ["a", "b"], ["max_ab"], name="max_ab"),
             n("Min", ["a", "b"], ["min_ab"], name="min_ab"),
             n("Max", ["a", "b", "c"], ["max_abc"], name="max_abc"),
             n("Min", ["c", "a", "b"], ["min_cab"], name="min_cab"),
             n("Relu", ["a"], ["relu_a"], name="relu_a"),
             n("ReduceMax", ["a", "axes_1"], ["r_max1"], name="reduce_max_1"),
             n("ReduceMax", ["b", "axes_0"], ["r_max0"], name="reduce_max_0", keepdims=0),
             n("Max", ["ka", "kb"], ["k_max"], name="fold_max"),
             n("Min", ["kb", "ka"], ["k_min"], name="fold_min"),
             n("Relu", ["ka"], ["k_relu"], name="fold_relu")]
    inits = [numpy_helper.from_array(np.array([1], np.int64), "axes_1"),
             numpy_helper.from_array(np.array([0], np.int64), "axes_0"),
             numpy_helper.from_array(a, "ka"), numpy_helper.from_array(b, "kb")]
    shapes = {"r_max1": [4, 1], "r_max0": [4]}
    outputs = [value_info(o, F32, shapes.get(o, [4, 4])) for o in
               ("max_ab", "min_ab", "max_abc", "min_cab", "relu_a", "r_max1", "r_max0",
                "k_max", "k_min", "k_relu")]
    graph = helper.make_graph(nodes, "nan_propagation",
                              [value_info("a", F32, [4, 4]), value_info("b", F32, [4, 4]),
                               value_info("c", F32, [4])], outputs, initializer=inits)
    model = make_model(graph)
    onnx.checker.check_model(model, full_check=True)
    feeds = {"a": a, "b": b, "c": c}
    ref = ReferenceEvaluator(model).run(None, feeds)
    got = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, feeds)
    for k, (r, o) in enumerate(zip(ref, got)):
        if k not in (5, 6):   # the two ReduceMax outputs
            np.testing.assert_array_equal(r, o)
    write_reference_case(os.path.join(outdir, "nan_propagation"), model, feeds, ref)


def gen_pow_types(outdir):
    """Pow with a base and an exponent of different types (opset 15: T for
    the base and the result, T1 for the exponent): int32 and int64 bases
    with float exponents (a fractional power of an integer, truncated:
    4^1.5 = 8), a float base with an int64 exponent, and int32^float folded
    at compile time; onnxruntime's outputs are the reference."""
    n = helper.make_node
    i32 = TensorProto.INT32
    nodes = [n("Pow", ["x32", "e"], ["p32"], name="pow_i32_f32"),
             n("Pow", ["x64", "e64"], ["p64"], name="pow_i64_f32"),
             n("Pow", ["f", "ei"], ["pf"], name="pow_f32_i64"),
             n("Pow", ["kx", "ke"], ["pk"], name="fold_pow_i32_f32")]
    inits = [numpy_helper.from_array(np.array([4, 2, 9], np.int32), "kx"),
             numpy_helper.from_array(np.array([1.5, 0.5, 0.5], np.float32), "ke")]
    graph = helper.make_graph(
        nodes, "pow_types",
        [value_info("x32", i32, [7]), value_info("e", F32, [7]),
         value_info("x64", I64, [3]), value_info("e64", F32, [3]),
         value_info("f", F32, [3]), value_info("ei", I64, [3])],
        [value_info("p32", i32, [7]), value_info("p64", I64, [3]),
         value_info("pf", F32, [3]), value_info("pk", i32, [3])], initializer=inits)
    model = make_model(graph)
    onnx.checker.check_model(model, full_check=True)
    feeds = {"x32": np.array([4, 2, 9, -8, 0, 7, 3], np.int32),
             "e": np.array([1.5, 0.5, 0.5, 3.0, 0.5, -1.0, 2.0], np.float32),
             "x64": np.array([3, 10, -3], np.int64),
             "e64": np.array([39.0, 0.5, 3.0], np.float32),
             "f": np.array([2.0, 1.5, -3.0], np.float32),
             "ei": np.array([3, -2, 3], np.int64)}
    write_case(os.path.join(outdir, "pow_types"), model, feeds)


def gen_norm_broadcast(outdir):
    """LayerNormalization and RMSNormalization (opset 23) whose scale and
    bias broadcast to X unidirectionally, as the spec allows, in every way:
    per row ([3,1]), across rows ([1,8]), one value ([1]), the whole of X
    ([3,8]), a scale and a bias of different sizes, and with axis 0 and a
    rank-3 X whose normalised part [3,4] the scale [3,1] repeats along;
    onnxruntime's outputs are the reference."""
    rng = np.random.default_rng(19)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    n = helper.make_node
    w = {"s31": f(3, 1), "b18": f(1, 8), "s8": f(8), "b1": f(1), "s1": f(1), "b8": f(8),
         "s18": f(1, 8), "b31": f(3, 1), "s38": f(3, 8)}
    ln, rms = "LayerNormalization", "RMSNormalization"
    nodes = [n(ln, ["x", "s31", "b18"], ["ln_row"], name="ln_row_scale"),
             n(ln, ["x", "s8", "b1"], ["ln_b1"], name="ln_one_bias"),
             n(ln, ["x", "s1", "b8"], ["ln_s1"], name="ln_one_scale"),
             n(ln, ["x", "s18", "b31"], ["ln_axis0"], name="ln_axis0", axis=0),
             n(rms, ["x", "s31"], ["rms_row"], name="rms_row_scale"),
             n(rms, ["x", "s38"], ["rms_whole"], name="rms_whole_scale"),
             n(rms, ["x3", "s31"], ["rms_inner"], name="rms_inner_repeat", axis=1)]
    outs = [value_info(o, F32, [3, 8]) for o in
            ("ln_row", "ln_b1", "ln_s1", "ln_axis0", "rms_row", "rms_whole")]
    outs.append(value_info("rms_inner", F32, [2, 3, 4]))
    graph = helper.make_graph(
        nodes, "norm_broadcast", [value_info("x", F32, [3, 8]), value_info("x3", F32, [2, 3, 4])],
        outs, initializer=[numpy_helper.from_array(v, k) for k, v in w.items()])
    model = make_model(graph)
    model.opset_import[0].version = 23
    onnx.checker.check_model(model, full_check=True)
    write_case(os.path.join(outdir, "norm_broadcast"), model, {"x": f(3, 8), "x3": f(2, 3, 4)})
    # alone, the case that compiled before broadcasting was read by
    # coordinates, and then read the one-value bias at j % 8
    node = n(ln, ["x", "s8", "b1"], ["y"], name="ln_one_bias")
    graph = helper.make_graph([node], "norm_one_bias", [value_info("x", F32, [3, 8])],
                              [value_info("y", F32, [3, 8])],
                              initializer=[numpy_helper.from_array(w[k], k) for k in ("s8", "b1")])
    model = make_model(graph)
    onnx.checker.check_model(model, full_check=True)
    write_case(os.path.join(outdir, "norm_one_bias"), model, {"x": f(3, 8)})


def contrib_model(name, node, inputs, outputs, inits=()):
    graph = helper.make_graph([node], name, inputs, outputs, initializer=list(inits))
    return make_model(graph, [("com.microsoft", 1)])


def gen_contrib(outdir):
    """The onnxruntime contrib ops of onnxruntime-genai exports, with
    onnxruntime's own outputs as the reference."""
    rng = np.random.default_rng(11)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    n = helper.make_node
    x, scale = f(2, 3, 16), f(16)
    write_case(os.path.join(outdir, "contrib_simplified_ln"), contrib_model(
        "contrib_simplified_ln",
        n("SimplifiedLayerNormalization", ["x", "scale"], ["y", "inv_std"], name="sln",
          axis=-1, epsilon=1e-5),
        [value_info("x", F32, [2, 3, 16])],
        [value_info("y", F32, [2, 3, 16]), value_info("inv_std", F32, [2, 3, 1])],
        [numpy_helper.from_array(scale, "scale")]), {"x": x})
    a, b, g, bias = f(1, 2, 16), f(1, 2, 16), f(16), f(16)
    write_case(os.path.join(outdir, "contrib_skip_simplified_ln"), contrib_model(
        "contrib_skip_simplified_ln",
        n("SkipSimplifiedLayerNormalization", ["a", "b", "gamma", "bias"],
          ["y", "", "", "sum"], name="skip_sln", domain="com.microsoft", epsilon=1e-6),
        [value_info("a", F32, [1, 2, 16]), value_info("b", F32, [1, 2, 16])],
        [value_info("y", F32, [1, 2, 16]), value_info("sum", F32, [1, 2, 16])],
        [numpy_helper.from_array(g, "gamma"), numpy_helper.from_array(bias, "bias")]),
        {"a": a, "b": b})
    theta = 1.0 / 10000 ** (np.arange(0, 8, 2) / 8)
    ang = np.arange(16)[:, None] * theta[None, :]
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    caches = [numpy_helper.from_array(cos, "cos_cache"), numpy_helper.from_array(sin, "sin_cache")]
    q = f(1, 3, 32)   # [batch, sequence, heads * head_dim], 4 heads of 8
    for name, interleaved, pos in (("contrib_rotary", 0, [5, 6, 9]),
                                   ("contrib_rotary_interleaved", 1, [2, 3, 4])):
        write_case(os.path.join(outdir, name), contrib_model(
            name,
            n("RotaryEmbedding", ["q", "pos", "cos_cache", "sin_cache"], ["y"], name="rope",
              domain="com.microsoft", num_heads=4, interleaved=interleaved),
            [value_info("q", F32, [1, 3, 32]), value_info("pos", TensorProto.INT64, [1, 3])],
            [value_info("y", F32, [1, 3, 32])], caches),
            {"q": q, "pos": np.array([pos], np.int64)})


    gen_gqa(outdir, f)
    gen_bf16_initializers(outdir, f)


def gen_bf16_initializers(outdir, f):
    """A float32 graph whose big weights sit in the file as bfloat16 and are
    widened by Cast (what export_hf.py --bf16-initializers writes): mkc reads
    them as bf16 weights and drops the Casts; a small one (the scale) is
    folded to float32 at compile time."""
    import ml_dtypes
    n = helper.make_node
    bf = lambda name, a: numpy_helper.from_array(a.astype(ml_dtypes.bfloat16), name)
    w1, w2, sc = f(256, 512) * 0.05, f(128, 512) * 0.05, f(128)
    nodes = [n("Cast", ["w1_bf16"], ["w1"], to=TensorProto.FLOAT),
             n("Cast", ["w2_bf16"], ["w2"], to=TensorProto.FLOAT),
             n("Cast", ["scale_bf16"], ["scale"], to=TensorProto.FLOAT),
             n("MatMul", ["x", "w1"], ["h"]),
             n("Gemm", ["h", "w2"], ["g"], transB=1),
             n("Mul", ["g", "scale"], ["y"])]
    graph = helper.make_graph(nodes, "bf16_initializers", [value_info("x", F32, [1, 256])],
                              [value_info("y", F32, [1, 128])],
                              initializer=[bf("w1_bf16", w1), bf("w2_bf16", w2),
                                           bf("scale_bf16", sc)])
    write_case(os.path.join(outdir, "bf16_initializers"), make_model(graph), {"x": f(1, 256)})


def gen_gqa(outdir, f):
    """GroupQueryAttention as onnxruntime-genai exports use it (4 query heads,
    2 key/value heads, head_size 16: onnxruntime wants a multiple of 16 with
    do_rotary): a decode step over a symbolic past, a step of two tokens
    over a fixed past, and interleaved rotation with a soft cap."""
    n = helper.make_node
    R = 16
    theta = 1.0 / 10000 ** (np.arange(0, R, 2) / R)
    ang = np.arange(64)[:, None] * theta[None, :]
    caches = [numpy_helper.from_array(np.cos(ang).astype(np.float32), "cos_cache"),
              numpy_helper.from_array(np.sin(ang).astype(np.float32), "sin_cache")]
    i32 = TensorProto.INT32
    for name, S, P, inter, softcap in (("contrib_gqa", 1, 7, 0, 0.0),
                                       ("contrib_gqa_two_tokens", 2, 4, 0, 0.0),
                                       ("contrib_gqa_interleaved", 1, 5, 1, 8.0)):
        past = "past_len" if name == "contrib_gqa" else P
        total = "past_len + 1" if name == "contrib_gqa" else P + S
        inputs = [value_info("q", F32, [1, S, 64]), value_info("k", F32, [1, S, 32]),
                  value_info("v", F32, [1, S, 32]),
                  value_info("past_key", F32, [1, 2, past, 16]),
                  value_info("past_value", F32, [1, 2, past, 16]),
                  value_info("seqlens_k", i32, [1]), value_info("total_len", i32, [])]
        outputs = [value_info("y", F32, [1, S, 64]),
                   value_info("present_key", F32, [1, 2, total, 16]),
                   value_info("present_value", F32, [1, 2, total, 16])]
        node = n("GroupQueryAttention", ["q", "k", "v", "past_key", "past_value", "seqlens_k",
                                         "total_len", "cos_cache", "sin_cache"],
                 ["y", "present_key", "present_value"], name="gqa", domain="com.microsoft",
                 num_heads=4, kv_num_heads=2, do_rotary=1, rotary_interleaved=inter,
                 softcap=softcap)
        feeds = {"q": f(1, S, 64), "k": f(1, S, 32), "v": f(1, S, 32),
                 "past_key": f(1, 2, P, 16), "past_value": f(1, 2, P, 16),
                 "seqlens_k": np.array([P + S - 1], np.int32),
                 "total_len": np.array(P + S, np.int32)}
        write_case(os.path.join(outdir, name),
                   contrib_model(name, node, inputs, outputs, caches), feeds)


def gen_causal_attention(outdir):
    """Attention (opset 23) with is_causal, onnxruntime's outputs as the
    reference: query s sees the positions up to the past's length plus s
    (top-left without a past). Four query heads over two key heads, head
    size 8: a chunk of five tokens with no past, two queries over four keys,
    and a chunk of four over a past of three with the present keys and
    values (the shape of a prompt chunk appended to a cache)."""
    rng = np.random.default_rng(23)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    n = helper.make_node
    for name, S, K, P in (("attention_causal", 5, 5, 0), ("attention_causal_wide", 2, 4, 0),
                          ("attention_causal_past", 4, 4, 3)):
        ins = ["q", "k", "v"] + (["", "past_key", "past_value"] if P else [])
        outs = ["y"] + (["present_key", "present_value"] if P else [])
        shapes = {"q": [1, 4, S, 8], "k": [1, 2, K, 8], "v": [1, 2, K, 8]}
        if P:
            shapes.update(past_key=[1, 2, P, 8], past_value=[1, 2, P, 8])
        oshapes = {"y": [1, 4, S, 8], "present_key": [1, 2, P + K, 8],
                   "present_value": [1, 2, P + K, 8]}
        graph = helper.make_graph(
            [n("Attention", ins, outs, name="attn", is_causal=1)], name,
            [value_info(i, F32, shapes[i]) for i in shapes],
            [value_info(o, F32, oshapes[o]) for o in outs])
        model = make_model(graph)
        model.opset_import[0].version = 23   # Attention is opset 23's
        model.ir_version = 11
        write_case(os.path.join(outdir, name), model, {i: f(*shapes[i]) for i in shapes})


def gen_trilu_mask(outdir):
    """Attention (opset 23) over a past of three with an additive mask built
    as transformers' _update_causal_mask builds it: a [S, P + S] fill of
    float32's lowest kept above diagonal P + 1 by Trilu (upper), the rest 0,
    k computed from the past's shape (Shape -> Gather -> Add). mkc takes the
    Trilu apart (passes/decompose.c) and computes the mask as given;
    onnxruntime's outputs are the reference. And a Trilu alone over symbolic
    axes with k a run-time input (trilu_symbolic)."""
    rng = np.random.default_rng(29)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    n = helper.make_node
    S, P = 4, 3
    shapes = {"q": [1, 4, S, 8], "k": [1, 2, S, 8], "v": [1, 2, S, 8],
              "past_key": [1, 2, P, 8], "past_value": [1, 2, P, 8]}
    lowest = np.array([np.finfo(np.float32).min], np.float32)
    inits = [numpy_helper.from_array(np.array([S, P + S], np.int64), "mask_shape"),
             numpy_helper.from_array(np.array(2, np.int64), "axis_pos"),
             numpy_helper.from_array(np.array(1, np.int64), "one")]
    nodes = [n("ConstantOfShape", ["mask_shape"], ["fill"], name="fill",
               value=numpy_helper.from_array(lowest, "value")),
             n("Shape", ["past_key"], ["past_shape"], name="past_shape"),
             n("Gather", ["past_shape", "axis_pos"], ["past_len"], name="past_len"),
             n("Add", ["past_len", "one"], ["diagonal"], name="diagonal"),
             n("Trilu", ["fill", "diagonal"], ["mask"], name="triu", upper=1),
             n("Attention", ["q", "k", "v", "mask", "past_key", "past_value"],
               ["y", "present_key", "present_value"], name="attn")]
    oshapes = {"y": [1, 4, S, 8], "present_key": [1, 2, P + S, 8],
               "present_value": [1, 2, P + S, 8]}
    graph = helper.make_graph(nodes, "attention_trilu_mask",
                              [value_info(i, F32, shapes[i]) for i in shapes],
                              [value_info(o, F32, oshapes[o]) for o in oshapes],
                              initializer=inits)
    model = make_model(graph)
    model.opset_import[0].version = 23
    model.ir_version = 11
    write_case(os.path.join(outdir, "attention_trilu_mask"), model,
               {i: f(*shapes[i]) for i in shapes})
    # Trilu over symbolic axes [S, L] with k a run-time input, lower (upper = 0)
    graph = helper.make_graph([n("Trilu", ["x", "k"], ["y"], name="tril", upper=0)],
                              "trilu_symbolic",
                              [value_info("x", F32, ["S", "L"]), value_info("k", I64, [])],
                              [value_info("y", F32, ["S", "L"])])
    write_case(os.path.join(outdir, "trilu_symbolic"), make_model(graph),
               {"x": f(3, 5), "k": np.array(1, np.int64)})


def gen_matmul_vector(outdir):
    """MatMul of a vector, as numpy's matmul: a vector [K] by a weight [K, N]
    (a row), rows [B, 3, K] (B symbolic) by a vector (a column), and two
    vectors (a scalar). mkc computes each as a product of a row or a column
    with the added axis squeezed (passes/decompose.c); onnxruntime's outputs
    are the reference."""
    rng = np.random.default_rng(36)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    n = helper.make_node
    K = 6
    nodes = [n("MatMul", ["v", "w"], ["row"], name="vector_by_weight"),
             n("MatMul", ["x", "u"], ["column"], name="rows_by_vector"),
             n("MatMul", ["v", "u"], ["dot"], name="vector_by_vector")]
    graph = helper.make_graph(nodes, "matmul_vector",
                              [value_info("v", F32, [K]), value_info("x", F32, ["B", 3, K]),
                               value_info("u", F32, [K])],
                              [value_info("row", F32, [5]), value_info("column", F32, ["B", 3]),
                               value_info("dot", F32, [])],
                              initializer=[numpy_helper.from_array(f(K, 5), "w")])
    write_case(os.path.join(outdir, "matmul_vector"), make_model(graph),
               {"v": f(K), "x": f(2, 3, K), "u": f(K)})


# -------------------------------------------------------------- bad inputs

def gen_raw_garbage(outdir, storage_bytes):
    write_bytes(os.path.join(outdir, "empty.onnx"), b"")
    write_bytes(os.path.join(outdir, "truncated.onnx"),
                storage_bytes[: len(storage_bytes) * 6 // 10])
    write_bytes(os.path.join(outdir, "random.onnx"), np.random.default_rng(1234).bytes(4096))


def float_graph(name, nodes, output, inits=(), shape=(2,)):
    """Graph with float input x and one float output, both of the given shape."""
    return helper.make_graph(nodes, name, [value_info("x", F32, list(shape))],
                             [value_info(output, F32, list(shape))],
                             initializer=list(inits))


def gen_unknown_op(outdir):
    nodes = [helper.make_node("Add", ["x", "x"], ["a"], name="add_ok"),
             helper.make_node("FrobnicateA", ["a"], ["b"], name="frob_a"),
             helper.make_node("Zork", ["b"], ["y"], name="zork_1")]
    write_model(outdir, "unknown_op.onnx", make_model(float_graph("unknown_op", nodes, "y")))


def gen_dangling(outdir):
    nodes = [helper.make_node("Add", ["x", "ghost"], ["y"], name="uses_ghost")]
    write_model(outdir, "dangling.onnx", make_model(float_graph("dangling", nodes, "y")))


def gen_cycle(outdir):
    nodes = [helper.make_node("Add", ["x", "b_out"], ["a_out"], name="cyc_a"),
             helper.make_node("Add", ["x", "a_out"], ["b_out"], name="cyc_b")]
    write_model(outdir, "cycle.onnx", make_model(float_graph("cycle", nodes, "b_out")))


def gen_dup_output(outdir):
    nodes = [helper.make_node("Identity", ["x"], ["dup"], name="w1"),
             helper.make_node("Neg", ["x"], ["dup"], name="w2")]
    write_model(outdir, "dup_output.onnx", make_model(float_graph("dup_output", nodes, "dup")))


def external_model(outdir, name, tensor_proto):
    """Model: external initializer -> Identity -> output."""
    node = helper.make_node("Identity", [tensor_proto.name], ["y"], name="id_" + tensor_proto.name)
    graph = helper.make_graph([node], name, [],
                              [value_info("y", F32, list(tensor_proto.dims))],
                              initializer=[tensor_proto])
    write_model(outdir, name + ".onnx", make_model(graph))


def gen_bad_external(outdir):
    external_model(outdir, "ext_missing", external("w", [4], "nope.bin", offset=0, length=16))
    write_bytes(os.path.join(outdir, "ext_short.bin"),
                np.arange(1, 6, dtype="<f4").tobytes())  # 20 bytes of the 64 needed
    external_model(outdir, "ext_short", external("w", [16], "ext_short.bin", offset=0, length=64))
    external_model(outdir, "ext_escape",
                   external("w", [4], "../../etc/passwd", offset=0, length=16))
    external_model(outdir, "ext_abs", external("w", [4], "/etc/passwd", offset=0, length=16))


# ------------------------------------------------------------ JSON forms

# Binary models written above that get a JSON twin in json/ (same stem;
# small_mlp/model.onnx becomes small_mlp.json).
JSON_TWINS = ("storage.onnx", "external.onnx", "attrs.onnx", "constants.onnx",
              "symbolic.onnx", "small_mlp/model.onnx")

# Fields of 64-bit integers (written as strings) and of enums (written as
# names), in their JSON names: protobuf's parser also takes numbers for both.
INT64_FIELDS = ("irVersion", "version", "dims", "dimValue", "i", "ints")
ENUM_FIELDS = {"type": onnx.AttributeProto.AttributeType,
               "dataLocation": TensorProto.DataLocation}


def onnx_json(model, **options):
    """The model as onnx.save(model, path, format="json") writes it (onnx's
    JSON serializer is MessageToJson with the proto field names), or, with
    options, as MessageToJson with those options writes it.  Checks that the
    text is deterministic and parses back to the same model."""
    if options:
        write = lambda m: json_format.MessageToJson(m, **options).encode("utf-8")
    else:
        write = onnx.serialization.registry.get("json").serialize_proto
    data = write(model)
    again = write(onnx.ModelProto.FromString(model.SerializeToString()))
    assert data == again, "onnx's JSON output is not deterministic"
    return checked_json(data, model)


def checked_json(data, model):
    back = json_format.Parse(data, onnx.ModelProto())
    assert back.SerializeToString() == model.SerializeToString(), "JSON does not round-trip"
    return data


def read_model(path):
    """A model written above, as bytes on disk (external data not loaded)."""
    with open(path, "rb") as f:
        return onnx.ModelProto.FromString(f.read())


def as_numbers(value, key=None):
    """JSON (as Python objects) with 64-bit integers and enums as numbers."""
    if isinstance(value, dict):
        return {k: as_numbers(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [as_numbers(v, key) for v in value]
    if key in INT64_FIELDS and isinstance(value, str):
        return int(value)
    if key in ENUM_FIELDS and isinstance(value, str):
        return ENUM_FIELDS[key].Value(value)
    return value


def gen_json(outdir):
    folder = os.path.join(outdir, "json")
    for rel in JSON_TWINS:
        stem = rel.split("/")[0].replace(".onnx", "")
        write_bytes(os.path.join(folder, stem + ".json"),
                    onnx_json(read_model(os.path.join(outdir, rel))))
    with open(os.path.join(outdir, "external.bin"), "rb") as f:
        write_bytes(os.path.join(folder, "external.bin"), f.read())
    # the other spellings: lowerCamelCase names; numbers for int64 and enums
    storage = read_model(os.path.join(outdir, "storage.onnx"))
    write_bytes(os.path.join(folder, "storage_camel.json"), onnx_json(storage, indent=1))
    for stem in ("attrs", "external"):
        model = read_model(os.path.join(outdir, stem + ".onnx"))
        text = json.loads(onnx_json(model, indent=1))
        data = json.dumps(as_numbers(text), indent=1).encode("utf-8")
        write_bytes(os.path.join(folder, stem + "_numbers.json"), checked_json(data, model))


def tiny_json_model():
    """x + w -> y with a raw float32 initializer w [2], as camelCase JSON
    objects: the base that each json_bad/ file breaks in one place."""
    node = helper.make_node("Add", ["x", "w"], ["y"], name="n1")
    w = numpy_helper.from_array(np.array([1, 2], np.float32), "w")
    graph = helper.make_graph([node], "bad", [value_info("x", F32, [2])],
                              [value_info("y", F32, [2])], initializer=[w])
    return json.loads(onnx_json(make_model(graph), indent=1))


def break_graph(path, value):
    """A function that sets graph[path...] = value in a fresh tiny model."""
    def apply(m):
        at = m["graph"]
        for key in path[:-1]:
            at = at[key]
        at[path[-1]] = value
        return m
    return apply


EXTERNAL_ESCAPE = {"name": "w", "dims": ["2"], "dataType": 1,
                   "externalData": [{"key": "location", "value": "../external.bin"}],
                   "dataLocation": "EXTERNAL"}

# json_bad/ files made by breaking the tiny model in one place
BAD_JSON = {
    "graph_string": lambda m: dict(m, graph="main"),
    "dims_not_array": break_graph(["initializer", 0, "dims"], "2"),
    "input_name_number": break_graph(["input", 0, "name"], 5),
    "node_input_string": break_graph(["node", 0, "input"], "x"),
    "bad_base64": break_graph(["initializer", 0, "rawData"], "AACAP*AAAEA="),
    "bad_padding": break_graph(["initializer", 0, "rawData"], "AACAPwAAAEA=="),
    "ext_escape": break_graph(["initializer", 0], EXTERNAL_ESCAPE),
    "dangling": break_graph(["node", 0, "input"], ["x", "ghost"]),
    "unknown_dtype": break_graph(["initializer", 0, "dataType"], 99),
    "bad_enum": break_graph(["node", 0, "attribute"], [{"name": "axis", "i": "0", "type": "INTEGER"}]),
    "inexact_number": break_graph(["initializer", 0, "dims"], [9007199254740993]),
    "both_spellings": break_graph(["initializer", 0, "raw_data"], "AACAPwAAAEA="),
    "dim_oneof": break_graph(["input", 0, "type", "tensorType", "shape", "dim", 0],
                             {"dimValue": "2", "dimParam": "n"}),
    # keys onnx.proto does not know, which protobuf's JSON parser refuses
    "misspelled_attributes": break_graph(["node", 0, "attributes"],
                                         [{"name": "axis", "i": "1", "type": "INT"}]),
    "unknown_dim_key": break_graph(["input", 0, "type", "tensorType", "shape", "dim", 0],
                                   {"dim_valu": "2"}),
    "unknown_model_key": lambda m: dict(m, producerNme="x"),
    "unknown_far_key": break_graph(["initializer", 0, "frobnicate"], 1),
}
UNKNOWN_KEYS = ("misspelled_attributes", "unknown_dim_key", "unknown_model_key",
                "unknown_far_key")


def gen_bad_json(outdir):
    folder = os.path.join(outdir, "json_bad")
    for name, breaks in BAD_JSON.items():
        data = json.dumps(breaks(tiny_json_model()), indent=1).encode("utf-8")
        if name in UNKNOWN_KEYS:
            try:
                json_format.Parse(data, onnx.ModelProto())
                raise AssertionError("protobuf's JSON parser took " + name)
            except json_format.ParseError:
                pass
        write_bytes(os.path.join(folder, name + ".json"), data)
    text = json.dumps(tiny_json_model(), indent=1).encode("utf-8")
    write_bytes(os.path.join(folder, "truncated.json"), text[: len(text) // 2])
    write_bytes(os.path.join(folder, "malformed.json"),  # no comma after line 2
                text.replace(b'"irVersion": "10",', b'"irVersion": "10"', 1))
    write_bytes(os.path.join(folder, "not_object.json"), b"[1, 2]\n")
    write_bytes(os.path.join(folder, "no_graph.json"), b"{}\n")
    write_bytes(os.path.join(folder, "empty.json"), b"")
    write_bytes(os.path.join(folder, "nul_byte.json"), b'{"irVersion": "10"\x00}\n')


# -------------------------------------------------------------------- main

def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = argv[1] if len(argv) > 1 else os.path.join(here, "hand")
    os.makedirs(outdir, exist_ok=True)
    storage_bytes = gen_storage(outdir)
    gen_external(outdir)
    gen_attrs(outdir)
    gen_constants(outdir)
    gen_symbolic(outdir)
    gen_symbolic_product(outdir)
    gen_matmul_mismatch(outdir)
    gen_small_mlp(outdir)
    gen_small_mlp_ext(outdir)
    gen_elementwise_tiles(outdir)
    gen_escape_names(outdir)
    gen_contrib(outdir)
    gen_causal_attention(outdir)
    gen_trilu_mask(outdir)
    gen_matmul_vector(outdir)
    gen_ext_odd(outdir)
    gen_first_step(outdir)
    gen_nan_propagation(outdir)
    gen_pow_types(outdir)
    gen_norm_broadcast(outdir)
    gen_raw_garbage(outdir, storage_bytes)
    gen_unknown_op(outdir)
    gen_dangling(outdir)
    gen_cycle(outdir)
    gen_dup_output(outdir)
    gen_bad_external(outdir)
    gen_json(outdir)
    gen_bad_json(outdir)
    print("wrote models to", outdir)


if __name__ == "__main__":
    main(sys.argv)

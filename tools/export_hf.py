#!/usr/bin/env python3
"""Exports a Hugging Face decoder to ONNX as one decode step with an explicit KV cache.

    python3 tools/export_hf.py OUTDIR (--config FAMILY:SIZE | --from-folder HF_DIR)
            [--opset 18|23] [--dtype float32|bfloat16] [--past-len N] [--seed S]
            [--external-data] [--no-test-data] [--bf16-initializers] [--chunks]

Models: LlamaForCausalLM (SmolLM2-class models are Llama), Qwen2ForCausalLM, Qwen3ForCausalLM.

--config FAMILY:SIZE builds a model with random weights from a built-in config, downloading
nothing. FAMILY is llama, qwen2 or qwen3; SIZE is
    tiny   hidden 256, 2 layers, 8 heads, 2 KV heads, head_dim 32, FFN 512, vocab 1024, tied
           embeddings (llama: rope_theta 500000, the shape of tests/models/tiny_llama_*)
    small  hidden 512, 4 layers, 8 heads, 4 KV heads, head_dim 64, FFN 1536, vocab 4096,
           untied lm_head
    1b     llama: Llama-3.2-1B (hidden 2048, 16 layers, 32 heads, 8 KV, head_dim 64, FFN 8192,
           vocab 128256, tied, llama3 rope scaling: theta 500000, factor 32, low 1, high 4,
           original 8192); qwen3: Qwen3-0.6B (hidden 1024, 28 layers, 16 heads, 8 KV,
           head_dim 128, FFN 3072, vocab 151936, tied); qwen2: Qwen2.5-0.5B (hidden 896,
           24 layers, 14 heads, 2 KV, head_dim 64, FFN 4864, vocab 151936, tied)
qwen2 has q/k/v biases, qwen3 per-head q/k RMSNorm; both use rope_theta 1e6. Weights are
seeded (--seed, default 0): normal with std 0.02 (0.05 for tiny), biases likewise, norm
scales uniform in [0.8, 1.2], so that the logits are not degenerate.
--from-folder HF_DIR loads a local Hugging Face folder (config.json and safetensors) with
from_pretrained, local files only, in float32.

What comes out, in OUTDIR:
    model.onnx   one decode step, made by torch.onnx.export(dynamo=True). Inputs, in order:
                 input_ids int64 [1,1], position_ids int64 [1,1], then for each layer i
                 past_key_values.{i}.key and past_key_values.{i}.value float32
                 [1, kv_heads, past_len, head_dim]. Outputs, in order: logits float32
                 [1,1,vocab], then for each layer present.{i}.key and present.{i}.value
                 [1, kv_heads, past_len + 1, head_dim]. past_len is a symbolic dimension
                 named "past_len"; the present tensors' dimension is named "past_len + 1".
                 Opset 18 gives RMSNorm, RoPE and attention decomposed into elementary ops;
                 opset 23 gives RMSNormalization, RotaryEmbedding and Attention nodes.
                 Attention is exported from the "sdpa" implementation with no attention
                 mask input (transformers makes the causal mask from the cache length).
    model.onnx.data  the weights, with --external-data (all tensors over 1024 bytes, in one
                 file). Chosen automatically when the weights exceed 2 GB (protobuf's limit).
    test_data_set_0/input_K.pb, output_K.pb (unless --no-test-data): TensorProtos in graph
                 input/output order, past_len = --past-len (default 7) random past keys and
                 values (normal, std 1, seeded), one random token, position_ids = past_len.
                 The outputs are PyTorch's (the same wrapper module, float32, eager). If
                 onnxruntime is importable the exported model is run on the same inputs and
                 the error against PyTorch is printed per output, as max|ort - torch| divided
                 by max|torch|; above 1e-4 the script fails (exit 1).
    With --chunks, a step of seq_len new tokens (mkc --max-chunk): input_ids and position_ids
                 [1, seq_len], logits [1, seq_len, vocab] (every new position's, as the model
                 gives them), presents [1, kv_heads, past_len + seq_len, head_dim]; the
                 causal mask is the exporter's own (Range, LessOrEqual, Expand; at opset 18
                 an additive Where). test_data_set_0..3 hold the steps (seq_len, past_len)
                 of CHUNK_CASES: 5 after 7, 1 after 6, 9 after 3, 4 into an empty cache.
    export.json  family, size, source, config, dtype, opset, seed, past_len, input and
                 output names, versions of torch, transformers, onnx, onnxscript.

--dtype bfloat16: the parameters are rounded to bf16 (buffers such as the rotary inv_freq
stay float32) and the graph
is exported in float32 from the rounded weights: the initializers are float32 holding
bf16-exact values (twice the size of bf16), and activations, inputs and outputs are float32.
`mkc --weights bf16` then stores them as bf16 without loss. The reference outputs are PyTorch
float32 on the rounded weights. The torch exporter cannot itself give bf16 weights with
float32 activations (a bf16 model exports bf16 arithmetic throughout), so with
--bf16-initializers the script rewrites the graph after export: every float32 initializer of
at least 1024 elements whose values are all bf16-exact becomes a BFLOAT16 initializer
followed by a Cast to float32 (lossless; halves the file). onnxruntime runs that form; mkc
reads such a weight as a bf16 weight and drops the Cast when every reader of the widened
weight takes bf16 weights (MatMul, Gemm, Gather, the norms). A tied embedding that the export
also transposes for the output layer is not such a weight, and mkc then refuses the file
("tensor '...' is bfloat16, which the c target does not handle yet"), hence not the default.

Needs: torch (the exporter; written for torch 2.11), transformers (written for 5.17:
DynamicCache(config=...) filled with update(), config `rope_parameters`), onnx,
onnxscript and onnx_ir (which torch.onnx's dynamo exporter uses), numpy; onnxruntime is
optional (the check above). Runs on the CPU; no GPU needed. Memory: roughly three times the
float32 weights (the model, the exporter's transposed copies, saving); the 1b llama is
about 5 GB of float32 weights.

Errors in the command line or inputs (unknown family or size, missing folder, unsupported
model_type) are one line on stderr and exit status 1.
"""
import argparse
import json
import os
import sys
import time

FAMILIES = ("llama", "qwen2", "qwen3")
SIZES = ("tiny", "small", "1b")
MODEL_TYPES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}
PROTOBUF_LIMIT = 2 * 1024**3
EXTERNAL_ABOVE = PROTOBUF_LIMIT - 256 * 1024**2   # a margin for the graph itself
REL_TOLERANCE = 1e-4
CHUNK_CASES = ((5, 7), (1, 6), (9, 3), (4, 0))   # --chunks: (seq_len, past_len) a data set
T0 = time.time()


def die(msg):
    print(f"export_hf.py: {msg}", file=sys.stderr)
    sys.exit(1)


def progress(msg):
    print(f"[{time.time() - T0:7.1f}s] {msg}", flush=True)


class ArgParser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 1, as the other errors
        die(f"{message} (see --help)")


# --- configs ---------------------------------------------------------------------------------

def shape_for(family, size):
    """The config fields of FAMILY:SIZE, with transformers 5's rope_parameters spelling."""
    if size == "tiny":
        s = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8,
                 num_key_value_heads=2, head_dim=32, intermediate_size=512, vocab_size=1024,
                 tie_word_embeddings=True, max_position_embeddings=2048)
    elif size == "small":
        s = dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
                 num_key_value_heads=4, head_dim=64, intermediate_size=1536, vocab_size=4096,
                 tie_word_embeddings=False, max_position_embeddings=4096)
    elif family == "llama":  # Llama-3.2-1B
        s = dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                 num_key_value_heads=8, head_dim=64, intermediate_size=8192, vocab_size=128256,
                 tie_word_embeddings=True, max_position_embeddings=131072)
    elif family == "qwen3":  # Qwen3-0.6B
        s = dict(hidden_size=1024, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, intermediate_size=3072, vocab_size=151936,
                 tie_word_embeddings=True, max_position_embeddings=40960)
    else:  # qwen2: Qwen2.5-0.5B
        s = dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2, head_dim=64, intermediate_size=4864, vocab_size=151936,
                 tie_word_embeddings=True, max_position_embeddings=32768)
    if family == "llama":
        rope = dict(rope_type="default", rope_theta=500000.0)
        if size == "1b":
            rope = dict(rope_type="llama3", rope_theta=500000.0, factor=32.0,
                        low_freq_factor=1.0, high_freq_factor=4.0,
                        original_max_position_embeddings=8192)
        s.update(rms_norm_eps=1e-5, attention_bias=False, mlp_bias=False)
    else:
        rope = dict(rope_type="default", rope_theta=1000000.0)
        s.update(rms_norm_eps=1e-6, use_sliding_window=False)
    s.update(rope_parameters=rope, hidden_act="silu", bos_token_id=1, eos_token_id=2)
    return s


def make_config(family, size):
    import transformers
    cls = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config,
           "qwen3": transformers.Qwen3Config}[family]
    return cls(**shape_for(family, size))


def randomize(model, seed, std):
    """Seeded weights: normal(0, std) for matrices, embeddings and biases, uniform [0.8, 1.2]
    for norm scales. named_parameters() lists a tied embedding once."""
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.split(".")[-2]:   # input_layernorm, q_norm, model.norm, ...
                v = torch.rand(p.shape, generator=g, dtype=torch.float32) * 0.4 + 0.8
            else:
                v = torch.randn(p.shape, generator=g, dtype=torch.float32) * std
            p.copy_(v)


def build_model(args):
    import torch
    import transformers
    if args.config:
        family, _, size = args.config.partition(":")
        config = make_config(family, size)
        progress(f"building {family}:{size} with random weights (seed {args.seed})")
        with torch.device("cpu"):
            model = transformers.AutoModelForCausalLM.from_config(
                config, attn_implementation="sdpa", dtype=torch.float32)
        randomize(model, args.seed, 0.05 if size == "tiny" else 0.02)
    else:
        progress(f"loading {args.from_folder}")
        try:
            model, info = transformers.AutoModelForCausalLM.from_pretrained(
                args.from_folder, local_files_only=True, attn_implementation="sdpa",
                dtype=torch.float32, output_loading_info=True)
        except Exception as e:  # a broken folder: say what transformers said, in one line
            die(f"{args.from_folder}: cannot load the model: "
                f"{' '.join(str(e).split())[:400]}")
        # transformers fills missing weights with random ones and only warns: refuse that.
        missing = sorted(info.get("missing_keys") or [])
        if missing:
            die(f"{args.from_folder}: {len(missing)} weights missing from the safetensors "
                f"(first: {missing[0]})")
        model = model.float()
    if args.dtype == "bfloat16":
        # round the parameters only: buffers such as the rotary inv_freq stay float32,
        # as in a bf16 checkpoint loaded for float32 inference
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(torch.bfloat16).float())
    model.eval()
    model.config.use_cache = True
    return model


def check_folder(path):
    """One-line errors for a folder that is missing or holds an unsupported model."""
    if not os.path.isdir(path):
        die(f"{path}: no such folder")
    cfg = os.path.join(path, "config.json")
    if not os.path.isfile(cfg):
        die(f"{path}: no config.json (a Hugging Face model folder holds config.json and "
            f"safetensors weights)")
    try:
        with open(cfg) as f:
            model_type = json.load(f).get("model_type")
    except (OSError, ValueError) as e:
        die(f"{cfg}: cannot read: {e}")
    if model_type not in MODEL_TYPES:
        die(f"{cfg}: model_type {model_type!r} is not supported "
            f"(supported: {', '.join(FAMILIES)})")
    return model_type


# --- the decode step -------------------------------------------------------------------------

def make_wrapper(model):
    import torch
    from transformers import DynamicCache

    class DecodeStep(torch.nn.Module):
        """forward(input_ids, position_ids, k0, v0, k1, v1, ...) -> (logits, k0', v0', ...)."""

        def __init__(self, m):
            super().__init__()
            self.m = m   # initializers come out named m.model.layers.0...., as in tests/models
            self.n_layers = m.config.num_hidden_layers

        def forward(self, input_ids, position_ids, *past):
            cache = DynamicCache(config=self.m.config)
            for i in range(self.n_layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.m(input_ids=input_ids, position_ids=position_ids,
                         past_key_values=cache, use_cache=True)
            present = []
            for layer in out.past_key_values.layers:
                present += [layer.keys, layer.values]
            return (out.logits, *present)

    return DecodeStep(model).eval()


def io_names(n_layers):
    ins = ["input_ids", "position_ids"]
    outs = ["logits"]
    for i in range(n_layers):
        ins += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        outs += [f"present.{i}.key", f"present.{i}.value"]
    return ins, outs


def sample_inputs(config, past_len, seed, seq_len=1):
    import torch
    g = torch.Generator().manual_seed(seed + 1)
    kv = config.num_key_value_heads
    hd = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    ids = torch.randint(0, config.vocab_size, (1, seq_len), generator=g, dtype=torch.int64)
    pos = torch.arange(past_len, past_len + seq_len, dtype=torch.int64)[None]
    past = [torch.randn(1, kv, past_len, hd, generator=g, dtype=torch.float32)
            for _ in range(2 * config.num_hidden_layers)]
    return (ids, pos, *past)


def quiet_exporter():
    """Silences the exporter's harmless noise: torchvision ops not registered, the note that
    two axes share the name past_len, a pytree deprecation."""
    import logging
    import warnings
    logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=".*will not be used, since it shares the same shape")
    warnings.filterwarnings("ignore", message=".*isinstance\\(treespec, LeafSpec\\)")


def export(wrapper, inputs, opset, in_names, out_names, max_len, chunks=False):
    import torch
    quiet_exporter()
    past_len = torch.export.Dim("past_len", min=1, max=max_len)
    # torch.export sees forward(input_ids, position_ids, *past) as three arguments, the last
    # a tuple: the shapes follow that structure.
    step = {1: torch.export.Dim("seq_len", min=2, max=max_len)} if chunks else None
    dynamic_shapes = (step, step, tuple({2: past_len} for _ in inputs[2:]))
    with torch.no_grad():
        prog = torch.onnx.export(wrapper, inputs, dynamo=True, opset_version=opset,
                                 input_names=in_names, output_names=out_names,
                                 dynamic_shapes=dynamic_shapes, optimize=True)
    return prog


def fix_interface(model, in_names, out_names, chunks=False):
    """Checks the names and order of the inputs and outputs, and names the KV length
    "past_len" (renaming the exporter's symbol wherever it appears, expressions included)
    and the present length "past_len + 1" ("past_len + seq_len" with chunks). Returns the
    exporter's two names."""
    import re
    import onnx_ir as ir
    got_in = [v.name for v in model.graph.inputs]
    got_out = [v.name for v in model.graph.outputs]
    if got_in != in_names or got_out != out_names:
        die(f"the exporter gave inputs {got_in} and outputs {got_out}; expected {in_names} "
            f"and {out_names}")
    past_dims = {str(v.shape[2]) for v in model.graph.inputs[2:]}
    pres_dims = {str(v.shape[2]) for v in model.graph.outputs[1:]}
    if len(past_dims) != 1 or len(pres_dims) != 1:
        die(f"past and present lengths are not one symbol each: {past_dims}, {pres_dims}")
    old, old_pres = past_dims.pop(), pres_dims.pop()

    def is_sym(d):
        return isinstance(d, ir.SymbolicDim) and d.value

    if old != "past_len":
        pat = re.compile(r"\b" + re.escape(old) + r"\b")
        for v in list(model.graph.inputs) + [o for n in model.graph for o in n.outputs]:
            if v.shape is not None and any(is_sym(d) and pat.search(d.value) for d in v.shape):
                v.shape = ir.Shape([pat.sub("past_len", d.value) if is_sym(d) else d
                                    for d in v.shape])
    present = "past_len + seq_len" if chunks else "past_len + 1"
    for v in model.graph.outputs[1:]:
        if str(v.shape[2]) != present:
            dims = list(v.shape)
            dims[2] = present
            v.shape = ir.Shape(dims)
    return old, old_pres


def strip_metadata(model):
    """Drops the exporter's debug metadata (stack traces, FX node names, the graph signature)
    from the graph, its nodes and values, as in the models of tests/models."""
    g = model.graph
    g.metadata_props.clear()
    for v in list(g.inputs) + list(g.outputs) + list(g.initializers.values()):
        v.metadata_props.clear()
    for node in g:
        node.metadata_props.clear()
        for v in node.outputs:
            v.metadata_props.clear()


def bf16_initializers(model):
    """Stores each float32 initializer that is bf16-exact (and >= 1024 elements) as BFLOAT16
    followed by a Cast to float32. Returns the count and bytes saved."""
    import ml_dtypes
    import numpy as np
    import onnx_ir as ir
    g = model.graph
    n = saved = 0
    for name, init in list(g.initializers.items()):
        if init.const_value is None or init.dtype != ir.DataType.FLOAT:
            continue
        a = init.const_value.numpy()
        if a.size < 1024:
            continue
        b = a.astype(ml_dtypes.bfloat16)
        if not np.array_equal(b.astype(np.float32), a, equal_nan=True):
            continue
        new = ir.Value(name=name + ".bf16", shape=init.shape, type=ir.TensorType(ir.DataType.BFLOAT16),
                       const_value=ir.Tensor(b, name=name + ".bf16"))
        g.register_initializer(new)
        cast = ir.node("Cast", [new], attributes={"to": ir.DataType.FLOAT})
        cast.name = f"cast_{name}_to_float"
        out = cast.outputs[0]
        init.replace_all_uses_with(out)
        del g.initializers[name]
        out.name = name
        out.shape, out.type = init.shape, init.type
        g.insert_before(g[0], cast) if len(g) else g.append(cast)
        n += 1
        saved += a.nbytes // 2
    return n, saved


def initializer_bytes(model):
    total = 0
    for v in model.graph.initializers.values():
        if v.const_value is not None:
            total += v.const_value.nbytes
    return total


# --- test data -------------------------------------------------------------------------------

def remove_test_data(outdir):
    """Removes input_K.pb / output_K.pb left by an earlier run: they would not match."""
    import glob
    old = glob.glob(os.path.join(outdir, "test_data_set_*", "input_*.pb")) + \
        glob.glob(os.path.join(outdir, "test_data_set_*", "output_*.pb"))
    for f in old:
        os.remove(f)
    return len(old)


def write_test_data(outdir, in_names, out_names, inputs, ref, k=0):
    import numpy as np
    from onnx import numpy_helper
    d = os.path.join(outdir, f"test_data_set_{k}")
    os.makedirs(d, exist_ok=True)
    for k, (name, t) in enumerate(zip(in_names, inputs)):
        with open(os.path.join(d, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.ascontiguousarray(t.numpy()), name).SerializeToString())
    for k, (name, a) in enumerate(zip(out_names, ref)):
        with open(os.path.join(d, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.ascontiguousarray(a), name).SerializeToString())


def check_ort(path, in_names, out_names, inputs, ref):
    try:
        import onnxruntime as ort
    except ImportError:
        progress("onnxruntime not importable: no ORT check")
        return
    import numpy as np
    progress("running the exported model in onnxruntime")
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    got = sess.run(out_names, {n: t.numpy() for n, t in zip(in_names, inputs)})
    worst = 0.0
    for name, a, b in zip(out_names, got, ref):
        if a.shape != b.shape:
            die(f"onnxruntime's {name} has shape {a.shape}, PyTorch's {b.shape}")
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        err = float(np.max(np.abs(a64 - b64)) / max(np.max(np.abs(b64)), 1e-30))
        l2 = float(np.linalg.norm(a64 - b64) / max(np.linalg.norm(b64), 1e-30))
        print(f"  ORT vs PyTorch {name:28s} max rel err {err:.3e}  rel L2 {l2:.3e}", flush=True)
        worst = max(worst, err)
    if not worst < REL_TOLERANCE:
        die(f"onnxruntime and PyTorch differ: max relative error {worst:.3e} >= {REL_TOLERANCE}")
    progress(f"ORT matches PyTorch (worst max rel err {worst:.3e})")


# --- main ------------------------------------------------------------------------------------

def parse_args(argv):
    p = ArgParser(description="Export a Hugging Face decoder to ONNX as one decode step "
                  "with an explicit KV cache (see the module docstring).")
    p.add_argument("outdir")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", metavar="FAMILY:SIZE",
                     help=f"random weights; FAMILY in {', '.join(FAMILIES)}, SIZE in {', '.join(SIZES)}")
    src.add_argument("--from-folder", metavar="HF_DIR", help="a local Hugging Face folder")
    p.add_argument("--opset", type=int, default=18, choices=(18, 23))
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    p.add_argument("--past-len", type=int, default=7)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--external-data", action="store_true",
                   help="weights in OUTDIR/model.onnx.data (automatic above 2 GB)")
    p.add_argument("--no-test-data", action="store_true")
    p.add_argument("--chunks", action="store_true",
                   help="a step of seq_len new tokens, its test data CHUNK_CASES")
    p.add_argument("--bf16-initializers", action="store_true",
                   help="with --dtype bfloat16: store the weights as BFLOAT16 initializers "
                   "+ Cast (mkc does not read this form yet)")
    a = p.parse_args(argv)
    if a.config:
        family, sep, size = a.config.partition(":")
        if not sep:
            die(f"--config takes FAMILY:SIZE, not {a.config!r}")
        if family not in FAMILIES:
            die(f"unknown family {family!r} (known: {', '.join(FAMILIES)})")
        if size not in SIZES:
            die(f"unknown size {size!r} (known: {', '.join(SIZES)})")
    if a.bf16_initializers and a.dtype != "bfloat16":
        die("--bf16-initializers needs --dtype bfloat16")
    if a.past_len < 1:
        die("--past-len must be at least 1")
    return a


def main(argv):
    args = parse_args(argv)
    if args.from_folder:
        check_folder(args.from_folder)
    try:
        import numpy as np
        import onnx
        import onnx_ir as ir
        import onnxscript
        import torch
        import transformers
    except ImportError as e:
        die(f"{e.name or e} is not installed (needs torch, transformers, onnx, onnxscript)")

    model = build_model(args)
    config = model.config
    if config.model_type not in MODEL_TYPES:
        die(f"model_type {config.model_type!r} is not supported")
    n_layers = config.num_hidden_layers
    in_names, out_names = io_names(n_layers)
    wrapper = make_wrapper(model)
    cases = CHUNK_CASES if args.chunks else ((1, args.past_len),)
    sets = [sample_inputs(config, p, args.seed + k, s) for k, (s, p) in enumerate(cases)]
    inputs = sets[0]
    n_params = sum(p.numel() for p in model.parameters())
    progress(f"{config.model_type}: {n_layers} layers, hidden {config.hidden_size}, "
             f"vocab {config.vocab_size}, {n_params / 1e6:.1f}M parameters")

    refs = None
    if not args.no_test_data:
        progress(f"PyTorch reference (seq_len, past_len: {cases})")
        with torch.no_grad():
            refs = [[t.detach().float().numpy().copy() for t in wrapper(*x)] for x in sets]

    progress(f"exporting with torch.onnx.export(dynamo=True, opset_version={args.opset})")
    max_len = max(int(getattr(config, "max_position_embeddings", 4096)) - 1, args.past_len + 1)
    # torch.export specialises a dimension whose example size is 0 or 1: trace with 7.
    # (a step of seq_len: trace with 5 new after 7)
    sample = sample_inputs(config, 7, args.seed, 5) if args.chunks else \
        inputs if args.past_len >= 2 else sample_inputs(config, 7, args.seed)
    prog = export(wrapper, sample, args.opset, in_names, out_names, max_len, args.chunks)
    m = prog.model
    past_dim, pres_dim = fix_interface(m, in_names, out_names, args.chunks)
    if not args.chunks and (past_dim, pres_dim) != ("past_len", "past_len + 1"):
        progress(f"renamed the exporter's KV dims {past_dim!r}, {pres_dim!r} to "
                 f"'past_len', 'past_len + 1'")
    strip_metadata(m)
    if args.bf16_initializers:
        n, saved = bf16_initializers(m)
        progress(f"{n} initializers stored as bf16 (+Cast to float32), {saved / 1e6:.1f} MB saved")

    os.makedirs(args.outdir, exist_ok=True)
    path = os.path.join(args.outdir, "model.onnx")
    data_path = path + ".data"
    size = initializer_bytes(m)
    external = args.external_data or size > EXTERNAL_ABOVE
    if external and not args.external_data:
        progress(f"weights are {size / 1e9:.2f} GB: writing them to model.onnx.data")
    for p in (path, data_path):
        if os.path.exists(p):
            os.remove(p)
    progress(f"saving {path}" + (" and model.onnx.data" if external else ""))
    if external:
        ir.save(m, path, external_data="model.onnx.data", size_threshold_bytes=1024)
    else:
        ir.save(m, path)
    del prog, m
    onnx.checker.check_model(path)  # a path: works for models beyond 2 GB

    if remove_test_data(args.outdir) and refs is None:
        progress("removed the earlier test data files (they belong to another model)")
    for k, (x, ref) in enumerate(zip(sets, refs or [])):
        write_test_data(args.outdir, in_names, out_names, x, ref, k)
        progress(f"wrote test_data_set_{k} (seq_len {cases[k][0]}, past_len {cases[k][1]})")
        check_ort(path, in_names, out_names, x, ref)

    info = dict(
        source=dict(config=args.config) if args.config else dict(folder=os.path.abspath(args.from_folder)),
        family=config.model_type,
        size=args.config.partition(":")[2] if args.config else None,
        architecture=MODEL_TYPES[config.model_type],
        dtype=args.dtype,
        weights_in_graph="bfloat16 (+Cast)" if args.bf16_initializers else "float32",
        opset=args.opset,
        seed=args.seed if args.config else None,
        past_len=None if args.no_test_data else args.past_len,
        chunks=[list(c) for c in cases] if args.chunks else None,
        external_data=external,
        inputs=in_names,
        outputs=out_names,
        parameters=n_params,
        config=json.loads(config.to_json_string(use_diff=False)),
        versions=dict(torch=torch.__version__, transformers=transformers.__version__,
                      onnx=onnx.__version__, onnxscript=onnxscript.__version__,
                      onnx_ir=ir.__version__, numpy=np.__version__, python=sys.version.split()[0]),
        command=" ".join(["tools/export_hf.py"] + argv),
    )
    with open(os.path.join(args.outdir, "export.json"), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    sizes = [f"model.onnx {os.path.getsize(path) / 1e6:.1f} MB"]
    if os.path.exists(data_path):
        sizes.append(f"model.onnx.data {os.path.getsize(data_path) / 1e6:.1f} MB")
    progress(f"done: {args.outdir} ({', '.join(sizes)})")


if __name__ == "__main__":
    main(sys.argv[1:])

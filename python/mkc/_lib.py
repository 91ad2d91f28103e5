"""The C API of a file mkc emitted, through ctypes: one table of signatures.

A file compiled as `mkc MODEL -o llama.c` (or .cu, .hip) and built as a
shared library exports `llama_create`, `llama_step`, ... (runtime/api_h.h in
the mkc tree says what each does). `bind(path, prefix)` loads the library and
gives every function its argument and result types, so a call with the wrong
types fails in Python instead of in C.
"""

import ctypes as C

P = C.c_void_p            # the model handle
I64P = C.POINTER(C.c_int64)
INTP = C.POINTER(C.c_int)


class Options(C.Structure):
    _fields_ = [("nthreads", C.c_int), ("shuffle_seed", C.c_uint), ("timeout_s", C.c_double)]


class Sampling(C.Structure):
    _fields_ = [("temperature", C.c_float), ("top_k", C.c_int), ("top_p", C.c_float),
                ("seed", C.c_uint64), ("stop", I64P), ("n_stop", C.c_int)]


class Request(C.Structure):
    _fields_ = [("prompt", I64P), ("n_prompt", C.c_int), ("max_new", C.c_int),
                ("sampling", Sampling), ("out_tokens", I64P), ("n_out", C.c_int)]


ON_TOKEN = C.CFUNCTYPE(None, C.c_void_p, C.c_int, C.c_int64)

# name: (result, argument types)
SIGNATURES = {
    "create": (C.c_int, [C.POINTER(P), C.POINTER(Options)]),
    "load_weights": (C.c_int, [P, C.c_char_p]),
    "bind": (C.c_int, [P, C.c_char_p, C.c_void_p]),
    "step": (C.c_int, [P, C.POINTER(C.c_void_p), C.POINTER(C.c_void_p), I64P]),
    "generate": (C.c_int, [P, I64P, C.c_int, C.c_int, I64P]),
    "generate_with": (C.c_int, [P, I64P, C.c_int, C.c_int, C.POINTER(Sampling), I64P, INTP]),
    "sample": (C.c_int, [P, C.c_void_p, C.c_int64, C.POINTER(Sampling), I64P, I64P]),
    "generate_batch": (C.c_int, [P, C.POINTER(Request), C.c_int, ON_TOKEN, C.c_void_p]),
    "set_stream": (C.c_int, [P, C.c_void_p]),
    "profile_write": (C.c_int, [P, C.c_char_p]),
    "last_error": (C.c_char_p, [P]),
    "destroy": (None, [P]),
    "target": (C.c_char_p, []),
    "num_inputs": (C.c_int, []),
    "input_name": (C.c_char_p, [C.c_int]),
    "input_dtype": (C.c_int, [C.c_int]),
    "num_outputs": (C.c_int, []),
    "output_name": (C.c_char_p, [C.c_int]),
    "output_dtype": (C.c_int, [C.c_int]),
    "num_dims": (C.c_int, []),
    "dim_name": (C.c_char_p, [C.c_int]),
    "max_dim": (C.c_int64, [C.c_int]),
    "step_dim": (C.c_int, []),
    "input_shape": (C.c_int, [C.c_int, I64P, I64P]),
    "output_shape": (C.c_int, [C.c_int, I64P, I64P]),
    "num_caches": (C.c_int, []),
    "cache_name": (C.c_char_p, [C.c_int]),
    "cache_past_name": (C.c_char_p, [C.c_int]),
    "cache_capacity": (C.c_int64, []),
    "cache_len": (C.c_int64, [P]),
    "cache_dtype": (C.c_int, [C.c_int]),
    "cache_shape": (C.c_int, [C.c_int, C.c_int64, I64P]),
    "cache_reset": (C.c_int, [P]),
    "cache_load": (C.c_int, [P, C.c_int, C.c_void_p, C.c_int64]),
    "cache_read": (C.c_int, [P, C.c_int, C.c_void_p]),
    "max_seqs": (C.c_int, []),
    "page_size": (C.c_int64, []),
    "free_pages": (C.c_int64, [P]),
    "seq_open": (C.c_int, [P, INTP]),
    "seq_close": (C.c_int, [P, C.c_int]),
    "seq_fork": (C.c_int, [P, C.c_int, INTP]),
    "seq_len": (C.c_int64, [P, C.c_int]),
    "step_seqs": (C.c_int, [P, INTP, C.c_int64, C.POINTER(C.c_void_p), C.POINTER(C.c_void_p)]),
    "seq_cache_load": (C.c_int, [P, C.c_int, C.c_int, C.c_void_p, C.c_int64]),
    "seq_cache_read": (C.c_int, [P, C.c_int, C.c_int, C.c_void_p]),
}


class Lib:
    """The library's functions as attributes, without the prefix: lib.step(...)."""

    def __init__(self, path, prefix):
        self.path = path
        self.prefix = prefix
        self.dll = C.CDLL(path)
        for name, (res, args) in SIGNATURES.items():
            try:
                fn = getattr(self.dll, f"{prefix}_{name}")
            except AttributeError as e:
                raise OSError(f"{path}: no function {prefix}_{name}: not a library mkc "
                              f"emitted with --name {prefix} (or from an older mkc)") from e
            fn.restype = res
            fn.argtypes = args
            setattr(self, name, fn)

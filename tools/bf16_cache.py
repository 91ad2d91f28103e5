"""A transformers float32 reference whose KV cache is kept as mkc keeps a
bf16 one (mkc --kv bf16, the default for bf16 weights; passes/kv.c): every
new key and value rounded to bf16 (nearest even) as it enters the cache,
and used widened to float32 from then on, the current position included.
Everything else stays float32, so mkc's greedy tokens over a bf16 cache can
be held to the same standard as over a float32 one: identical.

    with bf16_cache(torch):
        toks = ... model(...) ...

Used by bench/run.py and tools/parity_hf.py (the GPU machine's
transformers 5; its DynamicCache.update takes the new keys and values of
one layer and returns the cache's).
"""
import contextlib


@contextlib.contextmanager
def bf16_cache(torch):
    from transformers.cache_utils import DynamicCache
    orig = DynamicCache.update

    def update(self, key_states, value_states, *args, **kwargs):
        def rnd(t):
            return t.to(torch.bfloat16).to(t.dtype)
        return orig(self, rnd(key_states), rnd(value_states), *args, **kwargs)

    DynamicCache.update = update
    try:
        yield
    finally:
        DynamicCache.update = orig

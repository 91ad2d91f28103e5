"""The draw of runtime/sample.h, in numpy, for logits the host holds (a
server's batched step): the same Gumbel-max trick on the same hash of (seed,
the position the token takes, its index), with top-k and top-p cutting at a
logit and keeping its ties. With the same logits it gives the token the
compiled model's own generate gives, but where exp and log round otherwise
than runtime/sample.h's fmaf versions at a near tie.
"""

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = 0x9E3779B97F4A7C15
_ODD = np.uint64(0xD1B54A32D192ED03)


def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def uniforms(seed, position, n):
    """u in (0, 1) for tokens 0..n-1 of the draw at position under seed."""
    with np.errstate(over="ignore"):
        base = (int(seed) + _GOLD * (int(position) + 1)) % (1 << 64)
        z = _mix(np.uint64(base))
        i = np.arange(1, n + 1, dtype=np.uint64)
        z = _mix(z ^ (_ODD * i))
    return ((z >> np.uint64(40)).astype(np.float64) + 0.5) * 2.0 ** -24


def draw(logits, temperature=0.0, top_k=0, top_p=0.0, seed=0, position=0):
    """The token drawn from a row of logits (the argmax at temperature 0)."""
    x = np.asarray(logits, dtype=np.float32).reshape(-1)
    x = np.where(np.isnan(x), -np.inf, x)
    first = int(np.argmax(x))
    if temperature <= 0 or not np.isfinite(x[first]):
        return first if x[first] > -np.inf else 0
    keep = x > -np.inf
    if 0 < top_k < len(x):
        kth = np.partition(x, len(x) - top_k)[len(x) - top_k]
        keep &= x >= kth
    if 0 < top_p < 1:
        w = np.where(keep, np.exp((x.astype(np.float64) - x[first]) / temperature), 0.0)
        order = np.argsort(-x, kind="stable")
        mass = np.cumsum(w[order])
        cut = int(np.searchsorted(mass, top_p * mass[-1]))
        keep &= x >= x[order[min(cut, len(x) - 1)]]
    g = -np.log(-np.log(uniforms(seed, position, len(x))))
    key = np.where(keep, x.astype(np.float64) / temperature + g, -np.inf)
    return int(np.argmax(key))

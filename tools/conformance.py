#!/usr/bin/env python3
"""Runs the ONNX backend node tests that Debian ships (libonnx-testdata) for
every op in ir/ops.def, through `mkc test --bind-consts` on the C target.

    python3 tools/conformance.py [--mkc build/mkc] [--data DIR] [--jobs N]
                                 [--update]

Every test of a supported op must pass, except those listed in
tests/conformance/expected_failures.txt, each with the reason; a listed test
that passes is an error too, so the list stays true. The `_expanded` tests
(an op written out as a graph of simpler ones) run too when every node of
theirs is a supported op, whatever op they expand. A pass whose outputs
were all folded to constants at compile time (mkc test says so) is counted
apart: the emitted code only writes literals, so it tests the folder, not
the tile bodies. The per-op results are written to
tests/conformance/RESULTS.md (with --update) or compared with it.
Exit status 0 only when everything matches.
"""
import argparse
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPECTED = os.path.join(ROOT, "tests/conformance/expected_failures.txt")
RESULTS = os.path.join(ROOT, "tests/conformance/RESULTS.md")

# Test folder names are the op's name in snake case, except these (a tuple: several names).
PREFIX = {"MatMul": "matmul", "IsNaN": "isnan", "CastLike": "castlike",
          "ConstantOfShape": "constantofshape", "LessOrEqual": "less_equal",
          "GreaterOrEqual": "greater_equal", "RMSNormalization": "rms_normalization",
          "And": "and", "Or": "or", "Trilu": ("tril", "triu")}
# Folders that share a prefix but test another op.
OTHER_OPS = ("gather_elements", "reduce_sum_square", "softmax_cross_entropy",
             "split_to_sequence", "constant_pad", "less_equal", "greater_equal",
             "reduce_max_bool")


def ops_of_table():
    ops = []
    for line in open(os.path.join(ROOT, "ir/ops.def")):
        m = re.match(r'OP\(\w+, "(\w+)", "(.*?)"', line)
        if m and m.group(2) == "":
            ops.append(m.group(1))
    return ops


def prefixes_of(op):
    p = PREFIX.get(op) or re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()
    return p if isinstance(p, tuple) else (p,)


def tests_of(op, names):
    found = []
    for p in prefixes_of(op):
        for n in names:
            rest = n[len("test_"):]
            if not rest.startswith(p) or n.endswith("_expanded"):
                continue
            tail = rest[len(p):]
            if tail and not (tail[0] == "_" or tail[0].isdigit()):
                continue
            if any(rest.startswith(o) and not p.startswith(o) for o in OTHER_OPS):
                continue
            found.append(n)
    return found


def op_types(graph):
    for n in graph.node:
        yield n.domain, n.op_type
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from op_types(g)


def expanded_tests(data, names, ops):
    """The _expanded tests made only of supported ops (default domain, no functions)."""
    found = []
    for n in names:
        if not n.endswith("_expanded"):
            continue
        m = onnx.load(os.path.join(data, n, "model.onnx"), load_external_data=False)
        if not m.functions and all(d in ("", "ai.onnx") and o in ops
                                   for d, o in op_types(m.graph)):
            found.append(n)
    return found


def run_chunk(mkc, data, chunk):
    cmd = [mkc, "test", "--bind-consts", "--steps", "1"] + [os.path.join(data, t) for t in chunk]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1) or not re.search(r"^\d+ passed, \d+ failed$", r.stdout, re.M):
        # mkc itself stopped early (a crash, a sanitizer report): show why
        print(f"mkc test of {' '.join(chunk)} ended without its summary (exit {r.returncode}):\n"
              f"{r.stderr[-3000:]}", file=sys.stderr)
    results = {}
    for line in r.stdout.splitlines():
        m = re.match(r"(PASS|FAIL) (\S+?)(?:/test_data_set_\d+)?: ?(.*)", line)
        if m:
            name = os.path.basename(m.group(2))
            ok = m.group(1) == "PASS"
            folded = ok and "(folded: " in m.group(3)
            prev = results.get(name)
            results[name] = (ok and (prev is None or prev[0]), m.group(3) if not ok else "",
                             folded and (prev is None or prev[2]))
    return results


def load_expected():
    exp = {}
    for line in open(EXPECTED):
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, why = line.partition(" ")
            exp[name] = why.strip()
    return exp


def passed(results, t):
    return results.get(t, (False, "", False))[0]


def folded(results, t):
    return results.get(t, (False, "", False))[2]


def table(ops, by_op, expanded, results):
    lines = ["# Conformance: ONNX node tests (libonnx-testdata) on the C target", "",
             "Written by `python3 tools/conformance.py --update`; `make conformance` checks it.",
             "Failures listed in expected_failures.txt, each with its reason. *Folded*: passes",
             "whose outputs constant folding computed at compile time (the emitted code writes",
             "literals, so they test the folder, not the tile bodies).", "",
             "| op | passed | of which folded | tests |", "| --- | --- | --- | --- |"]
    for op in ops:
        ts = by_op[op]
        ok = sum(1 for t in ts if passed(results, t))
        nf = sum(1 for t in ts if folded(results, t))
        lines.append(f"| {op} | {ok} | {nf} | {len(ts)} |")
    lines += ["", "## Expanded node tests made only of supported ops", "",
              "| test | result |", "| --- | --- |"]
    for t in expanded:
        r = "pass (folded)" if folded(results, t) else "pass" if passed(results, t) else "fail"
        lines.append(f"| {t} | {r} |")
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--mkc", default=os.path.join(ROOT, "build/mkc"))
    ap.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args(argv[1:])
    names = sorted(os.listdir(args.data))
    ops = ops_of_table()
    by_op = {op: tests_of(op, names) for op in ops}
    expanded = expanded_tests(args.data, names, set(ops))
    todo = sorted({t for ts in by_op.values() for t in ts} | set(expanded))
    # one `mkc test` a test, --jobs at a time: the slow ones (a C build each)
    # spread over the pool; the results are read in todo's order
    results = {}
    with ThreadPoolExecutor(args.jobs) as pool:
        for r in pool.map(lambda t: run_chunk(args.mkc, args.data, [t]), todo):
            results.update(r)
    expected = load_expected()
    bad = []
    for t in todo:
        ok, why, _ = results.get(t, (False, "no result", False))
        if not ok and t not in expected:
            bad.append(f"FAIL {t}: {why}")
        if ok and t in expected:
            bad.append(f"PASS {t}, listed as an expected failure: take it off the list")
    for t in expected:
        if t not in todo:
            bad.append(f"{t} is listed as an expected failure but is not a test of a supported op")
    text = table(ops, by_op, expanded, results)
    if args.update:
        open(RESULTS, "w").write(text)
    elif open(RESULTS).read() != text:
        bad.append("tests/conformance/RESULTS.md is out of date: run tools/conformance.py --update")
    npass = sum(1 for t in todo if passed(results, t))
    nfold = sum(1 for t in todo if folded(results, t))
    nexp = sum(1 for t in expanded if passed(results, t))
    for b in bad:
        print(b)
    print(f"conformance: {len(todo)} node tests ({len(expanded)} of them expanded) of "
          f"{len(ops)} ops: {npass} pass ({nfold} folded to constants, {nexp} expanded), "
          f"{len(todo) - npass} fail ({len(expected)} expected)")
    print(f"{npass} passed, {len(todo) - npass - len(expected)} failed" if not bad
          else f"{npass} passed, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

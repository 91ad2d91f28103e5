#!/usr/bin/env python3
"""Measures the numbers that README.md quotes and writes them into it, so
that none of them is typed by hand:

    python3 tools/readme_numbers.py [--mkc build/mkc]     (make numbers)
    python3 tools/readme_numbers.py --check               (make test)

- "Measured": the counts mkc reports for a Llama-3.2-1B-sized graph
  (tools/gen_llama.py, sparse weights) on 132 workers and for the two
  bundled Llama exports on 8, then the time and memory of that compile and
  of building its emitted C with cc on this machine;
- "Supported ops": the conformance counts, from tests/conformance/RESULTS.md
  (which tools/conformance.py writes and checks).

Each goes between a pair of markers in README.md (<!-- numbers -->,
<!-- /numbers -->; <!-- conformance -->, <!-- /conformance -->).
--check measures everything but the times and fails if the README says
otherwise (times depend on the machine, so only a real run writes them).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
RESULTS = os.path.join(ROOT, "tests/conformance/RESULTS.md")


def mkc_counts(mkc, model, workers, *extra):
    """read nodes, final nodes/tasks/events/edges, arena and queue lengths from mkc -v."""
    r = subprocess.run([mkc, model, "--workers", str(workers), "-v", "--dump-after=schedule",
                        *extra], capture_output=True, text=True, check=True)
    err = r.stderr
    c = {"read": int(re.search(r"read (\d+) nodes", err).group(1))}
    m = re.search(r": (\d+) nodes, (\d+) tasks, (\d+) events, (\d+) edges on", err)
    c.update(nodes=int(m.group(1)), tasks=int(m.group(2)), events=int(m.group(3)),
             edges=int(m.group(4)))
    m = re.search(r"memory: \d+ intermediates in (\d+) bytes \((\d+) without reuse\)", err)
    c.update(arena=int(m.group(1)), no_reuse=int(m.group(2)))
    queues = {}
    for w in re.findall(r"^task \d+ .* worker (\d+)\.\d+$", r.stdout, re.M):
        queues[w] = queues.get(w, 0) + 1
    c.update(qmin=min(queues.values()), qmax=max(queues.values()))
    return c


def timed(cmd):
    """Wall seconds and peak memory (MB) of one command, as /usr/bin/time measures them."""
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], check=True, capture_output=True,
                       text=True)
    secs, kb = r.stderr.strip().splitlines()[-1].split()
    return float(secs), int(kb) / 1024


def measured(mkc, with_times):
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, os.path.join(ROOT, "tools/gen_llama.py"), d],
                       check=True, capture_output=True)
        big = mkc_counts(mkc, d, 132)
        out = os.path.join(d, "llama.c")
        subprocess.run([mkc, d, "--workers", "132", "-o", out], check=True, capture_output=True)
        csize = os.path.getsize(out) / 1e6
        if with_times:
            secs, rss = timed([mkc, d, "--workers", "132"])
            cc_secs, _ = timed(["cc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-c", out,
                                "-o", os.path.join(d, "llama.o")])
    small = {v: mkc_counts(mkc, os.path.join(ROOT, f"tests/models/tiny_llama_decode_{v}"), 8)
             for v in ("op18", "op23")}
    items = [
        "Compile-time counts on a Llama-3.2-1B-sized graph (16 layers, hidden 2048, 32 heads, 8 KV "
        "heads, FFN 8192, vocab 128256; `python3 tools/gen_llama.py DIR` makes it with sparse "
        f"weights), for 132 workers: {big['read']} nodes in the file, {big['nodes']} after the "
        f"passes, into {big['tasks']} tasks, {big['events']} events and {big['edges']} dependencies "
        f"(after dropping implied ones), queues of {big['qmin']} to {big['qmax']} tasks, the "
        f"intermediates in one {big['arena'] / 1e6:.2f} MB arena ({big['no_reuse'] / 1e6:.1f} MB "
        f"without reuse); its emitted C is {csize:.1f} MB."]
    if with_times:
        items.append(f"On this 2-core machine: all passes and the proof in {secs:.2f} s and "
                     f"{rss:.0f} MB; the emitted C builds with `cc -O1 -Werror` in {cc_secs:.0f} s.")
    o18, o23 = small["op18"], small["op23"]
    items.append(f"The two bundled Llama exports on 8 workers: op18 {o18['read']} nodes in the file "
                 f"-> {o18['nodes']} nodes / {o18['tasks']} tasks, op23 {o23['read']} -> "
                 f"{o23['nodes']} / {o23['tasks']} (after canonicalisation, the fuse pass and the "
                 "KV-cache state pass).")
    lines = [textwrap.fill(i, 99, initial_indent="- ", subsequent_indent="  ") for i in items]
    return "\n".join(lines)


def conformance():
    text = open(RESULTS).read()
    rows = re.findall(r"^\| \w+ \| (\d+) \| (\d+) \| (\d+) \|$", text, re.M)
    ok, folded, n = (sum(int(r[i]) for r in rows) for i in range(3))
    exp = re.findall(r"^\| test_\w+ \| (pass|pass \(folded\)|fail) \|$", text, re.M)
    eok = sum(1 for r in exp if r != "fail")
    return (f"{ok} of {n} node tests of supported ops pass, {folded} of them only because constant "
            f"folding computed every output; {eok} of the {len(exp)} `_expanded` tests made only of "
            "supported ops pass")


def put(text, name, body, inline):
    sep = "" if inline else "\n"
    pat = re.compile(rf"(<!-- {name} -->)(?:{sep}.*?)?{sep}(<!-- /{name} -->)", re.S)
    if not pat.search(text):
        sys.exit(f"readme_numbers: README.md has no <!-- {name} --> markers")
    return pat.sub(lambda m: m.group(1) + sep + body + sep + m.group(2), text)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--mkc", default=os.path.join(ROOT, "build/mkc"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv[1:])
    old = open(README).read()
    numbers = measured(args.mkc, not args.check)
    if args.check:
        # the README's times stay; everything else must be what mkc says now
        m = re.search(r"^- On this 2-core machine:.*?\n(?=- )", old, re.M | re.S)
        if m:
            at = numbers.index("- The two bundled")
            numbers = numbers[:at] + m.group(0) + numbers[at:]
    new = put(put(old, "numbers", numbers, False), "conformance", conformance(), True)
    if args.check:
        if new != old:
            print("readme_numbers: README.md's numbers are out of date: run make numbers")
            return 1
        print("readme_numbers: README.md's counts are what mkc measures now")
        return 0
    open(README, "w").write(new)
    print(numbers)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Writes backends/core/reserved_names.h: every name that cannot be the API
prefix (mkc --name NAME) because the headers an emitted file includes
already declare or define it, or a name the prefix makes (NAME_create,
NAME_options, ...), for each target whose compiler is installed.

    python3 backends/core/gen_reserved.py [--mkc build/mkc] [--out FILE]

How, for each target (c: cc; cuda: nvcc; hip: hipcc):
  1. the header lines of a file mkc emits for it (hand/small_mlp), as the
     emitted file has them (the C target's _XOPEN_SOURCE 700 included);
  2. candidates: every identifier in those headers preprocessed (cc -E)
     and every macro they define (cc -dM -E), and the stem X of every such
     identifier X_s where $P_s is a name the runtime texts give (timer for
     timer_create), less the names emit.c refuses by their start anyway;
  3. a candidate that is an object-like macro, or makes one (X_s), collides;
     every other one is declared as the prefix is declared in an emitted
     file (a type and its struct, and a function for each $P_s), after the
     headers, under #line "cand/NAME"; the file is compiled and the
     candidates whose lines have errors collide. Compiled again without
     them until it compiles, then the colliding ones alone again, each of
     which must fail (one failing only beside another is not listed). A
     function-like macro does not collide: the prefix is never followed by
     a parenthesis (NAME_create is another name).

The header lists each name with the targets it collides in. mkc refuses
them all whatever the target (--name is checked before the target is
known); tests/compiler/test_names.c checks the C target's part on the
machine it runs on (every other candidate compiles, every listed name
fails), tests/toolchains/test_names.c the CUDA and HIP parts.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (target, output extension, preprocess command (-E, then -P or -dM as {p}),
# compile command, what says the versions); {f} is the file
TARGETS = [
    ("c", "c", "cc -std=c11 -E {p} {f}", "cc -std=c11 -fsyntax-only -fmax-errors=0 {f}",
     "cc --version | head -1; ldd --version | head -1"),
    ("cuda", "cu", "nvcc -x cu -E -Xcompiler {p} {f}",
     "nvcc -x cu -c -o /dev/null -Xcudafe --error_limit=1000000 {f}",
     "nvcc --version | grep release"),
    # host and device apart: clang skips the device side after host errors
    ("hip", "hip", "hipcc -x hip --offload-arch=gfx90a -E {p} {f}",
     "for s in host device; do hipcc -x hip --offload-arch=gfx90a --offload-$s-only "
     "-fsyntax-only -ferror-limit=0 {f} || r=1; done; exit $r",
     "hipcc --version 2>/dev/null | grep -i 'hip version'"),
]
BITS = {"c": 1, "cuda": 2, "hip": 4}

# emit.c's reserved_prefixes: refused whatever the list says
REFUSED_STARTS = ("mkc_", "MKC_", "_", "pthread_", "sched_", "atomic_", "memory_order", "cuda",
                  "hip", "O_", "F_", "AT_", "S_IF", "POSIX_FADV_")

IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


def suffixes():
    """Every $P_s the runtime texts name ('' for $P itself)."""
    found = {""}
    for folder in ("runtime", "backends/c", "backends/cuda", "backends/hip"):
        for name in os.listdir(os.path.join(ROOT, folder)):
            if name.endswith((".h", ".cuh")):
                text = open(os.path.join(ROOT, folder, name)).read()
                found.update(re.findall(r"\$P(_[A-Za-z0-9_]*)", text))
    return sorted(found)


def header_lines(mkc, ext, work):
    """The #define/#include lines at the top of a file mkc emits for the target."""
    out = os.path.join(work, "m." + ext)
    subprocess.run([mkc, os.path.join(ROOT, "tests/models/hand/small_mlp"), "-o", out],
                   check=True, capture_output=True)
    lines = []
    for line in open(out):
        if line.startswith(("#include <", "#define _XOPEN_SOURCE")):
            lines.append(line)
        elif lines:
            break
    return "".join(lines)


def run(cmd, path):
    p = subprocess.run(cmd.format(f=path), shell=True, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def candidates(pre, headers, sfx, work, ext):
    """The candidates, and those of them that an object-like macro makes
    collide (it rewrites the prefix, or a name made from it, wherever it
    stands): those are not compiled, since what a macro leaves can break
    the parse of the candidates after it."""
    src = os.path.join(work, "h." + ext)
    open(src, "w").write(headers)
    rc, text = run(pre.replace("{p}", "-P"), src)
    assert rc == 0, text
    rc, macros = run(pre.replace("{p}", "-dM"), src)
    assert rc == 0, macros
    objects = set(re.findall(r"^#define (\w+)(?:\s|$)", macros, re.M))
    names = set(IDENT.findall(text)) | set(re.findall(r"^#define (\w+)", macros, re.M))
    for n in list(names):
        for s in sfx:
            if s and n.endswith(s) and len(n) > len(s):
                names.add(n[: -len(s)])
    names = sorted(n for n in names if not n.startswith(REFUSED_STARTS))
    by_macro = {n for n in names if any(n + s in objects for s in sfx)}
    return names, by_macro


def block(name, sfx):
    decls = ["typedef struct %s %s;" % (name, name), "struct %s { int mkc_x; };" % name]
    decls += ["int %s%s(void);" % (name, s) for s in sfx if s]
    return ('#line 1 "cand/%s"\n#ifdef __cplusplus\nextern "C" {\n#endif\n%s\n'
            "#ifdef __cplusplus\n}\n#endif\n" % (name, "\n".join(decls)))


def failing(cc, headers, names, sfx, work, ext):
    """The names whose declarations have errors, in one compile."""
    src = os.path.join(work, "t." + ext)
    with open(src, "w") as f:
        f.write(headers)
        for n in names:
            f.write(block(n, sfx))
    rc, text = run(cc, src)
    bad = set(re.findall(r"cand/(\w+)[:(]", text)) & set(names)
    assert rc == 0 or bad, "the compile failed outside the candidates:\n" + text[:4000]
    return bad


def collisions(cc, headers, names, sfx, work, ext):
    hit, rest = set(), list(names)
    while True:
        bad = failing(cc, headers, rest, sfx, work, ext)
        if not bad:
            break
        hit |= bad
        rest = [n for n in rest if n not in bad]
    while True:   # each listed name must fail among the listed ones alone
        bad = failing(cc, headers, sorted(hit), sfx, work, ext)
        if bad == hit:
            return hit
        hit = bad


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--mkc", default=os.path.join(ROOT, "build/mkc"))
    ap.add_argument("--out", default=os.path.join(ROOT, "backends/core/reserved_names.h"))
    args = ap.parse_args(argv[1:])
    sfx = suffixes()
    found, used = {}, []
    with tempfile.TemporaryDirectory() as work:
        for target, ext, pre, cc, version in TARGETS:
            if not shutil.which(pre.split()[0]):
                sys.exit("gen_reserved: no %s for the %s target" % (pre.split()[0], target))
            headers = header_lines(args.mkc, ext, work)
            names, by_macro = candidates(pre, headers, sfx, work, ext)
            hit = by_macro | collisions(cc, headers, [n for n in names if n not in by_macro],
                                        sfx, work, ext)
            print("%s: %d candidates, %d collide" % (target, len(names), len(hit)))
            files = re.findall(r"<([^>]+)>|(_XOPEN_SOURCE \d+)", headers)
            said = subprocess.run(version, shell=True, capture_output=True, text=True).stdout
            used.append("%s: %s; %s" % (target, ", ".join(a or b for a, b in files),
                                        "; ".join(said.split("\n")).strip("; ")))
            for n in hit:
                found[n] = found.get(n, 0) | BITS[target]
    with open(args.out, "w") as f:
        f.write("/*\n * reserved_names.h - generated by backends/core/gen_reserved.py; do not edit.\n"
                " * The names that cannot be the API prefix because the headers an emitted\n"
                " * file includes declare them, or a name the prefix makes; with the targets\n"
                " * they collide in (1 c, 2 cuda, 4 hip). Sorted as strcmp sorts them.\n"
                " * Made from these headers, with these compilers:\n")
        for u in used:
            f.write(" *\n * " + "\n *   ".join(wrap(u)) + "\n")
        f.write(" */\n")
        for n in sorted(found, key=lambda s: s.encode()):
            f.write('{"%s", %d},\n' % (n, found[n]))


def wrap(text, width=74):
    lines, cur = [], ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = (cur + " " + word).strip()
    return lines + [cur]


if __name__ == "__main__":
    main(sys.argv)

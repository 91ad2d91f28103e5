#!/usr/bin/env python3
"""mutate_weights.py - mutates weight files and runs a compiled loader on each.

Compiles a test model with the C target (`--name model --embed-limit 0`, so
every weight is read at run time), builds tests/loaders/load.c against it
with AddressSanitizer and UBSan, then for the given time: restores the
pristine files, damages one weight file at random (safetensors headers and
data, the ONNX file and its external data) and runs the loader. The loader
must print `load: 0` or `load: -1 <one sentence>` and exit 0 or 1; a
signal, a sanitizer report, a hang or any other output is a finding, and
the damaged file is kept under the output folder to reproduce it.

  python3 tools/mutate_weights.py --target hf --seconds 600
  python3 tools/mutate_weights.py --target all --seconds 600   # 600 s each

Targets:
  hf           tests/models/hf/llama_tiny_bf16 (one safetensors file)
  hf-sharded   tests/models/hf/llama_tiny_sharded (an index and two shards)
  onnx-ext     tests/models/hand/small_mlp_ext, external data compiled in
  onnx-run     tests/models/hand/small_mlp compiled with inline weights and
               loaded from small_mlp_ext's ONNX file: the external-data
               locations are read at run time

Standard library only. Exit status 1 when there were findings.
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TARGETS = {
    # name: (model compiled, folder whose files are mutated, path given to the loader)
    "hf": ("tests/models/hf/llama_tiny_bf16", "tests/models/hf/llama_tiny_bf16", ""),
    "hf-sharded": ("tests/models/hf/llama_tiny_sharded", "tests/models/hf/llama_tiny_sharded", ""),
    "onnx-ext": ("tests/models/hand/small_mlp_ext", "tests/models/hand/small_mlp_ext", "model.onnx"),
    "onnx-run": ("tests/models/hand/small_mlp", "tests/models/hand/small_mlp_ext", "model.onnx"),
}

INTERESTING = [0, 1, 2, 7, 8, 255, 256, 65535, 2**31 - 1, 2**31, 2**32, 2**53, 2**53 + 1,
               2**63 - 1, 2**63, 2**64 - 1]


def build(workdir, target, mkc, cc):
    model, _, _ = TARGETS[target]
    src = os.path.join(workdir, "model.c")
    subprocess.run([mkc, os.path.join(ROOT, model), "-o", src, "--name", "model",
                    "--embed-limit", "0"], check=True, capture_output=True)
    exe = os.path.join(workdir, "load")
    subprocess.run(cc.split() + ["-std=c11", "-O1", "-g", "-fsanitize=address,undefined",
                                 "-fno-sanitize-recover=all", "-pthread", "-I" + workdir, "-o", exe,
                                 os.path.join(ROOT, "tests/loaders/load.c"), src, "-lm"],
                   check=True, capture_output=True)
    return exe


# ---------------------------------------------------------------- mutations

def rand_int(rng):
    v = rng.choice(INTERESTING + [rng.randrange(0, 1 << 20)])
    return v + rng.choice([-1, 0, 0, 1]) if v > 0 else v


def rand_value(rng):
    return rng.choice([rand_int(rng), -rand_int(rng), 1.5, 1e308, "64", None, True, [], {},
                       [rand_int(rng)], [rand_int(rng), rand_int(rng)],
                       [rand_int(rng), rand_int(rng), rand_int(rng)], "BF16", "F32", "F16", "I64",
                       "\ud800", [[[[1]]]]])


def split_st(blob):
    if len(blob) < 8:
        return None
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        return None
    try:
        return json.loads(blob[8:8 + n]), n, blob[8 + n:]
    except ValueError:
        return None


def join_st(header, data, pad_to=None):
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad_to is not None and len(text) <= pad_to:
        text += b" " * (pad_to - len(text))
    return struct.pack("<Q", len(text)) + text + data


def mutate_header_json(rng, blob):
    try:
        return mutate_header_entries(rng, blob)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError):
        # a header an earlier mutation left without the expected structure
        return flip_bytes(rng, blob, 8, min(len(blob), 264))


def mutate_header_entries(rng, blob):
    parts = split_st(blob)
    if parts is None or not isinstance(parts[0], dict):
        return flip_bytes(rng, blob, 0, min(len(blob), 256))
    header, n, data = parts
    names = [k for k in header if k != "__metadata__"]
    if not names:
        return blob
    name = rng.choice(names)
    kind = rng.randrange(8)
    if kind == 0:      # one field gets any value
        header[name][rng.choice(["dtype", "shape", "data_offsets"])] = rand_value(rng)
    elif kind == 1:    # a field goes
        header[name].pop(rng.choice(["dtype", "shape", "data_offsets"]), None)
    elif kind == 2:    # the entry goes, or becomes something else
        if rng.random() < 0.5:
            del header[name]
        else:
            header[name] = rand_value(rng)
    elif kind == 3:    # offsets shifted within the data
        b, e = header[name]["data_offsets"]
        d = rng.choice([-2, -1, 1, 2, 64, len(data)])
        header[name]["data_offsets"] = [max(0, b + d), max(0, e + d)]
    elif kind == 4:    # reordered: the same tensors, data written in another order
        rng.shuffle(names)
        out, chunks, at = {}, [], 0
        for k in names:
            b, e = header[k]["data_offsets"]
            out[k] = dict(header[k], data_offsets=[at, at + e - b])
            chunks.append(data[b:e])
            at += e - b
        header, data = out, b"".join(chunks)
    elif kind == 5:    # a shape with the same element count
        shape = header[name]["shape"]
        if len(shape) == 2 and shape[0] % 2 == 0:
            header[name]["shape"] = [shape[0] // 2, shape[1] * 2]
        else:
            header[name]["shape"] = shape + [1]
    elif kind == 6:    # a dtype of the same size
        header[name]["dtype"] = {"BF16": "F16", "F32": "I32"}.get(header[name]["dtype"], "U8")
    else:              # a listed-twice entry, spliced into the text
        text = json.dumps(header, separators=(",", ":"))
        dup = json.dumps({name: header[name]}, separators=(",", ":"))[1:-1]
        text = text[:-1] + "," + dup + "}"
        raw = text.encode("latin-1", "replace")
        return struct.pack("<Q", len(raw)) + raw + data
    return join_st(header, data, pad_to=n if rng.random() < 0.5 else None)


def flip_bytes(rng, blob, lo, hi):
    b = bytearray(blob)
    if hi <= lo:
        return bytes(b)
    for _ in range(rng.choice([1, 1, 2, 4, 16])):
        i = rng.randrange(lo, hi)
        b[i] = rng.choice([rng.randrange(256), ord('"'), ord("["), ord("{"), ord("\\"), 0,
                           ord("9"), ord(","), ord("}"), ord("]")])
    return bytes(b)


def mutate_safetensors(rng, blob):
    parts = split_st(blob)
    n = parts[1] if parts else min(len(blob), 256)
    kind = rng.randrange(7)
    if kind == 0:
        return mutate_header_json(rng, blob)
    if kind == 1:      # header bytes
        return flip_bytes(rng, blob, 8, 8 + n)
    if kind == 2:      # the length field
        v = rng.choice([rand_int(rng), n + rng.choice([-8, -1, 1, 8])])
        return struct.pack("<Q", max(0, v) % 2**64) + blob[8:]
    if kind == 3:      # truncated
        return blob[:rng.choice([0, 3, 8, 9, 8 + n // 2, 8 + n, rng.randrange(len(blob) + 1)])]
    if kind == 4:      # bytes inserted or removed in the header, length kept
        i = rng.randrange(8, 8 + n + 1)
        if rng.random() < 0.5:
            return blob[:i] + bytes([rng.randrange(256)]) * rng.choice([1, 2, 100]) + blob[i:]
        return blob[:i] + blob[i + rng.choice([1, 2, 100]):]
    if kind == 5:      # data bytes (must still load: the loader cannot know)
        return flip_bytes(rng, blob, 8 + n, len(blob))
    return mutate_header_json(rng, mutate_header_json(rng, blob))


def mutate_onnx(rng, blob):
    kind = rng.randrange(4)
    loc = b"weights.bin"
    if kind == 0 and loc in blob:   # a location of the same length
        bad = rng.choice([b"../ights.bi", b"/etc/passwd", b"./../ts.bin", b"weights.bi\0",
                          b"weights/bin", b"..........."])
        return blob.replace(loc, bad, rng.choice([1, 2, 3]))
    if kind == 1 and b"offset" in blob:
        i = blob.index(b"offset") + rng.randrange(6, 12)
        return flip_bytes(rng, blob, min(i, len(blob) - 1), min(i + 1, len(blob)))
    if kind == 2:
        return blob[:rng.randrange(len(blob) + 1)]
    return flip_bytes(rng, blob, 0, len(blob))


def mutate_folder(rng, folder):
    """Damages one file of folder; returns its name and what was done."""
    files = sorted(f for f in os.listdir(folder) if os.path.isfile(os.path.join(folder, f)))
    name = rng.choice([f for f in files if not f.endswith(".json")] or files)
    path = os.path.join(folder, name)
    with open(path, "rb") as f:
        blob = f.read()
    if name.endswith(".safetensors"):
        out = mutate_safetensors(rng, blob)
    elif name.endswith(".onnx"):
        out = mutate_onnx(rng, blob)
    else:
        out = blob[:rng.randrange(len(blob) + 1)] if rng.random() < 0.5 else \
            flip_bytes(rng, blob, 0, len(blob))
    with open(path, "wb") as f:
        f.write(out)
    return name


# ---------------------------------------------------------------- the loop

def judge(proc_rc, out):
    """None when the loader answered as it must, else what was wrong."""
    if "Sanitizer" in out or "runtime error" in out:
        return "sanitizer report"
    if proc_rc is None:
        return "hang"
    if proc_rc < 0:
        return "signal %d" % -proc_rc
    lines = out.splitlines()
    if proc_rc == 0 and lines == ["load: 0"]:
        return None
    if proc_rc == 1 and len(lines) == 1 and lines[0].startswith("load: -1 ") and len(lines[0]) > 9:
        return None
    return "unexpected answer (status %d)" % proc_rc


def run_target(target, seconds, mkc, cc, outdir, seed):
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="mkc_mutate_")
    try:
        exe = build(work, target, mkc, cc)
        pristine = os.path.join(ROOT, TARGETS[target][1])
        folder = os.path.join(work, "m")
        runs, ok, refused, findings = 0, 0, {}, []
        end = time.time() + seconds
        while time.time() < end:
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(pristine, folder)
            name = mutate_folder(rng, folder)
            arg = os.path.join(folder, TARGETS[target][2]) if TARGETS[target][2] else folder
            try:
                p = subprocess.run([exe, arg], capture_output=True, timeout=30)
                rc, out = p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")
            except subprocess.TimeoutExpired:
                rc, out = None, ""
            runs += 1
            bad = judge(rc, out)
            if bad:
                keep = os.path.join(outdir, "%s-%d" % (target, len(findings)))
                shutil.copytree(folder, keep)
                with open(os.path.join(keep, "FINDING.txt"), "w") as f:
                    f.write("%s after damaging %s\n%s" % (bad, name, out))
                findings.append((bad, keep))
            elif rc == 0:
                ok += 1
            else:
                # group by the sentence with its numbers and quoted names dropped
                words = out.split(": ", 2)[-1].split()
                key = " ".join(w for w in words[:8] if not any(c.isdigit() for c in w)
                               and "'" not in w)
                refused[key] = refused.get(key, 0) + 1
        print("%s: %d runs in %d s: %d loaded, %d refused with a sentence, %d findings" %
              (target, runs, seconds, ok, sum(refused.values()), len(findings)))
        for k, v in sorted(refused.items(), key=lambda kv: -kv[1])[:12]:
            print("  %6d  %s ..." % (v, k))
        for bad, keep in findings:
            print("  FINDING: %s (kept in %s)" % (bad, keep))
        return len(findings)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="all", choices=sorted(TARGETS) + ["all"])
    ap.add_argument("--seconds", type=int, default=60, help="per target")
    ap.add_argument("--mkc", default=os.path.join(ROOT, "build/mkc"))
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--out", default=os.path.join(ROOT, "build/mutate"),
                    help="where damaged files that found something are kept")
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time())
    print("mutate_weights: seed %d" % seed)
    os.makedirs(a.out, exist_ok=True)
    targets = sorted(TARGETS) if a.target == "all" else [a.target]
    found = sum(run_target(t, a.seconds, os.path.abspath(a.mkc), a.cc, a.out, seed + i)
                for i, t in enumerate(targets))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

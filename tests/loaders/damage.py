#!/usr/bin/env python3
"""damage.py - damages weight files the way tests/compiler/test_loaders.c needs.

  damage.py garbage FILE               header bytes 8..16 become 'garbage!'
  damage.py reorder FILE               the tensors written in reverse order
                                       (header and data consistent)
  damage.py field FILE TENSOR KEY JSON one header field replaced, the header's
                                       length kept (padded with spaces)
  damage.py truncate FILE N            only the first N bytes kept
  damage.py location ONNX TENSOR LOC   an initializer's external data location
                                       (LOC '-': none at all)
  damage.py poke FILE OFFSET           the byte at OFFSET with its low bit flipped
                                       (the file's size kept)
  damage.py poke FILE TENSOR           the same at the first byte of a safetensors
                                       file's TENSOR
  damage.py double ONNX TENSOR         an inline initializer's first float doubled
                                       (the same size, another value)

Standard library only, except `location` and `double`, which need the onnx package.
"""
import json
import struct
import sys


def read_st(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8:8 + n]), n, blob[8 + n:]


def write_st(path, header, data, length=None):
    text = json.dumps(header, separators=(",", ":")).encode()
    if length is None:
        length = (len(text) + 7) // 8 * 8
    if len(text) > length:
        sys.exit(f"damage.py: the new header ({len(text)} bytes) does not fit in {length}")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", length) + text + b" " * (length - len(text)) + data)


def main(argv):
    op, path = argv[1], argv[2]
    if op == "garbage":
        with open(path, "r+b") as f:
            f.seek(8)
            f.write(b"garbage!")
    elif op == "reorder":
        header, _, data = read_st(path)
        meta = header.pop("__metadata__", None)
        names = sorted(header, key=lambda k: header[k]["data_offsets"][0], reverse=True)
        out, chunks, at = {}, [], 0
        if meta is not None:
            out["__metadata__"] = meta
        for k in names:
            b, e = header[k]["data_offsets"]
            out[k] = dict(header[k], data_offsets=[at, at + e - b])
            chunks.append(data[b:e])
            at += e - b
        write_st(path, out, b"".join(chunks))
    elif op == "field":
        header, n, data = read_st(path)
        header[argv[3]][argv[4]] = json.loads(argv[5])
        write_st(path, header, data, n)
    elif op == "truncate":
        with open(path, "r+b") as f:
            f.truncate(int(argv[3]))
    elif op == "location":
        import onnx
        m = onnx.load(path, load_external_data=False)
        for t in m.graph.initializer:
            if t.name == argv[3]:
                for e in list(t.external_data):
                    if e.key == "location" and argv[4] == "-":
                        t.external_data.remove(e)
                    elif e.key == "location":
                        e.value = argv[4]
        onnx.save(m, path)
    elif op == "poke":
        at = argv[3]
        if not at.isdigit():
            header, n, _ = read_st(path)
            at = 8 + n + header[at]["data_offsets"][0]
        with open(path, "r+b") as f:
            f.seek(int(at))
            b = f.read(1)
            f.seek(int(at))
            f.write(bytes([b[0] ^ 1]))
    elif op == "double":
        import onnx
        from onnx import numpy_helper
        m = onnx.load(path)
        for i, t in enumerate(m.graph.initializer):
            if t.name == argv[3]:
                a = numpy_helper.to_array(t).copy()
                a.flat[0] = a.flat[0] * 2 + 1
                m.graph.initializer[i].CopyFrom(numpy_helper.from_array(a, t.name))
        onnx.save(m, path)
    else:
        sys.exit(f"damage.py: unknown operation '{op}'")


if __name__ == "__main__":
    main(sys.argv)

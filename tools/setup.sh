#!/usr/bin/env bash
# Installs what building and testing mkc needs on a Debian machine:
# the C libraries and tools from Debian, and the Python packages that make
# and check the test models. Safe to run again.
set -euo pipefail

SUDO=
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi

# clang and its runtime libraries build the libFuzzer target (make fuzz);
# hipcc with libamdhip64-dev (HIP 5.2 on clang 15) and clang-19 with lld-19
# compile the emitted .hip for gfx90a and gfx942 (tests/toolchains/test_hip.c;
# about 116 MB to download, 615 MB installed, 20 s here)
# cppcheck is make lint's (CI runs it), clang-format make format's.
debs=(make gcc libprotobuf-c-dev protobuf-c-compiler libcjson-dev
      libcriterion-dev libonnx-dev libonnx-testdata python3 python3-pip time
      clang libclang-rt-dev hipcc libamdhip64-dev clang-19 lld-19
      cppcheck clang-format)
missing=()
for p in "${debs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# onnx and numpy regenerate tests/models/hand (make test checks that the
# committed models are what the generator makes); onnxruntime is the
# reference the decode example is compared with; matplotlib draws the
# timeline picture of tools/profile_report.py; pytest runs the Python
# package's tests (python/tests), whose server (python/mkc/server.py) needs
# aiohttp, jinja2 and tokenizers, and its test the openai client; gguf reads
# llama.cpp's files (tools/gguf_to_hf.py and its test).
py="onnx numpy onnxruntime matplotlib pytest aiohttp jinja2 tokenizers openai gguf"
if ! python3 -c "import onnx, numpy, onnxruntime, matplotlib, pytest, aiohttp, jinja2, tokenizers, openai, gguf" 2>/dev/null; then
	echo "setup: installing $py from PyPI"
	python3 -m pip install -q $py 2>/dev/null ||
		python3 -m pip install -q --break-system-packages $py
fi
echo "setup: done"

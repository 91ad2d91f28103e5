#!/usr/bin/env bash
# gpu_check.sh: the CUDA checks, run on the GPU machine from the repo root
# with build/mkc built beforehand (it needs libcjson: put libcjson.so.1 in
# .carry/lib). COMMIT names the commit in the logs (the device copy is not
# a git checkout). Writes logs under $OUT (or /tmp/mkc_gpu) and ends with a
# short table.
#   1. mkc test --target cuda on every golden model, 100 steps each (every
#      step compared, so a race shows up as a moving result);
#   2. compute-sanitizer memcheck and racecheck on the op23 Llama run.
set -u
out=${OUT:-/tmp/mkc_gpu}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.carry/lib:${LD_LIBRARY_PATH:-}"
models="tests/models/tiny_llama_decode_op18 tests/models/tiny_llama_decode_op23 tests/models/hand/small_mlp"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
echo "commit ${COMMIT:-unknown}" | tee "$out/commit.txt"

build/mkc test --target cuda --steps 100 $models >"$out/cuda_test.log" 2>&1
test_rc=$?

build/mkc test --target cuda --steps 2 --keep tests/models/tiny_llama_decode_op23 >"$out/keep.log" 2>&1
work=$(sed -n 's/^mkc: kept //p' "$out/keep.log" | tail -1)
mem_rc=-1
race_rc=-1
if [ -n "$work" ] && [ -x "$work/run" ]; then
	# from the repo root: the harness loads weights by the model's relative path
	compute-sanitizer --tool memcheck --error-exitcode 9 "$work/run" >"$out/memcheck.log" 2>&1
	mem_rc=$?
	compute-sanitizer --tool racecheck --error-exitcode 9 "$work/run" >"$out/racecheck.log" 2>&1
	race_rc=$?
fi

echo
echo "== mkc test --target cuda (100 steps) =="
cat "$out/cuda_test.log"
echo "== compute-sanitizer =="
printf '%-12s exit %s  %s\n' memcheck "$mem_rc" "$(grep -m1 'ERROR SUMMARY' "$out/memcheck.log" 2>/dev/null)"
printf '%-12s exit %s  %s\n' racecheck "$race_rc" "$(grep -m1 -i 'RACECHECK SUMMARY\|ERROR SUMMARY' "$out/racecheck.log" 2>/dev/null)"
exit $test_rc

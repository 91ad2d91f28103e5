#!/usr/bin/env bash
# gpu_check.sh: the CUDA checks, run on the GPU machine from the repo root
# with build/mkc built beforehand (it needs libcjson: put libcjson.so.1 in
# .carry/lib). COMMIT names the commit in the logs (the device copy is not
# a git checkout). Writes logs under $OUT (or /tmp/mkc_gpu) and ends with a
# short table. The lent device returns only a few files from its $OUT: give
# the script another folder and pack it, as session 8 did:
#   o=$OUT; OUT=/tmp/gc bash tools/gpu_check.sh > $o/summary.txt; tar czf $o/logs.tgz -C /tmp/gc .
#   0. tests/gpu/bodies.cu: the CUDA tile bodies alone against float64;
#      tests/gpu/mma.cu: the tensor-core tile alone against float64, and its
#      TFLOPS at a 1B-shaped prompt chunk's products;
#      tests/gpu/portable.cu: the portable bodies (backends/c/) on the GPU
#      against the same bodies on the host; tests/gpu/sample.cu: the draw of
#      the next token on a block against the host's;
#   1. mkc test --target cuda on every golden model, 100 steps each (every
#      step compared, so a race shows up as a moving result), chunks, and
#      several sequences in paged caches (tests/programs/seqs_batch.c);
#   2. compute-sanitizer memcheck and racecheck on the op23 Llama run and on
#      the tiny Hugging Face Llama (the decode attention and matvec bodies);
#   3. the HIP output of the same models, built for this GPU with
#      tests/gpu/hipcc_on_cuda.sh (the mapping header), 100 steps each
#      (GPU_CHECK_HIP=0 leaves this part out; GPU_CHECK_PARTS picks parts).
set -u
# GPU_CHECK_PARTS="chunk seqs ...": these parts only (bodies golden chunk seqs
# python genai hip decode gen watchdog sanitize; all by default), for a call that
# cannot hold the whole script (it takes over ten minutes); each part's
# seconds go to $out/times.txt
part() { [ -z "${GPU_CHECK_PARTS:-}" ] || [[ " $GPU_CHECK_PARTS " == *" $1 "* ]]; }
t_part=$(date +%s)
took() { echo "$1: $(( $(date +%s) - t_part )) s" >>"$out/times.txt"; t_part=$(date +%s); }
out=${OUT:-/tmp/mkc_gpu}
mkdir -p "$out"
bodies_rc=0 mma_rc=0 sample_rc=0 portable_rc=0 test_rc=0 bf16_rc=0 hf_rc=0 chunk_rc=0 seqs_rc=0 python_rc=0 genai_rc=0
mem_rc=-1 race_rc=-1 hf_mem_rc=-1 hf_race_rc=-1
export LD_LIBRARY_PATH="$PWD/.carry/lib:${LD_LIBRARY_PATH:-}"
models="tests/models/tiny_llama_decode_op18 tests/models/tiny_llama_decode_op23 tests/models/hand/small_mlp
	tests/models/hand/small_mlp_ext tests/models/tiny_llama_decode_op18/model.json
	tests/models/qwen3_tiny_onnx/model.onnx tests/models/qwen3_tiny_onnx/model.json"
# Hugging Face folders (the bf16 one's reference uses the same bf16 weights)
hf=""
for d in tests/models/tiny_llama_hf tests/models/hf/*; do
	[ -f "$d/config.json" ] && hf="$hf $d"
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
echo "commit ${COMMIT:-unknown}" | tee "$out/commit.txt"

if part bodies; then
# the GPU bodies of backends/cuda/ alone, against float64 on the host: as
# the CUDA target builds them, then as the HIP target does (64-lane warps,
# through tests/gpu/hip_on_cuda.h)
nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -o "$out/bodies" tests/gpu/bodies.cu >"$out/bodies.log" 2>&1 &&
	"$out/bodies" >>"$out/bodies.log" 2>&1 &&
	nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -DMKC_BODIES_HIP -o "$out/bodies" tests/gpu/bodies.cu >>"$out/bodies.log" 2>&1 &&
	"$out/bodies" >>"$out/bodies.log" 2>&1
bodies_rc=$?
rm -f "$out/bodies"
# the tensor-core tile (backends/cuda/mma.cuh) alone, then timed
nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -o "$out/mma" tests/gpu/mma.cu >"$out/mma.log" 2>&1 &&
	"$out/mma" >>"$out/mma.log" 2>&1
mma_rc=$?
rm -f "$out/mma"
# the draw of the next token (runtime/sample.h) on a block against the host's,
# 32 and 64 lanes a warp; then timed
nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -o "$out/sample" tests/gpu/sample.cu >"$out/sample.log" 2>&1 &&
	"$out/sample" >>"$out/sample.log" 2>&1 &&
	nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -DMKC_BODIES_HIP -o "$out/sample" tests/gpu/sample.cu >>"$out/sample.log" 2>&1 &&
	"$out/sample" >>"$out/sample.log" 2>&1
sample_rc=$?
rm -f "$out/sample"
# the portable bodies of backends/c/ on the GPU, against their host copies
nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -o "$out/portable" tests/gpu/portable.cu >"$out/portable.log" 2>&1 &&
	"$out/portable" >>"$out/portable.log" 2>&1
portable_rc=$?
	took bodies
fi
rm -f "$out/portable"

if part golden; then
build/mkc test --target cuda --steps 100 $models >"$out/cuda_test.log" 2>&1
test_rc=$?

build/mkc test --target cuda --steps 100 --weights bf16 --tolerance 1e-2 $models >"$out/cuda_bf16.log" 2>&1
bf16_rc=$?
hf_rc=0
if [ -n "$hf" ]; then
	# float32 caches against the references at 1e-5, then every folder with
	# bf16 caches (mkc --kv bf16, passes/kv.c) at 1e-2
	build/mkc test --target cuda --steps 20 --kv f32 $hf >"$out/cuda_hf.log" 2>&1 &&
		build/mkc test --target cuda --steps 20 --kv bf16 --tolerance 1e-2 $hf >>"$out/cuda_hf.log" 2>&1
	hf_rc=$?
fi
	took golden
fi

if part chunk; then
# steps of several tokens (mkc --max-chunk, issue 29): qwen3_tiny's exactly
# (float32 weights: the chunk attention body), llama_tiny_bf16's through the
# tensor-core products (activations rounded to bf16: 5e-2), llama_tiny_d64's
# attention on tensor cores too (head size 64), and the torch.onnx exports of a
# symbolic step (float32: exact)
build/mkc test --target cuda --steps 20 --max-chunk 256 tests/models/hf_chunk/qwen3_tiny \
	>"$out/cuda_chunk.log" 2>&1 &&
	build/mkc test --target cuda --steps 20 --max-chunk 256 --tolerance 5e-2 \
		tests/models/hf_chunk/llama_tiny_bf16 tests/models/hf_chunk/llama_tiny_d64 \
		>>"$out/cuda_chunk.log" 2>&1 &&
	build/mkc test --target cuda --steps 20 --max-chunk 256 tests/models/export_chunk/* \
		>>"$out/cuda_chunk.log" 2>&1
chunk_rc=$?
	took chunk
fi

if part seqs; then
# several sequences a step, caches in pages (mkc --max-seqs, runtime/seqs.h):
# the golden steps through sequence 0 of a paged file, then
# tests/programs/seqs_batch.c (shared interleaved steps against each sequence
# alone, forks, a full pool) on the GPU, its buffers managed memory
build/mkc test --target cuda --steps 20 --max-seqs 2 --page-size 3 --max-chunk 8 --tolerance 5e-2 \
	tests/models/hf_chunk/qwen3_tiny tests/models/hf_chunk/llama_tiny_bf16 >"$out/cuda_seqs.log" 2>&1 &&
	# head size 64 in pages of 16: attention.cuh's parts through the page table,
	# float32 caches, then bf16 ones
	build/mkc test --target cuda --steps 20 --max-seqs 2 --page-size 16 --max-chunk 8 \
		--tolerance 5e-2 tests/models/hf_chunk/llama_tiny_d64 >>"$out/cuda_seqs.log" 2>&1 &&
	build/mkc test --target cuda --steps 20 --max-seqs 2 --page-size 16 --max-chunk 8 --kv bf16 \
		--tolerance 5e-2 tests/models/hf_chunk/llama_tiny_d64 >>"$out/cuda_seqs.log" 2>&1 &&
	# the boxes that move with a step's rows read from the tables, as a box
	# that does not fit its descriptor is (backends/cuda/exec.cuh)
	NVCC="nvcc -DMKC_QD_AFFINE_RANK=0" build/mkc test --target cuda --steps 20 --max-seqs 2 \
		--page-size 16 --max-chunk 8 --tolerance 5e-2 tests/models/hf_chunk/llama_tiny_d64 \
		>>"$out/cuda_seqs.log" 2>&1
seqs_rc=$?
d=$(mktemp -d)
M=tests/models/hf_chunk/llama_tiny_bf16
build/mkc $M -o $d/batch.cu --max-seqs 4 --max-chunk 8 --page-size 4 --max-seq 32 --cache-pages 12 \
	--workers 8 >>"$out/cuda_seqs.log" 2>&1 &&
	nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -c $d/batch.cu -o $d/batch.o >>"$out/cuda_seqs.log" 2>&1 &&
	cc -O2 -DSEQS_CUDA -DLOGIT_TOL=5e-2 -DCACHE_TOL=5e-2 -DDIR=\"$M\" -I$d -I/usr/local/cuda/include -c tests/programs/seqs_batch.c \
		-o $d/sb.o >>"$out/cuda_seqs.log" 2>&1 &&
	nvcc -o $d/sb $d/sb.o $d/batch.o >>"$out/cuda_seqs.log" 2>&1 &&
	"$d/sb" >>"$out/cuda_seqs.log" 2>&1
[ $? -eq 0 ] && grep -q "together: logits same, greedy tokens same, caches same" "$out/cuda_seqs.log" || seqs_rc=1
rm -rf $d
# generate_batch in one launch (runtime/sched.h in block 0): six requests
# through four sequences, each as alone; through a pool of 12 pages (requests
# wait for pages); tests/programs/gen_batch.c, as test_seqs.c runs it on the C
# target, then the same file with the loop on the host (MKC_BATCH_IN_KERNEL=0)
M=tests/models/hf/qwen3_tiny
gb() {   # pages in-kernel: builds into /tmp/gb_$1_$2
	d=/tmp/gb_$1_$2
	rm -rf $d && mkdir -p $d &&
		build/mkc $M -o $d/gb.cu --max-seqs 4 --max-chunk 8 --page-size 4 --max-seq 64 \
			--cache-pages $1 --workers 8 >$d/build.log 2>&1 &&
		nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -DMKC_BATCH_IN_KERNEL=$2 -c $d/gb.cu \
			-o $d/gb.o >>$d/build.log 2>&1 &&
		cc -O2 -DDIR=\"$M\" -I$d -c tests/programs/gen_batch.c -o $d/t.o >>$d/build.log 2>&1 &&
		nvcc -o $d/t $d/t.o $d/gb.o >>$d/build.log 2>&1
}
for p in 64 12; do for k in 1 0; do gb $p $k & done; done
wait
for p in 64 12; do
	for k in 1 0; do
		d=/tmp/gb_${p}_$k
		cat $d/build.log >>"$out/cuda_seqs.log"
		{ echo "gen_batch pages $p in-kernel $k:"; timeout 120 $d/t; } >"$d/run.log" 2>&1
		cat "$d/run.log" >>"$out/gen_batch.log"
		grep -q "batch of 6: same as alone, 60 tokens heard, sequence 0 open with 0, free pages $p" \
			"$d/run.log" && grep -q "stopped: 4 tokens (4 expected), others same" "$d/run.log" ||
			seqs_rc=1
		rm -rf $d
	done
done
	took seqs
fi

if part python; then
# the Python package's GPU path (torch tensors on the device) against its C target
python3 tools/gpu_python.py >"$out/python.log" 2>&1
python_rc=$?
	took python
fi

# the HIP output on this NVIDIA GPU through tests/gpu/hip_on_cuda.h (issue
# 13): the golden models, the same 100 steps; each 64-lane group of the file
# runs as a pair of warps, AMD's shuffles and memory model do not
# (GPU_CHECK_HIP=0 leaves it out, for a run that checked it apart: it takes minutes)
hip_rc=0
if part hip && [ "${GPU_CHECK_HIP:-1}" != 0 ]; then
	HIPCC="$PWD/tests/gpu/hipcc_on_cuda.sh" build/mkc test --target hip --steps 100 $models $hf \
		>"$out/hip_on_cuda.log" 2>&1 &&
	# a chunk's products on the matrix-core tile (backends/hip/mfma.h, the
	# instruction stood in for by the header): bf16 activations, as CUDA's 5e-2
	HIPCC="$PWD/tests/gpu/hipcc_on_cuda.sh" build/mkc test --target hip --steps 20 \
		--max-chunk 256 --tolerance 5e-2 tests/models/hf_chunk/llama_tiny_bf16 \
		>>"$out/hip_on_cuda.log" 2>&1
	hip_rc=$?
else
	echo "left out (GPU_CHECK_HIP=0 or GPU_CHECK_PARTS)" >"$out/hip_on_cuda.log"
fi

if part genai; then
# onnxruntime-genai's builder exports (tests/models/genai, issue 34) on CUDA:
# fp32 and fp16 (-e cuda) over steps of 1, 4 and 3 tokens, fp16 -e cpu a token
# a step, against onnxruntime (fp16: 2e-3, as on the C target); then the 32
# greedy tokens of examples/generate.c on the GPU against onnxruntime-genai's
# generator's (greedy.txt; the fp16 CPU files against their CUDA twins')
build/mkc test --target cuda --max-chunk 4 tests/models/genai/llama_tiny tests/models/genai/qwen3_tiny \
	>"$out/cuda_genai.log" 2>&1 &&
	build/mkc test --target cuda --tolerance 2e-3 --max-chunk 4 tests/models/genai/llama_tiny_fp16 \
		tests/models/genai/qwen3_tiny_fp16 >>"$out/cuda_genai.log" 2>&1 &&
	build/mkc test --target cuda --tolerance 2e-3 tests/models/genai/llama_tiny_fp16_cpu \
		tests/models/genai/qwen3_tiny_fp16_cpu >>"$out/cuda_genai.log" 2>&1
genai_rc=$?
runs="llama_tiny: qwen3_tiny:--max-chunk=8 llama_tiny_fp16: qwen3_tiny_fp16:--max-chunk=8
	llama_tiny_fp16_cpu: qwen3_tiny_fp16_cpu:"
for r in $runs; do
	m=${r%%:*} f=${r#*:} d=/tmp/genai_$m
	rm -rf $d && mkdir -p $d &&
		{ build/mkc tests/models/genai/$m ${f/=/ } -o $d/llama.cu --workers 8 &&
		nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -c $d/llama.cu -o $d/llama.o &&
		cc -I$d -I/usr/local/cuda/include -c examples/generate.c -o $d/gen.o &&
		nvcc -o $d/gen $d/gen.o $d/llama.o; } >$d/build.log 2>&1 &
done
wait
for r in $runs; do
	m=${r%%:*} d=/tmp/genai_$m g=tests/models/genai/${m%_cpu}
	cat $d/build.log >"$out/genai_gen_$m.log"
	$d/gen tests/models/genai/$m/model.onnx 32 seq:39 >>"$out/genai_gen_$m.log" 2>&1
	a=$(grep '^tokens' "$out/genai_gen_$m.log"); b=$(grep '^tokens' $g/greedy.txt)
	[ -n "$a" ] && [ "$a" = "$b" ] && same=identical || { same=DIFFERENT; genai_rc=1; }
	echo "$m: $same" >>"$out/genai_gen.txt"
	rm -rf $d
done
	took genai
fi

if part decode; then
# the decode example on the GPU against onnxruntime on the same files
for m in tiny_llama_decode_op18 tiny_llama_decode_op23; do
	d=$(mktemp -d)
	build/mkc tests/models/$m/model.onnx -o $d/llama.cu --workers 8 &&
	nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -c $d/llama.cu -o $d/llama.o &&
	cc -DDECODE_CUDA -I$d -I/usr/local/cuda/include -c examples/decode.c -o $d/decode.o &&
	nvcc -o $d/decode $d/decode.o $d/llama.o &&
	$d/decode tests/models/$m/model.onnx 32 7 >"$out/decode_$m.log" 2>&1
	python3 tools/ort_decode.py tests/models/$m/model.onnx 32 7 >"$out/ort_$m.log" 2>&1
done
	took decode
fi

if part gen; then
# in-kernel generation (examples/generate.c, one launch) against onnxruntime
# with explicit past/present, from contexts 1, 100 and 1000 up to one
# position short of the cache; then a request past the cache
gen_case() {   # name model prompt n_new max_seq
	d=$(mktemp -d)
	build/mkc "$2" -o $d/llama.cu --workers 8 --max-seq "$5" &&
	nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -c $d/llama.cu -o $d/llama.o &&
	cc -I$d -I/usr/local/cuda/include -c examples/generate.c -o $d/gen.o &&
	nvcc -o $d/gen $d/gen.o $d/llama.o &&
	$d/gen "$2" "$4" "$3" 3 >"$out/gen_$1.log" 2>&1
	python3 tools/ort_decode.py "$2" "$4" --prompt "$3" >"$out/gen_ort_$1.log" 2>&1
	[ "$1" = small ] && $d/gen "$2" 4090 seq:10 >"$out/gen_full.log" 2>&1
	[ "$1" = small ] && compute-sanitizer --tool memcheck --error-exitcode 9 $d/gen "$2" 8 7 >"$out/gen_memcheck.log" 2>&1
	[ "$1" = small ] && compute-sanitizer --tool racecheck --error-exitcode 9 $d/gen "$2" 8 7 >"$out/gen_racecheck.log" 2>&1
	if [ "$1" = small ]; then
		# drawn tokens (runtime/sample.h) in the launch: the C target's, from the
		# same seed; then the fifth of them as a stop token ends the answer there
		samp="--temperature 0.9 --top-k 40 --top-p 0.95 --seed 3"
		$d/gen "$2" 32 "$3" 3 $samp >"$out/gen_sample.log" 2>&1
		mkdir $d/c && build/mkc "$2" -o $d/c/llama.c --workers 8 --max-seq "$5" &&
			cc -O2 -pthread -I$d/c -o $d/c/gen examples/generate.c $d/c/llama.c -lm &&
			$d/c/gen "$2" 32 "$3" 1 $samp >"$out/gen_sample_c.log" 2>&1
		$d/gen "$2" 32 "$3" 1 $samp --stop "$(awk '/^tokens/ {print $6}' "$out/gen_sample.log")" \
			>"$out/gen_stop.log" 2>&1
	fi
	rm -rf $d
}
gen_case small tests/models/tiny_llama_decode_op18/model.onnx 7 32 4096
gen_case ctx100 tests/models/tiny_llama_decode_op23/model.onnx seq:100 16 4096
gen_case ctx1000 tests/models/qwen3_tiny_onnx/model.onnx seq:1000 8 1024
gen_case nearmax tests/models/export/qwen3_tiny_op18/model.onnx seq:1090 10 1100
	took gen
fi

if part watchdog; then
# the watchdog: a stalled event must end the step with an error, not hang
build/mkc test --target cuda --steps 1 --stall-event 10 --timeout 1 tests/models/tiny_llama_decode_op23 >"$out/watchdog.log" 2>&1
# more workers than the GPU can hold at once must be refused, not launched
build/mkc tests/models/tiny_llama_decode_op23 -o /tmp/many.cu --workers 4096 >"$out/many.log" 2>&1 &&
cp examples/decode.c /tmp/ && nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -c /tmp/many.cu -o /tmp/many.o >>"$out/many.log" 2>&1 &&
sed 's/llama/many/g' examples/decode.c > /tmp/many_decode.c &&
cc -DDECODE_CUDA -I/tmp -I/usr/local/cuda/include -c /tmp/many_decode.c -o /tmp/many_decode.o >>"$out/many.log" 2>&1 &&
nvcc -o /tmp/many /tmp/many_decode.o /tmp/many.o >>"$out/many.log" 2>&1 &&
/tmp/many tests/models/tiny_llama_decode_op23/model.onnx 2 >>"$out/many.log" 2>&1
	took watchdog
fi

if part sanitize; then
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

# the same on a Hugging Face folder, whose attention and matrix products take
# the decode bodies (backends/cuda/attention.cuh, matvec.cuh)
build/mkc test --target cuda --steps 2 --keep tests/models/tiny_llama_hf >"$out/keep_hf.log" 2>&1
work=$(sed -n 's/^mkc: kept //p' "$out/keep_hf.log" | tail -1)
hf_mem_rc=-1
hf_race_rc=-1
if [ -n "$work" ] && [ -x "$work/run" ]; then
	compute-sanitizer --tool memcheck --error-exitcode 9 "$work/run" >"$out/memcheck_hf.log" 2>&1
	hf_mem_rc=$?
	compute-sanitizer --tool racecheck --error-exitcode 9 "$work/run" >"$out/racecheck_hf.log" 2>&1
	hf_race_rc=$?
fi
	took sanitize
fi

echo
cat "$out/times.txt"
# a log's section, where its part ran
show() { [ -f "$out/$2" ] && { echo "== $1 =="; cat "$out/$2"; }; }
show "tests/gpu/bodies.cu (the GPU bodies alone vs float64, 32 and 64 lanes)" bodies.log
show "tests/gpu/mma.cu (the tensor-core tile alone vs float64, then timed)" mma.log
show "tests/gpu/portable.cu (the portable bodies on the GPU vs on the host)" portable.log
show "tests/gpu/sample.cu (the draw on a block vs on the host, 32 and 64 lanes)" sample.log
show "mkc test --target cuda (100 steps)" cuda_test.log
show "mkc test --target cuda --weights bf16 (100 steps, tolerance 1e-2)" cuda_bf16.log
show "mkc test --target cuda on Hugging Face folders (20 steps)" cuda_hf.log
show "mkc test --target cuda --max-chunk 256 on tests/models/hf_chunk (20 steps)" cuda_chunk.log
show "several sequences (--max-seqs): golden steps through pages, tests/programs/seqs_batch.c" cuda_seqs.log
show "generate_batch on CUDA (tests/programs/gen_batch.c)" gen_batch.log
show "tools/gpu_python.py (python/mkc on a CUDA library vs a C one)" python.log
show "onnxruntime-genai exports on CUDA (tests/models/genai)" cuda_genai.log
if part genai; then
	echo "== examples/generate.c on the genai exports vs the generator (32 tokens) =="
	cat "$out/genai_gen.txt"
fi
show "mkc test --target hip through tests/gpu/hip_on_cuda.h (100 steps)" hip_on_cuda.log
if part decode; then
	echo "== examples/decode.c on the GPU vs onnxruntime (32 tokens from token 7) =="
	for m in tiny_llama_decode_op18 tiny_llama_decode_op23; do
		a=$(grep '^tokens' "$out/decode_$m.log"); b=$(grep '^tokens' "$out/ort_$m.log")
		[ -n "$a" ] && [ "$a" = "$b" ] && same=identical || same=DIFFERENT
		echo "$m: $same; $(grep '^steps' "$out/decode_$m.log")"
	done
fi
if part gen; then
	echo "== examples/generate.c (one launch) vs onnxruntime =="
	for c in small ctx100 ctx1000 nearmax; do
		a=$(grep '^tokens' "$out/gen_$c.log"); b=$(grep '^tokens' "$out/gen_ort_$c.log")
		[ -n "$a" ] && [ "$a" = "$b" ] && same=identical || same=DIFFERENT
		echo "$c: $same; $(grep '^generate' "$out/gen_$c.log" | tail -1)"
	done
	a=$(grep '^tokens' "$out/gen_sample.log"); b=$(grep '^tokens' "$out/gen_sample_c.log")
	[ -n "$a" ] && [ "$a" = "$b" ] && same=identical || same=DIFFERENT
	echo "drawn (T 0.9, top-k 40, top-p 0.95, seed 3) vs the C target: $same; $(grep '^generate' "$out/gen_sample.log" | tail -1)"
	echo "the fifth drawn token as a stop token: $(grep '^tokens' "$out/gen_stop.log" | wc -w | awk '{print $1 - 1}') tokens (5 expected)"
	echo "past the cache: $(cat "$out/gen_full.log")"
	printf '%-12s %s\n' memcheck "$(grep -m1 'ERROR SUMMARY' "$out/gen_memcheck.log" 2>/dev/null)"
	printf '%-12s %s\n' racecheck "$(grep -m1 -i 'RACECHECK SUMMARY' "$out/gen_racecheck.log" 2>/dev/null)"
fi
if part watchdog; then
	echo "== watchdog (event 10 stalled, 1 s) =="
	grep -h 'FAIL\|passed' "$out/watchdog.log"
	echo "== 4096 workers =="
	tail -2 "$out/many.log"
fi
if part sanitize; then
	echo "== compute-sanitizer =="
	printf '%-12s exit %s  %s\n' memcheck "$mem_rc" "$(grep -m1 'ERROR SUMMARY' "$out/memcheck.log" 2>/dev/null)"
	printf '%-12s exit %s  %s\n' racecheck "$race_rc" "$(grep -m1 -i 'RACECHECK SUMMARY\|ERROR SUMMARY' "$out/racecheck.log" 2>/dev/null)"
	printf '%-12s exit %s  %s\n' "memcheck hf" "$hf_mem_rc" "$(grep -m1 'ERROR SUMMARY' "$out/memcheck_hf.log" 2>/dev/null)"
	printf '%-12s exit %s  %s\n' "racecheck hf" "$hf_race_rc" "$(grep -m1 -i 'RACECHECK SUMMARY\|ERROR SUMMARY' "$out/racecheck_hf.log" 2>/dev/null)"
fi
[ $bodies_rc -eq 0 ] && [ $mma_rc -eq 0 ] && [ $portable_rc -eq 0 ] && [ $sample_rc -eq 0 ] && [ $test_rc -eq 0 ] && [ $bf16_rc -eq 0 ] && [ $hf_rc -eq 0 ] && [ $chunk_rc -eq 0 ] && [ $seqs_rc -eq 0 ] && [ $python_rc -eq 0 ] && [ $genai_rc -eq 0 ] && [ $hip_rc -eq 0 ]

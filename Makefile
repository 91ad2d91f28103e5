# mkc - ahead-of-time megakernel compiler. `make help` lists the targets.

CC ?= cc
BUILD ?= build
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
PROTOC_C ?= protoc-c

WARN = -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wno-format-truncation
CFLAGS ?= -O2 -g
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ifeq ($(SAN),1)
  CFLAGS += $(SAN_FLAGS)
  LDFLAGS += $(SAN_FLAGS)
endif
ALL_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -D_FILE_OFFSET_BITS=64 $(WARN) $(CFLAGS) \
	-I$(BUILD)/gen -Iir -Icompiler -Ipasses -MMD -MP
# protobuf-c is linked statically so that build/mkc runs on machines
# without libprotobuf-c (the GPU machine has none of our Debian packages).
# cJSON (the ONNX-JSON frontend) is linked dynamically: Debian's
# libcjson-dev ships no static library, so build/mkc needs libcjson.so.1.
LIBS = -l:libprotobuf-c.a -lcjson -lm

LIB_SRC = $(wildcard ir/*.c) $(wildcard passes/*.c) $(wildcard backends/*.c) \
	$(wildcard backends/*/*.c) $(filter-out compiler/main.c,$(wildcard compiler/*.c))
GEN_SRC = $(BUILD)/gen/onnx.pb-c.c
# C text that the emitter writes into output files, found by these paths
# (tools/embed.sh makes one {name, text} table of them): runtime/ for every
# target, backends/<target>/ for one
RUNTIME = runtime/common.h runtime/bf16.h runtime/sample.h runtime/sched.h runtime/limits.h runtime/api_h.h runtime/files.h runtime/seqs.h runtime/host.h runtime/batch.h \
	runtime/profile.h runtime/exec_api.h runtime/api.h \
	backends/c/exec.h backends/c/scalar.h backends/c/cache.h backends/c/attention.h backends/c/rows.h backends/c/data.h \
	backends/c/elementwise.h backends/c/reduce.h backends/c/matmul.h backends/c/gqa.h \
	backends/cuda/sync.cuh backends/cuda/tma.h backends/cuda/exec.cuh backends/cuda/attention.cuh backends/cuda/matvec.cuh \
	backends/cuda/mma.cuh backends/hip/names.h backends/hip/sync.h backends/hip/mfma.h
# tests/fuzz holds libFuzzer targets, built by `make fuzz` only; tests/loaders
# a program that test_loaders.c builds against each model it compiles.
# TOOLCHAIN_SRC: the tests that build emitted code and the GPU bodies' tests
# with nvcc, hipcc and clang-19, and the runtime texts alone (test_runtime.c,
# whose C case is a cc -fsyntax-only): a binary of their own, which make test
# runs beside the rest and make sanitize leaves out, since the sanitizers
# would watch nothing there but the test process waiting on a compiler.
TOOLCHAIN_SRC = $(wildcard tests/toolchains/*.c) tests/backends/test_runtime.c
TEST_SRC = $(filter-out tests/fuzz/% tests/loaders/% tests/programs/% $(TOOLCHAIN_SRC),$(wildcard tests/*/*.c))

LIB_OBJ = $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/onnx.pb-c.o \
	$(BUILD)/obj/gen/runtime_text.o
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
TOOLCHAIN_OBJ = $(TOOLCHAIN_SRC:%.c=$(BUILD)/obj/%.o)

.PHONY: all test test-mkc test-toolchains check-models check-numbers conformance difftest sanitize numbers fuzz fuzz-replay format lint clean help
.DEFAULT_GOAL := all

all: $(BUILD)/mkc  ## build $(BUILD)/mkc

help:  ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(firstword $(MAKEFILE_LIST)) | sed 's/:.*## /\t/' | sed "s|\$$(BUILD)|$(BUILD)|g" | expand -t 17

# one run makes both files (a grouped target), even under make -j
$(BUILD)/gen/onnx.pb-c.c $(BUILD)/gen/onnx.pb-c.h &: $(ONNX_PROTO)
	@mkdir -p $(BUILD)/gen
	cp -f $(ONNX_PROTO) $(BUILD)/gen/onnx.proto
	cd $(BUILD)/gen && $(PROTOC_C) --c_out=. onnx.proto

# the Makefile too: a file added to RUNTIME may be older than the table
$(BUILD)/gen/runtime_text.c: $(RUNTIME) tools/embed.sh Makefile
	@mkdir -p $(BUILD)/gen
	sh tools/embed.sh $(RUNTIME) > $@

$(BUILD)/obj/gen/runtime_text.o: $(BUILD)/gen/runtime_text.c backends/core/runtime_files.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(CFLAGS) -I. -c $< -o $@

# the generated reader is not ours to warn about
$(BUILD)/obj/gen/onnx.pb-c.o: $(GEN_SRC)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(CFLAGS) -w -I$(BUILD)/gen -c $< -o $@

$(BUILD)/obj/%.o: %.c $(BUILD)/gen/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libmkc.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/mkc: $(BUILD)/obj/compiler/main.o $(BUILD)/libmkc.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/test_mkc: $(TEST_OBJ) $(BUILD)/libmkc.a
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(LIBS)

$(BUILD)/test_toolchains: $(TOOLCHAIN_OBJ) $(BUILD)/libmkc.a
	$(CC) $(LDFLAGS) -o $@ $^ -lcriterion $(LIBS)

# make test builds, then runs its parts at once, JOBS at a time (make -j;
# each part's output comes whole when it ends, and a part that fails does
# not stop the others: --keep-going); each Criterion binary and
# the conformance run take TEST_JOBS tests at a time. Measured on 2 cores,
# the default (2 and 2) took 483 s from a clean build; 3 parts of one test
# at a time took 484 s without one, the toolchain builds' last 100 s alone.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TEST_JOBS ?= $(JOBS)
TEST_PARTS = test-mkc test-toolchains test-python conformance difftest check-models check-numbers fuzz-replay
# what make sanitize runs: the parts where mkc, the test process or the
# emitted C run (not the compilers of test-toolchains, nor check-models' Python)
# SAN_SKIP: parts to leave out (CI leaves out conformance: .ci/run says why)
SAN_PARTS = $(filter-out $(SAN_SKIP),test-mkc conformance check-numbers fuzz-replay)

test:  ## run every test that needs no GPU: the parts below, JOBS (nproc) at a time
	@$(MAKE) --no-print-directory --keep-going -j$(JOBS) -Otarget $(TEST_PARTS)

test-mkc: $(BUILD)/mkc $(BUILD)/test_mkc  ## Criterion tests of mkc and of the emitted C run (build/test_mkc)
	MKC=$(BUILD)/mkc $(BUILD)/test_mkc -j$(TEST_JOBS)

test-toolchains: $(BUILD)/mkc $(BUILD)/test_toolchains  ## emitted code built by nvcc, hipcc and clang-19
	MKC=$(BUILD)/mkc $(BUILD)/test_toolchains -j$(TEST_JOBS)

test-python: $(BUILD)/mkc  ## the Python package (python/mkc) against libraries built from the C target
	cd python && MKC=$(CURDIR)/$(BUILD)/mkc python3 -m pytest -q tests

# the readers' fuzz targets with a plain main, to replay what they found
# (the pipeline's crashes replay through mkc in tests/compiler/test_bad_input.c)
FUZZ_READERS = json hf onnx
$(BUILD)/fuzz_replay_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_file.h tests/fuzz/replay.c $(BUILD)/libmkc.a \
	$(RUNTIME)
	$(CC) -std=c11 -D_DEFAULT_SOURCE $(WARN) $(CFLAGS) -I$(BUILD)/gen -Iir -Icompiler -Ipasses \
		$(LDFLAGS) -o $@ tests/fuzz/fuzz_$*.c tests/fuzz/replay.c $(BUILD)/libmkc.a $(LIBS)

fuzz-replay: $(FUZZ_READERS:%=$(BUILD)/fuzz_replay_%)  ## replay tests/fuzz/crashes_json, crashes_hf and crashes_onnx
	for t in $(FUZZ_READERS); do \
		LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
			$(BUILD)/fuzz_replay_$$t tests/fuzz/crashes_$$t/* || exit 1; done

conformance: $(BUILD)/mkc  ## ONNX node tests of every supported op, on the C target
	python3 tools/conformance.py --mkc $(BUILD)/mkc --jobs $(TEST_JOBS)

# DIFF_COUNT random graphs a run, each run a new seed (printed; DIFF_SEED=S
# makes a run again): about 0.5 CPU seconds a graph on the 2-core machine,
# more for a failure (it is reduced); tests/diff/cases replayed first.
DIFF_COUNT ?= 80
# the commit's graphs: CI and a local run of one commit make the same ones
# (a red CI run can be replayed), and each new commit explores new ones
DIFF_SEED ?= $(shell c=$$(git rev-parse --short=7 HEAD 2>/dev/null) && echo $$((0x$$c)))
difftest: $(BUILD)/mkc  ## random graphs against onnxruntime (tools/difftest.py), and tests/diff's cases
	python3 tools/difftest.py --mkc $(BUILD)/mkc --jobs $(TEST_JOBS) --out $(BUILD)/difftest \
		--replay tests/diff --count $(DIFF_COUNT) $(if $(DIFF_SEED),--seed $(DIFF_SEED))

check-models:  ## check that the generated test models are what their generators make
	@d=$$(mktemp -d) && python3 tests/models/gen_models.py $$d >/dev/null && \
	for f in $$(cd $$d && find . -type f ! -name README.md); do \
		cmp -s $$d/$$f tests/models/hand/$$f || { echo "check-models: $$f differs from what gen_models.py makes"; rm -rf $$d; exit 1; }; \
	done; rm -rf $$d; echo "check-models: tests/models/hand matches gen_models.py"
	@d=$$(mktemp -d) && python3 tests/models/gen_hf.py $$d >/dev/null && \
	for f in $$(cd $$d && find hf hf_chunk hf_bad -type f) $$(cd tests/models && find hf hf_chunk hf_bad -type f); do \
		cmp -s $$d/$$f tests/models/$$f || { echo "check-models: tests/models/$$f differs from what gen_hf.py makes"; rm -rf $$d; exit 1; }; \
	done; rm -rf $$d; echo "check-models: tests/models/hf, hf_chunk and hf_bad match gen_hf.py"
	@d=$$(mktemp -d) && python3 tests/models/gen_qwen3_onnx.py $$d >/dev/null && \
	for f in $$(cd $$d && find . -type f); do \
		cmp -s $$d/$$f tests/models/qwen3_tiny_onnx/$$f || { echo "check-models: qwen3_tiny_onnx/$$f differs from what gen_qwen3_onnx.py makes"; rm -rf $$d; exit 1; }; \
	done; rm -rf $$d; echo "check-models: tests/models/qwen3_tiny_onnx matches gen_qwen3_onnx.py"
	@python3 tests/models/gen_bf16_refs.py --check && \
	echo "check-models: tests/models/bf16_ref matches gen_bf16_refs.py (onnxruntime, within 1e-6)"

# MKC_TEST_CFLAGS: `mkc test` and the example builds compile the emitted C
# with the same sanitizers, so the generated code runs under them too; with
# line tables only (-g1), all that a report's file:line needs (the full -g
# took about 40% longer on each of the conformance run's 344 builds).
# SAN_TESTS: the Criterion tests it runs (CRITERION_TEST_PATTERN): all but
# the two that compare a fused build's bits with an unfused one's (168 of
# test-mkc's 1262 CPU seconds sanitized, session 32), whose fused bodies
# the golden tests run under the sanitizers anyway, and the two mutation
# tests (64 of 1071, session 40: CI's sanitized phase had grown to 638 s of
# its 23.4 minutes), which check that the proof refuses a dropped
# dependency and that the emitted C then goes wrong: the proof and the
# emitted C run under the sanitizers in every other test; and the few-token
# plan's bits with its norms inside and outside (90 of 1839, session 42),
# whose plans the chunks/ goldens run sanitized. SAN_TESTS='*/*' runs all.
SAN_TESTS ?= !(fuse/fused_*_give_the_same_bits|fuse/few_token_rows_take_their_norms|plan/verify_refuses_every_dropped_dependency|chunks/a_dropped_wait_in_a_chunked_plan_is_caught)
sanitize:  ## run SAN_PARTS with mkc, the tests and the emitted C under AddressSanitizer and UBSan
	@LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp MKC_TEST_CFLAGS="$(SAN_FLAGS) -g1" \
		CRITERION_TEST_PATTERN='$(SAN_TESTS)' \
		$(MAKE) --no-print-directory --keep-going -j$(JOBS) -Otarget BUILD=build/san SAN=1 $(SAN_PARTS)

check-numbers: $(BUILD)/mkc  ## check that the README's counts are what mkc measures now
	python3 tools/readme_numbers.py --check --mkc $(BUILD)/mkc

numbers: $(BUILD)/mkc  ## measure the README's compile-time numbers again and write them into it
	python3 tools/readme_numbers.py --mkc $(BUILD)/mkc

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_TARGETS = pipeline json hf onnx
# each target's own seconds, FUZZ_SECONDS unless set
FUZZ_TIME_pipeline = $(FUZZ_SECONDS)
FUZZ_TIME_json = $(FUZZ_SECONDS)
FUZZ_TIME_hf = $(FUZZ_SECONDS)
FUZZ_TIME_onnx = $(FUZZ_SECONDS)
# The targets run JOBS at a time: with one core each, a target does in its
# seconds what it did when they ran one after another.
fuzz:  ## build the libFuzzer targets (clang), run each FUZZ_SECONDS, JOBS at a time
	$(MAKE) -j$(JOBS) BUILD=build/fuzz CC=$(FUZZ_CC) \
		CFLAGS="-O1 -g -Wno-unknown-warning-option -fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
		build/fuzz/libmkc.a
	for t in $(FUZZ_TARGETS); do \
		$(FUZZ_CC) -std=c11 -D_DEFAULT_SOURCE -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer \
			-Ibuild/fuzz/gen -Iir -Icompiler -Ipasses tests/fuzz/fuzz_$$t.c build/fuzz/libmkc.a \
			$(LIBS) -o build/fuzz/fuzz_$$t || exit 1; \
		rm -rf build/fuzz/seeds_$$t && mkdir -p build/fuzz/seeds_$$t build/fuzz/corpus_$$t; \
	done
	mkdir -p $(patsubst %,build/fuzz/seeds_%,pipeline $(FUZZ_READERS))   # seeds for all, run or not
	for f in $$(find tests/models/hand -maxdepth 2 -name '*.onnx' -size -64k); do \
		{ printf '\000'; cat $$f; } > build/fuzz/seeds_pipeline/$$(echo $$f | tr / _); done
	for f in tests/models/hand/json/*.json; do \
		{ printf '\001'; cat $$f; } > build/fuzz/seeds_pipeline/$$(echo $$f | tr / _); done
	cp tests/models/hand/json/*.json tests/models/hand/json_bad/*.json build/fuzz/seeds_json/
	for f in $$(find tests/models/hand -maxdepth 2 -name '*.onnx' -size -64k); do \
		cp $$f build/fuzz/seeds_onnx/$$(echo $$f | tr / _); done
	python3 tests/fuzz/hf_seeds.py build/fuzz/seeds_hf tests/models/hf/* tests/models/hf_bad/*
	@$(MAKE) --no-print-directory -j$(JOBS) -Otarget $(FUZZ_TARGETS:%=fuzz-run-%)

# one target, built and seeded by make fuzz
fuzz-run-%:
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp build/fuzz/fuzz_$* \
		-max_total_time=$(FUZZ_TIME_$*) -timeout=20 -rss_limit_mb=4096 \
		-artifact_prefix=build/fuzz/$*- build/fuzz/corpus_$* build/fuzz/seeds_$*

# .clang-format is the tree's style, tuned to change as few lines as it can;
# the tree has not been reformatted with it (at 1a6700b this changed 2681
# lines in, 1659 out, in 74 files: trailing comments' spacing, lists one
# item a line, lines wrapped again)
format:  ## reformat the C sources with clang-format (.clang-format)
	clang-format -i $(LIB_SRC) compiler/main.c $(TEST_SRC) $(TOOLCHAIN_SRC) \
		$(wildcard ir/*.h compiler/*.h passes/*.h)

# the generated protobuf header: without it cppcheck would not know its types
lint: $(BUILD)/gen/onnx.pb-c.h  ## static checks with cppcheck (CI runs it)
	cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability \
		--suppress=missingIncludeSystem -Iir -Icompiler -Ipasses -I$(BUILD)/gen \
		$(LIB_SRC) compiler/main.c

clean:  ## remove build outputs
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

/*
 * test_kv.c - passes/kv.c, the KV caches' storage type: float32 unless
 * --kv bf16, whatever the weights; an error naming the node when --kv
 * bf16 meets a reader that cannot read bf16, and no file written; the
 * emitted code's caches in the type asked for; then mkc test on the C
 * target with bf16 caches (the harness rounds the past and widens what it
 * reads back), on one thread and on eight with a shuffled queue.
 */
#include "../mkc_run.h"

#include <string.h>

static const char *
kv_line(const mkc_result *r)
{
	const char *p = strstr(r->err, "kv: ");
	return p ? p : "(no kv line)";
}

Test(kv, caches_are_float32_unless_asked)
{
	const char *models[] = {"tests/models/hf/llama_tiny_bf16", "tests/models/tiny_llama_hf"};
	for (int i = 0; i < 2; i++) {
		mkc_result *r = mkc_run("-v", models[i], NULL);
		cr_assert_eq(r->status, 0, "%s", r->err);
		cr_expect_null(strstr(r->err, "KV caches stored as bf16"), "%s: %s", models[i], kv_line(r));
		r = mkc_run("-v", "--weights", "bf16", models[i], NULL);
		cr_assert_eq(r->status, 0, "%s", r->err);
		cr_expect_null(strstr(r->err, "KV caches stored as bf16"), "%s --weights bf16: %s", models[i],
			       kv_line(r));
		r = mkc_run("-v", "--kv", "bf16", models[i], NULL);
		cr_assert_eq(r->status, 0, "%s", r->err);
		cr_expect(strstr(r->err, "kv: 4 of 4 KV caches stored as bf16"), "%s --kv bf16: %s",
			  models[i], kv_line(r));
		r = mkc_run("-v", "--kv", "bf16", "--kv", "f32", models[i], NULL);
		cr_assert_eq(r->status, 0, "%s", r->err);
		cr_expect_null(strstr(r->err, "KV caches stored as bf16"), "the last --kv counts: %s", kv_line(r));
	}
}

/* An attention that split_attn leaves whole reads the caches itself: float32 only. */
Test(kv, an_unsplit_attention_stops_a_bf16_compile)
{
	const char *m = "tests/models/tiny_llama_decode_op23";
	mkc_result *r = mkc_run("--kv", "bf16", "-o", "/tmp/mkc_kv_never.c", m, NULL);
	cr_expect_eq(r->status, 1, "%s", r->err);
	cr_expect(strstr(r->err, "node 'node_scaled_dot_product_attention' (Attention): --kv bf16: "
			 "KV cache 'present.0.key' is read here"), "%s", r->err);
	cr_expect_neq(access("/tmp/mkc_kv_never.c", F_OK), 0, "an error left a file behind");
	r = mkc_run("--kv", "f16", m, NULL);
	cr_expect_eq(r->status, 2, "%s", r->err);
	cr_expect(strstr(r->err, "--kv takes f32 or bf16"), "%s", r->err);
}

/* The emitted code: the caches' table entries, the append and the parts' calls. */
Test(kv, emitted_code_keeps_and_reads_bf16_caches)
{
	char cmd[1024], out[65536];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s --kv bf16 tests/models/hf/llama_tiny_bf16 "
		 "-o $d/m.c && grep -q 'mkc_cache_append(NULL, y, ' $d/m.c && "
		 "! grep -q 'mkc_cache_append(y, NULL, ' $d/m.c && "
		 "grep -q 'mkc_attn_part_c(x0, x0_s, NULL, x1, x1_s, NULL, x2, x2_s' $d/m.c; "
		 "rc=$?; rm -rf $d; exit $rc", mkc_bin());
	cr_expect_eq(mkc_shell(cmd, out, sizeof out), 0,
		     "the appends and parts do not write and read bf16 caches: %s", out);
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s tests/models/hf/llama_tiny_bf16 "
		 "-o $d/m.c && grep -q 'mkc_cache_append(y, NULL, ' $d/m.c && "
		 "grep -q 'mkc_attn_part_c(x0, x0_s, x1, NULL, x1_s, x2, NULL, x2_s' $d/m.c; "
		 "rc=$?; rm -rf $d; exit $rc", mkc_bin());
	cr_expect_eq(mkc_shell(cmd, out, sizeof out), 0, "float32 caches by default: %s", out);
}

Test(kv, bf16_caches_match_onnxruntime_within_their_rounding, .timeout = 300)
{
	/* 1e-2: the keys and values rounded to bf16 (the caches compared too) */
	mkc_result *r = mkc_run("test", "--kv", "bf16", "--tolerance", "1e-2", "--steps", "2",
				"tests/models/hf/qwen3_tiny", "tests/models/qwen3_tiny_onnx", NULL);
	cr_assert_eq(r->status, 0, "%s%s", r->out, r->err);
	r = mkc_run("test", "--kv", "bf16", "--tolerance", "1e-2", "--shuffle", "5", "--threads", "8",
		    "tests/models/hf/qwen3_tiny", NULL);
	cr_assert_eq(r->status, 0, "%s%s", r->out, r->err);
	/* and the bf16 caches do move the results: not the float32 path by mistake */
	r = mkc_run("test", "--kv", "bf16", "--steps", "1", "tests/models/hf/qwen3_tiny", NULL);
	cr_expect_neq(r->status, 0, "bf16 caches within 1e-5 of float32:\n%s", r->out);
}

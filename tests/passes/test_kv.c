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

/*
 * An attention that split_attn leaves whole (a prompt chunk's: many queries)
 * reads the caches itself: float32 only.
 */
Test(kv, an_unsplit_attention_stops_a_bf16_compile)
{
	const char *m = "tests/models/hf_chunk/qwen3_tiny";
	unlink("/tmp/mkc_kv_never.c");   /* what an earlier run may have left */
	unlink("/tmp/mkc_kv_never.h");
	mkc_result *r = mkc_run("--kv", "bf16", "--max-chunk", "8", "-o", "/tmp/mkc_kv_never.c", m,
				NULL);
	cr_expect_eq(r->status, 1, "%s", r->err);
	cr_expect(strstr(r->err, "node 'model.layers.0.self_attn.attn' (Attention): --kv bf16: "
			 "KV cache 'present.0.key' is read here"), "%s", r->err);
	cr_expect_neq(access("/tmp/mkc_kv_never.c", F_OK), 0, "an error left a file behind");
	r = mkc_run("--kv", "f16", m, NULL);
	cr_expect_eq(r->status, 2, "%s", r->err);
	cr_expect(strstr(r->err, "--kv takes f32 or bf16"), "%s", r->err);
}

/*
 * The emitted code: the views the appends write and the parts read, by
 * their bf16 flag (the last field of a view). One line a tile function that
 * appends (mkc_cache_append_box or HeadProj's mkc_head_proj: its y) or reads
 * the caches (mkc_attn_part_c: its x1 and x2), with the flags it gives them.
 */
static const char *
cache_views(const char *args, char *out, size_t n)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s %s tests/models/hf/llama_tiny_bf16 -o $d/m.c && "
		 "awk '/^mkc_body_/ { y = x1 = x2 = \"\" } "
		 "/const mkc_view (y|x1|x2) / { f = $NF; sub(/};/, \"\", f); "
		 "if ($3 == \"y\") y = f; if ($3 == \"x1\") x1 = f; if ($3 == \"x2\") x2 = f } "
		 "/\\tmkc_cache_append_box\\(|\\tmkc_head_proj\\(/ { print \"append\", y } "
		 "/\\tmkc_attn_part_c\\(/ { print \"part\", x1, x2 }' $d/m.c; rc=$?; rm -rf $d; exit $rc",
		 mkc_bin(), args);
	cr_assert_eq(mkc_shell(cmd, out, n), 0, "%s", out);
	return out;
}

Test(kv, emitted_code_keeps_and_reads_bf16_caches)
{
	char out[65536];
	cache_views("--kv bf16", out, sizeof out);
	cr_expect(strstr(out, "append 1\n") && strstr(out, "part 1 1\n"),
		  "the appends and parts do not write and read bf16 caches: %s", out);
	cr_expect(!strstr(out, "append 0") && !strstr(out, "part 0"), "a float32 cache left: %s", out);
	cache_views("", out, sizeof out);
	cr_expect(strstr(out, "append 0\n") && strstr(out, "part 0 0\n"),
		  "float32 caches by default: %s", out);
	cr_expect(!strstr(out, "append 1") && !strstr(out, "part 1"), "a bf16 cache by default: %s",
		  out);
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

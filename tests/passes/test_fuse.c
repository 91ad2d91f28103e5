/*
 * test_fuse.c - the fuse pass: each rewrite (residual add into the Gemm,
 * SiLU, SwiGLU) is made where its conditions hold and only there
 * (hand-built graphs), and models compiled with and
 * without it give the same bits on the C target, every output and every KV
 * cache (mkc test --keep writes them; the files are compared byte for byte).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../mkc_run.h"
#include "../fixture.h"
#include "../graph_builder.h"
#include "passes.h"

TestSuite(fuse, .init = setup, .fini = teardown);

/* infer, canon, fuse and dce with the IR checker after each, as the driver runs them */
static void
passes(mkc_graph *g)
{
	cr_assert_eq(mkc_pass_infer(g), 0, "%s", errs());
	cr_assert_eq(mkc_pass_canon(g), 0, "%s", errs());
	cr_assert_eq(mkc_pass_fuse(g), 0, "%s", errs());
	cr_assert_eq(mkc_verify_graph(g, true), 0, "%s", errs());
	cr_assert_eq(mkc_pass_dce(g), 0, "%s", errs());
	cr_assert_eq(mkc_verify_graph(g, true), 0, "%s", errs());
}

/* Residual adds: h [2,4] + Gemm(x [2,8], W [4,8], transB), and the ways it must not fuse. */
typedef enum {
	RES_LEFT, RES_RIGHT, RES_SECOND_READER, RES_GEMM_OUTPUT, RES_ALPHA, RES_HAS_C,
	RES_BROADCAST, RES_NOT_F32,
} res_form;

static mkc_graph *
residual_graph(res_form form)
{
	mkc_graph *g = gb_graph(ctx, "res.onnx", 0);
	mkc_tensor *x = gb_input(g, "x", MKC_DT_FLOAT, 2, (const int64_t[]){2, 8});
	mkc_tensor *h = form == RES_BROADCAST ? gb_input(g, "h", MKC_DT_FLOAT, 1, (const int64_t[]){4})
					      : gb_input(g, "h", MKC_DT_FLOAT, 2, (const int64_t[]){2, 4});
	mkc_tensor *w = gb_weight(g, "w", MKC_DT_FLOAT, 2, (const int64_t[]){4, 8});
	mkc_tensor *c = gb_weight(g, "c", MKC_DT_FLOAT, 1, (const int64_t[]){4});
	mkc_tensor *gin[3] = {x, w, c};
	mkc_node *gm = gb_node(g, "Gemm", "o", form == RES_HAS_C ? 3 : 2, gin);
	gb_attr_int(g, gm, "transB", 1);
	if (form == RES_ALPHA)
		gb_attr_float(g, gm, "alpha", 0.5f);
	if (form == RES_NOT_F32) {
		/* float64 throughout: the emitted Gemm computes in float32 */
		x->dtype = h->dtype = w->dtype = MKC_DT_DOUBLE;
		w->nbytes *= 2;
		w->data = mkc_arena_alloc(ctx->arena, w->nbytes);
	}
	mkc_tensor *o = gm->out[0];
	mkc_tensor *add_in[2] = {form == RES_RIGHT ? o : h, form == RES_RIGHT ? h : o};
	mkc_node *add = gb_node(g, "Add", "y", 2, add_in);
	gb_output(g, add->out[0]);
	if (form == RES_SECOND_READER)
		gb_output(g, gb_op(g, "Neg", "z", o, NULL));
	if (form == RES_GEMM_OUTPUT)
		gb_output(g, o);
	return g;
}

Test(fuse, residual_add_into_the_gemm)
{
	const struct {
		res_form form;
		bool fused;
	} cases[] = {
		{RES_LEFT, true}, {RES_RIGHT, true}, {RES_SECOND_READER, false},
		{RES_GEMM_OUTPUT, false}, {RES_ALPHA, false}, {RES_HAS_C, false},
		{RES_BROADCAST, false}, {RES_NOT_F32, false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		mkc_graph *g = residual_graph(cases[i].form);
		passes(g);
		int form = (int)cases[i].form;
		cr_expect_eq(gb_count_op(g, MKC_OP_ADD), !cases[i].fused, "form %d", form);
		if (!cases[i].fused)
			continue;
		cr_assert_eq(g->nodes.n, 1, "form %d", form);
		mkc_node *n = MKC_NODE(g, 0);
		cr_expect_eq(n->op, MKC_OP_GEMM);
		cr_expect_str_eq(n->name, "node_o", "the fused node is named after the Gemm");
		cr_expect_str_eq(n->out[0]->name, "y");
		cr_assert_eq(n->nin, 3);
		cr_expect_str_eq(n->in[0]->name, "x");
		cr_expect_str_eq(n->in[1]->name, "w");
		cr_expect_str_eq(n->in[2]->name, "h");
		cr_expect_eq(mkc_node_attr_int(n, "transB", 0), 1);
		cr_expect_eq(mkc_node_attr_float(n, "beta", 0), 1.0f);
		cr_expect_eq(mkc_node_attr_float(n, "alpha", 1), 1.0f);
	}
}

/* SiLU and SwiGLU over g, u [2,8], and the ways they must not fuse. */
typedef enum {
	SILU_LEFT, SILU_RIGHT, SWIGLU_UP_RIGHT, SWIGLU_UP_LEFT, SWIGLU_UP_BROADCAST,
	SIGMOID_READ_ELSEWHERE, SIGMOID_OF_ANOTHER, SILU_READ_ELSEWHERE,
} silu_form;

static mkc_graph *
silu_graph(silu_form form)
{
	const int64_t d28[] = {2, 8};
	mkc_graph *g = gb_graph(ctx, "silu.onnx", 0);
	mkc_tensor *x = gb_input(g, "g", MKC_DT_FLOAT, 2, d28);
	mkc_tensor *h = gb_input(g, "h", MKC_DT_FLOAT, 2, d28);
	mkc_tensor *u = form == SWIGLU_UP_BROADCAST
				? gb_input(g, "u", MKC_DT_FLOAT, 1, (const int64_t[]){8})
				: gb_input(g, "u", MKC_DT_FLOAT, 2, d28);
	mkc_tensor *s = gb_op(g, "Sigmoid", "s", x, NULL);
	mkc_tensor *other = form == SIGMOID_OF_ANOTHER ? h : x;
	mkc_tensor *t = form == SILU_RIGHT ? gb_op(g, "Mul", "t", s, other)
					   : gb_op(g, "Mul", "t", other, s);
	mkc_tensor *y = t;
	if (form >= SWIGLU_UP_RIGHT)
		y = form == SWIGLU_UP_LEFT ? gb_op(g, "Mul", "y", u, t) : gb_op(g, "Mul", "y", t, u);
	gb_output(g, y);
	if (form == SIGMOID_READ_ELSEWHERE)
		gb_output(g, s);
	if (form == SILU_READ_ELSEWHERE)
		gb_output(g, gb_op(g, "Neg", "z", t, NULL));
	return g;
}

Test(fuse, silu_and_swiglu_forms)
{
	const struct {
		silu_form form;
		mkc_op op;     /* what the last node becomes */
		int nodes;
	} cases[] = {
		{SILU_LEFT, MKC_OP_SILU, 1}, {SILU_RIGHT, MKC_OP_SILU, 1},
		{SWIGLU_UP_RIGHT, MKC_OP_SILU_MUL, 1}, {SWIGLU_UP_LEFT, MKC_OP_SILU_MUL, 1},
		{SWIGLU_UP_BROADCAST, MKC_OP_SILU_MUL, 1}, {SIGMOID_READ_ELSEWHERE, MKC_OP_MUL, 3},
		{SIGMOID_OF_ANOTHER, MKC_OP_MUL, 3},
		/* t stays (another node reads it), so y stays a Mul of it */
		{SILU_READ_ELSEWHERE, MKC_OP_MUL, 3},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		mkc_graph *g = silu_graph(cases[i].form);
		passes(g);
		int form = (int)cases[i].form;
		cr_assert_eq(g->nodes.n, cases[i].nodes, "form %d: %d nodes", form, g->nodes.n);
		mkc_node *last = MKC_NODE(g, cases[i].form == SILU_READ_ELSEWHERE ? 1 : g->nodes.n - 1);
		cr_expect_eq(last->op, cases[i].op, "form %d: %s", form, last->op_type);
		if (cases[i].form == SILU_READ_ELSEWHERE)
			cr_expect_eq(MKC_NODE(g, 0)->op, MKC_OP_SILU);
		if (cases[i].op == MKC_OP_MUL)
			continue;
		cr_expect_str_eq(last->domain, "mkc.internal");
		cr_expect_str_eq(last->in[0]->name, "g", "form %d", form);
		if (cases[i].op == MKC_OP_SILU_MUL)
			cr_expect_str_eq(last->in[1]->name, "u", "form %d", form);
	}
}

/*
 * The same bits with and without the pass, on every output and every KV
 * cache of every step (what mkc test --keep leaves in its scratch folder).
 */
static const char *
kept_dir(const char *err)
{
	static char dir[2][512];
	static int k;
	const char *p = strstr(err, "mkc: kept ");
	cr_assert_not_null(p, "%s", err);
	p += strlen("mkc: kept ");
	size_t n = strcspn(p, "\n");
	k ^= 1;
	snprintf(dir[k], sizeof dir[k], "%.*s", (int)n, p);
	return dir[k];
}

static void
expect_same_bits_few(const char *model, const char *weights, const char *want_fused,
		     const char *chunk, const char *few)
{
	/* bf16 weights move the results off the float32 reference; the bits are the test */
	const char *tol = strcmp(weights, "bf16") ? "1e-5" : "1e-2";
	mkc_result *r = mkc_run("test", "--keep", "-v", "--max-chunk", chunk, "--few-tokens", few,
				"--weights", weights, "--tolerance", tol, model, NULL);
	cr_assert_eq(r->status, 0, "%s%s", r->out, r->err);
	cr_assert(strstr(r->err, want_fused), "%s: no '%s' in\n%s", model, want_fused, r->err);
	const char *fused = kept_dir(r->err);
	r = mkc_run("test", "--keep", "-v", "--max-chunk", chunk, "--few-tokens", few, "--no-fuse",
		    "--weights", weights, "--tolerance", tol, model, NULL);
	cr_assert_eq(r->status, 0, "%s%s", r->out, r->err);
	cr_assert_null(strstr(r->err, "fuse: "), "--no-fuse ran the pass:\n%s", r->err);
	cr_assert_null(strstr(r->err, "fuse_glu: "), "--no-fuse ran fuse_glu:\n%s", r->err);
	cr_assert_null(strstr(r->err, "fuse_rope: "), "--no-fuse ran fuse_rope:\n%s", r->err);
	cr_assert_null(strstr(r->err, "fuse_qkv: "), "--no-fuse ran fuse_qkv:\n%s", r->err);
	const char *plain = kept_dir(r->err);
	char cmd[2048], out[8192];
	/* every output and cache file of the unfused run has a twin with the same bytes */
	snprintf(cmd, sizeof cmd, "cd %s && n=0 && for f in out*.bin cache*.bin; do "
		 "[ -f \"$f\" ] || continue; cmp \"$f\" %s/\"$f\" || exit 1; n=$((n+1)); done && "
		 "echo \"compared $n\" && [ $n -gt 0 ]", plain, fused);
	int rc = mkc_shell(cmd, out, sizeof out);
	cr_expect_eq(rc, 0, "%s: fused and unfused results differ: %s", model, out);
	snprintf(cmd, sizeof cmd, "rm -rf %s %s", fused, plain);
	cr_expect_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
}

/* steps of up to chunk tokens, no few-token plan (the C target's default) */
static void
expect_same_bits_chunk(const char *model, const char *weights, const char *want_fused,
		       const char *chunk)
{
	expect_same_bits_few(model, weights, want_fused, chunk, "0");
}

/* one token a step (--max-chunk 1 is the decode step's graph) */
static void
expect_same_bits(const char *model, const char *weights, const char *want_fused)
{
	expect_same_bits_chunk(model, weights, want_fused, "1");
}

Test(fuse, fused_models_give_the_same_bits, .timeout = 300)
{
	const char *both = "fuse: 4 residual adds into Gemm, 2 SwiGLU, 0 SiLU alone";
	expect_same_bits("tests/models/tiny_llama_hf", "f32", both);
	expect_same_bits("tests/models/tiny_llama_hf", "bf16", both);
	/* each SwiGLU with its gate and up products: one NormGlu node */
	expect_same_bits("tests/models/hf/llama_tiny_bf16", "f32",
			 "fuse_glu: 2 SwiGLU with the products that feed them");
	/* o_proj has no bias: fused; down_proj has none either */
	expect_same_bits("tests/models/hf/qwen2_tiny", "f32", both);
	/* mlp_bias and attention_bias: every Gemm has a C already, so only SwiGLU fuses */
	expect_same_bits("tests/models/hf/llama_tiny_sharded", "f32",
			 "fuse: 0 residual adds into Gemm, 2 SwiGLU");
	/* an ONNX export: MatMul residuals stay, SwiGLU fuses */
	expect_same_bits("tests/models/tiny_llama_decode_op18", "f32",
			 "fuse: 0 residual adds into Gemm, 2 SwiGLU");
	/* each layer's key rotated as its append writes the cache: the caches
	 * compared are the ones the fused body wrote (Qwen3: after k_norm) */
	expect_same_bits("tests/models/tiny_llama_decode_op23", "f32",
			 "fuse_rope: 2 rotary embeddings into the cache appends after them");
	expect_same_bits("tests/models/hf/qwen3_tiny", "f32",
			 "fuse_rope: 2 rotary embeddings into the cache appends after them");
	/* the query's rotary and both appends computed by the q/k/v products
	 * (HeadProj): halves rotated (Llama), the caches in float32 and bf16 */
	const char *qkv = "fuse_qkv: 2 rotary embeddings and 4 cache appends into the products";
	expect_same_bits("tests/models/tiny_llama_hf", "f32", qkv);
	expect_same_bits("tests/models/tiny_llama_hf", "bf16", qkv);
	expect_same_bits("tests/models/hf/llama_tiny_llama3_rope", "f32", qkv);
}

/*
 * Steps of up to 8 tokens: no norm goes into the [S, K] rows' products, so
 * each SwiGLU and its two products become Glu (passes/fuse_glu.c) and
 * compute the same bits (the golden chunks: past 5 + 7 new, 6 + 1, 0 + 4).
 */
Test(fuse, fused_chunks_give_the_same_bits, .timeout = 300)
{
	expect_same_bits_chunk("tests/models/hf_chunk/llama_tiny_bf16", "f32",
			       "fuse_glu: 2 SwiGLU with the products that feed them (2 on rows no "
			       "norm went into: Glu)", "8");
	expect_same_bits_chunk("tests/models/hf_chunk/qwen3_tiny", "bf16",
			       "fuse_glu: 2 SwiGLU with the products that feed them (2 on rows no "
			       "norm went into: Glu)", "8");
}

/*
 * A few-token plan (--few-tokens 8: the chunk's plan of 8 cut as one) takes
 * the norms of its [S, K] rows into the products after them (NormGemm,
 * NormGlu of every row: passes/fuse_norm.c), with the same bits. With
 * every token's logits (--all-logits) the output layer's norm is of the
 * step's rows too: taken at 8 workers, where its 256 columns are within 2
 * x 64 a worker (passes/tile.c cuts the product as a decode step's); not
 * at one, where they are not (tile.c would cut it as a chunk's, whose GPU
 * tile takes no norm).
 */
Test(fuse, few_token_rows_take_their_norms, .timeout = 300)
{
	expect_same_bits_few("tests/models/hf_chunk/llama_tiny_bf16", "f32",
			     "fuse_norm: 5 RMS norms into the products that read them (4 of a "
			     "few-token step's rows)", "8", "8");
	expect_same_bits_few("tests/models/hf_chunk/qwen3_tiny", "bf16",
			     "fuse_norm: 5 RMS norms into the products that read them (4 of a "
			     "few-token step's rows)", "8", "8");
	for (int w = 8; w >= 1; w -= 7) {
		char cmd[1024], out[16384];
		snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s -v tests/models/hf_chunk/llama_tiny_bf16 "
			 "--max-chunk 8 --few-tokens 8 --all-logits --workers %d -o $d/m.c 2>&1; "
			 "rm -rf $d", mkc_bin(), w);
		cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
		cr_expect(strstr(out, w == 8 ? "fuse_norm: 5 RMS norms into the products that read "
						"them (5 of a few-token step's rows)"
					     : "fuse_norm: 4 RMS norms into the products that read "
						"them (4 of a few-token step's rows)"),
			  "--workers %d: %s", w, out);
	}
}

/*
 * fuse_qkv takes a layer's rotary and appends only when it can take all
 * three products' (the stage is gone only then): not Qwen3's, whose q and
 * k have per-head norms before the rotary (its values' appends alone
 * would stay out), nor a Llama with biased projections (NormGemm with C).
 */
Test(fuse, qkv_only_whole_layers)
{
	const char *none[] = {"tests/models/hf/qwen3_tiny", "tests/models/hf/llama_tiny_sharded",
			      "tests/models/hf/qwen2_tiny"};
	for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
		mkc_result *r = mkc_run("-v", none[i], NULL);
		cr_assert_eq(r->status, 0, "%s: %s", none[i], r->err);
		cr_expect(strstr(r->err, "fuse_rope: 2 rotary"), "%s: %s", none[i], r->err);
		cr_expect_null(strstr(r->err, "fuse_qkv: "), "%s: %s", none[i], r->err);
	}
	mkc_result *r = mkc_run("-v", "tests/models/tiny_llama_hf", NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_expect(strstr(r->err, "fuse_qkv: 2 rotary embeddings and 4 cache appends"), "%s", r->err);
}

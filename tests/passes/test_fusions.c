/*
 * test_fusions.c - the graph rewrites after canon, one suite a pass, on
 * graphs built by hand (tests/graph_builder.h): fuse.c (fuse_pass),
 * fuse_norm.c, fuse_glu.c, fuse_rope.c, fuse_qkv.c, split_attn.c and kv.c
 * (kv_pass). Each suite has a graph where its pass fires, with the nodes,
 * inputs and attributes it must make, and near misses where it must not.
 *
 * Where the result runs, it runs: the graph goes through the driver's
 * passes and the C target, is built with cc and stepped on inputs made
 * from sines; its outputs, printed exactly (%a), must be the same bits as
 * the same graph's with --no-fuse (the exact fusions), within float32
 * rounding of attention computed here (split_attn, whose merge sums in
 * another order), or near, not equal to, float32 caches' (kv's bf16). A
 * graph with KV caches is stepped three times, so that the caches the
 * fused nodes wrote are read back.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fixture.h"
#include "../graph_builder.h"
#include "../mkc_run.h"
#include "../../backends/core/emit.h"
#include "driver.h"
#include "kernel.h"

TestSuite(fuse_pass, .init = setup, .fini = teardown);
TestSuite(fuse_norm, .init = setup, .fini = teardown);
TestSuite(fuse_glu, .init = setup, .fini = teardown);
TestSuite(fuse_rope, .init = setup, .fini = teardown);
TestSuite(fuse_qkv, .init = setup, .fini = teardown);
TestSuite(split_attn, .init = setup, .fini = teardown);
TestSuite(kv_pass, .init = setup, .fini = teardown);

/* Running a graph. */

/* The value of element k of input i at step s, here and in the program below. */
static float
input_value(int i, int64_t k, int s)
{
	return sinf(0.7f * (float)k + 1.3f * (float)i + 2.1f * (float)s);
}

/* Every input (float32) filled by input_value; per step, a line per output. */
static const char harness[] =
	"#include \"net.h\"\n"
	"#include <math.h>\n"
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"static int64_t\n"
	"count(int rank, const int64_t *shape)\n"
	"{\n"
	"	int64_t n = 1;\n"
	"	for (int d = 0; d < rank; d++)\n"
	"		n *= shape[d];\n"
	"	return n;\n"
	"}\n"
	"int\n"
	"main(int argc, char **argv)\n"
	"{\n"
	"	net *m;\n"
	"	if (argc < 2 || net_create(&m, NULL) != 0)\n"
	"		return 2;\n"
	"	for (int s = 0; s < atoi(argv[1]); s++) {\n"
	"		void *in[16], *out[16];\n"
	"		int64_t shape[8], n[16];\n"
	"		for (int i = 0; i < net_num_inputs(); i++) {\n"
	"			float *v = malloc((size_t)count(net_input_shape(i, NULL, shape), shape) * 4 + 4);\n"
	"			for (int64_t k = 0; k < count(net_input_shape(i, NULL, shape), shape); k++)\n"
	"				v[k] = sinf(0.7f * (float)k + 1.3f * (float)i + 2.1f * (float)s);\n"
	"			in[i] = v;\n"
	"		}\n"
	"		for (int o = 0; o < net_num_outputs(); o++) {\n"
	"			n[o] = count(net_output_shape(o, NULL, shape), shape);\n"
	"			out[o] = malloc((size_t)n[o] * 4 + 4);\n"
	"		}\n"
	"		if (net_step(m, (const void *const *)in, out, NULL) != 0) {\n"
	"			fprintf(stderr, \"%s\\n\", net_last_error(m));\n"
	"			return 1;\n"
	"		}\n"
	"		for (int o = 0; o < net_num_outputs(); o++) {\n"
	"			printf(\"%d %s\", s, net_output_name(o));\n"
	"			for (int64_t k = 0; k < n[o]; k++)\n"
	"				printf(\" %a\", (double)((float *)out[o])[k]);\n"
	"			printf(\"\\n\");\n"
	"			free(out[o]);\n"
	"		}\n"
	"		for (int i = 0; i < net_num_inputs(); i++)\n"
	"			free(in[i]);\n"
	"	}\n"
	"	net_destroy(m);\n"
	"	return 0;\n"
	"}\n";

/*
 * g through the driver's passes (o), the C target and cc; its printed
 * outputs over steps steps (a buffer of the arena's).
 */
/*
 * g through the driver's passes (o) and target's emitter into a new
 * folder: the folder (the arena's), which holds net.EXT and net.h.
 */
static const char *
emit_graph(mkc_graph *g, const mkc_driver_options *o, const char *target, const char *ext)
{
	mkc_plan *p = NULL;
	cr_assert_eq(mkc_run_passes(g, o, &p), 0, "%s", errs());
	char *dir = mkc_arena_printf(ctx->arena, "/tmp/mkc_fusions_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	mkc_emit_options eo = {
		.out_path = mkc_arena_printf(ctx->arena, "%s/net.%s", dir, ext),
		.prefix = "net",
		.command_line = "test_fusions",
		.max_dim = o->max_dim,
		.embed_limit = 1 << 20,
	};
	cr_assert_eq(mkc_emit(&p, 1, mkc_target_find(target), &eo), 0, "%s", errs());
	return dir;
}

static char *
run_graph(mkc_graph *g, const mkc_driver_options *o, int steps)
{
	const char *dir = emit_graph(g, o, "c", "c");
	FILE *f = fopen(mkc_arena_printf(ctx->arena, "%s/main.c", dir), "w");
	cr_assert_not_null(f);
	fputs(harness, f);
	fclose(f);
	size_t cap = 1 << 18;
	char *out = mkc_arena_alloc(ctx->arena, cap);
	char *cmd = mkc_arena_printf(ctx->arena,
				     "cd %s && ${CC:-cc} -std=c11 -O1 -Wall -Wextra -Werror -pthread "
				     "$MKC_TEST_CFLAGS -o run net.c main.c -lm && ./run %d; rc=$?; "
				     "cd / && rm -rf %s; exit $rc", dir, steps, dir);
	cr_assert_eq(mkc_shell(cmd, out, cap), 0, "%s", out);
	return out;
}

static const mkc_driver_options run_opts = {.workers = 4, .max_dim = 64};

/* The graph made by build(form), run with and without the exact fusions: the same bits. */
static void
same_bits(mkc_graph *(*build)(int form), int form, int steps)
{
	mkc_driver_options plain = run_opts;
	plain.no_fuse = true;
	const char *a = run_graph(build(form), &run_opts, steps);
	const char *b = run_graph(build(form), &plain, steps);
	cr_assert_gt(strlen(a), 20, "%s", a);
	cr_assert_str_eq(a, b, "form %d: fused and --no-fuse outputs differ", form);
}

/* The graph through the driver's passes; its plan is not needed. */
static mkc_graph *
compiled(mkc_graph *g, const mkc_driver_options *o)
{
	mkc_plan *p = NULL;
	cr_assert_eq(mkc_run_passes(g, o, &p), 0, "%s", errs());
	return g;
}

typedef int (*graph_pass)(mkc_graph *g);

/* g through the graph passes listed (NULL-terminated), then the IR checker. */
static mkc_graph *
through(mkc_graph *g, const graph_pass *passes)
{
	for (; *passes; passes++)
		cr_assert_eq((*passes)(g), 0, "%s", errs());
	cr_assert_eq(mkc_verify_graph(g, true), 0, "%s", errs());
	return g;
}

/* The one live node of op (asserting there is one). */
static mkc_node *
only(const mkc_graph *g, mkc_op op)
{
	mkc_node *found = NULL;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->op != op || n->dead)
			continue;
		cr_assert_null(found, "two %s nodes", mkc_op_info_of(op)->name);
		found = n;
	}
	cr_assert_not_null(found, "no %s node", mkc_op_info_of(op)->name);
	return found;
}

/* A float32 weight of sines (seeded apart, scaled down to keep sums small). */
static mkc_tensor *
weight(mkc_graph *g, const char *name, int rank, const int64_t *dims, float seed)
{
	mkc_tensor *t = gb_weight(g, name, MKC_DT_FLOAT, rank, dims);
	float *v = (float *)t->data;
	for (size_t k = 0; k < t->nbytes / sizeof *v; k++)
		v[k] = 0.25f * sinf(0.37f * (float)k + seed);
	return t;
}

/* fuse.c: the residual add and SwiGLU (the structural cases are in test_fuse.c). */

/* h [2,4] + Gemm(x [2,8], W [4,8], transB); form 1: y = SiluMul of g, u [2,8] */
static mkc_graph *
exact_graph(int form)
{
	mkc_graph *g = gb_graph(ctx, "exact.onnx", 18);
	if (form == 0) {
		mkc_tensor *x = gb_input(g, "x", MKC_DT_FLOAT, 2, (const int64_t[]){2, 8});
		mkc_tensor *h = gb_input(g, "h", MKC_DT_FLOAT, 2, (const int64_t[]){2, 4});
		mkc_tensor *w = weight(g, "w", 2, (const int64_t[]){4, 8}, 0.5f);
		mkc_node *gm = gb_node(g, "Gemm", "o", 2, (mkc_tensor *[]){x, w});
		gb_attr_int(g, gm, "transB", 1);
		gb_output(g, gb_op(g, "Add", "y", h, gm->out[0]));
		return g;
	}
	mkc_tensor *x = gb_input(g, "g", MKC_DT_FLOAT, 2, (const int64_t[]){2, 8});
	mkc_tensor *u = gb_input(g, "u", MKC_DT_FLOAT, 2, (const int64_t[]){2, 8});
	mkc_tensor *t = gb_op(g, "Mul", "t", x, gb_op(g, "Sigmoid", "s", x, NULL));
	gb_output(g, gb_op(g, "Mul", "y", t, u));
	return g;
}

Test(fuse_pass, residual_and_swiglu_run_the_same, .timeout = 300)
{
	mkc_graph *g = compiled(exact_graph(0), &run_opts);
	mkc_node *n = only(g, MKC_OP_GEMM);
	cr_expect_eq(n->nin, 3, "the residual is the Gemm's C");
	cr_expect_eq(gb_count_op(g, MKC_OP_ADD), 0);
	g = compiled(exact_graph(1), &run_opts);
	cr_expect_str_eq(only(g, MKC_OP_SILU_MUL)->out[0]->name, "y");
	same_bits(exact_graph, 0, 1);
	same_bits(exact_graph, 1, 1);
}

/* Silu(g) [8] times u [2, 8]: the product broadcasts Silu's output, so no SiluMul. */
Test(fuse_pass, silu_broadcast_into_the_product_stays_apart)
{
	mkc_graph *g = gb_graph(ctx, "silu.onnx", 18);
	mkc_tensor *x = gb_input(g, "g", MKC_DT_FLOAT, 1, (const int64_t[]){8});
	mkc_tensor *u = gb_input(g, "u", MKC_DT_FLOAT, 2, (const int64_t[]){2, 8});
	mkc_tensor *t = gb_op(g, "Mul", "t", gb_op(g, "Sigmoid", "s", x, NULL), x);
	gb_output(g, gb_op(g, "Mul", "y", t, u));
	through(g, (const graph_pass[]){mkc_pass_infer, mkc_pass_fuse, mkc_pass_dce, NULL});
	cr_expect_eq(only(g, MKC_OP_SILU)->in[0], x);
	cr_expect_eq(gb_count_op(g, MKC_OP_SILU_MUL), 0);
	mkc_node *mul = only(g, MKC_OP_MUL);
	cr_expect_str_eq(mul->in[0]->name, "t");
	cr_expect_eq(mul->in[1], u);
}

/* fuse_norm.c: RMSNormalization(x [1, 16], scale) read by products by weights. */

typedef enum {
	NORM_TWO_PRODUCTS, NORM_BIASED,     /* fire: q and k; one with a bias C */
	NORM_OTHER_READER, NORM_NOT_TRANSPOSED, NORM_OUTPUT, NORM_TWO_ROWS, NORM_AS_WEIGHT,
} norm_form;

static mkc_graph *
norm_graph(int form)
{
	mkc_graph *g = gb_graph(ctx, "norm.onnx", 23);
	int64_t rows = form == NORM_TWO_ROWS ? 2 : 1;
	mkc_tensor *x = gb_input(g, "x", MKC_DT_FLOAT, 2, (const int64_t[]){rows, 16});
	mkc_tensor *s = weight(g, "scale", 1, (const int64_t[]){16}, 1.0f);
	mkc_node *nm = gb_node(g, "RMSNormalization", "h", 2, (mkc_tensor *[]){x, s});
	gb_attr_float(g, nm, "epsilon", 1e-3f);
	mkc_tensor *h = nm->out[0];
	for (int k = 0; k < 2; k++) {
		bool t = !(form == NORM_NOT_TRANSPOSED && k == 1);
		mkc_tensor *w = weight(g, k ? "wk" : "wq", 2,
				       t ? (const int64_t[]){8, 16} : (const int64_t[]){16, 8}, 2.0f + k);
		bool biased = form == NORM_BIASED && k == 1;
		mkc_tensor *c = biased ? weight(g, "bias", 1, (const int64_t[]){8}, 5.0f) : NULL;
		mkc_node *gm = gb_node(g, "Gemm", k ? "k" : "q", biased ? 3 : 2, (mkc_tensor *[]){h, w, c});
		gb_attr_int(g, gm, "transB", t);
		gb_output(g, gm->out[0]);
	}
	if (form == NORM_OTHER_READER)
		gb_output(g, gb_op(g, "Neg", "z", h, NULL));
	if (form == NORM_OUTPUT)
		gb_output(g, h);
	if (form == NORM_AS_WEIGHT) {   /* h read as a product's weight */
		mkc_tensor *a = gb_input(g, "a", MKC_DT_FLOAT, 2, (const int64_t[]){3, 16});
		mkc_node *gm = gb_node(g, "Gemm", "r", 2, (mkc_tensor *[]){a, h});
		gb_attr_int(g, gm, "transB", 1);
		gb_output(g, gm->out[0]);
	}
	return g;
}

static mkc_graph *
normed(norm_form form)
{
	return through(norm_graph(form), (const graph_pass[]){mkc_pass_infer, mkc_pass_dce,
							      mkc_pass_fuse_norm, NULL});
}

Test(fuse_norm, products_normalise_their_row)
{
	for (int form = NORM_TWO_PRODUCTS; form <= NORM_BIASED; form++) {
		mkc_graph *g = normed(form);
		cr_assert_eq(g->nodes.n, 2, "form %d: the norm is gone", form);
		cr_expect_eq(gb_count_op(g, MKC_OP_RMS_NORM), 0);
		for (int i = 0; i < 2; i++) {
			mkc_node *n = MKC_NODE(g, i);
			cr_assert_eq(n->op, MKC_OP_NORM_GEMM, "form %d: %s", form, n->op_type);
			cr_expect_str_eq(n->domain, "mkc.internal");
			cr_expect_str_eq(n->name, i ? "node_k" : "node_q");
			cr_expect_str_eq(n->in[0]->name, "x");
			cr_expect_str_eq(n->in[1]->name, "scale");
			cr_expect_str_eq(n->in[2]->name, i ? "wk" : "wq");
			bool biased = form == NORM_BIASED && i == 1;
			cr_assert_eq(n->nin, biased ? 4 : 3, "form %d", form);
			if (biased)
				cr_expect_str_eq(n->in[3]->name, "bias");
			cr_expect_float_eq(mkc_node_attr_float(n, "epsilon", 0), 1e-3f, 1e-10);
			cr_expect_eq(mkc_node_attr_int(n, "transB", 0), 1);
		}
	}
}

Test(fuse_norm, near_misses_keep_the_norm)
{
	const norm_form misses[] = {NORM_OTHER_READER, NORM_NOT_TRANSPOSED, NORM_OUTPUT,
				    NORM_TWO_ROWS, NORM_AS_WEIGHT};
	for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++) {
		mkc_graph *g = normed(misses[i]);
		cr_expect_eq(gb_count_op(g, MKC_OP_RMS_NORM), 1, "form %d", misses[i]);
		cr_expect_eq(gb_count_op(g, MKC_OP_NORM_GEMM), 0, "form %d", misses[i]);
		cr_expect_str_eq(gb_find_node(g, "node_q")->in[0]->name, "h");
	}
}

Test(fuse_norm, normed_products_run_the_same, .timeout = 300)
{
	same_bits(norm_graph, NORM_TWO_PRODUCTS, 1);
	same_bits(norm_graph, NORM_BIASED, 1);
}

/*
 * fuse_glu.c: SiluMul(NormGemm(x, s, Wg), NormGemm(x, s, Wu)), after fuse
 * and fuse_norm; GLU_NO_NORM: SiluMul(Gemm(x, Wg), Gemm(x, Wu)) of rows x
 * [3, 16] that no norm goes into (a prompt chunk's are [S, 16]).
 */

typedef enum {
	GLU_FUSED, GLU_UP_ALPHA, GLU_GATE_READ_ELSEWHERE, GLU_TWO_NORMS, GLU_GATE_BIASED,
	GLU_NO_NORM,
} glu_form;

static mkc_graph *
glu_graph(int form)
{
	mkc_graph *g = gb_graph(ctx, "glu.onnx", 23);
	mkc_tensor *x = gb_input(g, "x", MKC_DT_FLOAT, 2,
				 (const int64_t[]){form == GLU_NO_NORM ? 3 : 1, 16});
	mkc_tensor *h[2];
	h[0] = h[1] = form == GLU_NO_NORM
			      ? x : gb_op(g, "RMSNormalization", "h",
					  x, weight(g, "scale", 1, (const int64_t[]){16}, 1.0f));
	if (form == GLU_TWO_NORMS)
		h[1] = gb_op(g, "RMSNormalization", "h_up",
			     x, weight(g, "scale_up", 1, (const int64_t[]){16}, 1.5f));
	mkc_tensor *pr[2];
	for (int k = 0; k < 2; k++) {
		mkc_tensor *w = weight(g, k ? "wu" : "wg", 2, (const int64_t[]){24, 16}, 2.0f + k);
		bool biased = form == GLU_GATE_BIASED && k == 0;
		mkc_tensor *c = biased ? weight(g, "c", 1, (const int64_t[]){24}, 4.0f) : NULL;
		mkc_node *gm = gb_node(g, "Gemm", k ? "up" : "gate", biased ? 3 : 2,
				       (mkc_tensor *[]){h[k], w, c});
		gb_attr_int(g, gm, "transB", 1);
		if (form == GLU_UP_ALPHA && k == 1)
			gb_attr_float(g, gm, "alpha", 0.5f);
		pr[k] = gm->out[0];
	}
	mkc_tensor *t = gb_op(g, "Mul", "t", pr[0], gb_op(g, "Sigmoid", "sg", pr[0], NULL));
	gb_output(g, gb_op(g, "Mul", "y", t, pr[1]));
	if (form == GLU_GATE_READ_ELSEWHERE)
		gb_output(g, gb_op(g, "Neg", "z", pr[0], NULL));
	return g;
}

/* fuse makes the SiluMul, fuse_norm the products, as the driver runs them */
static mkc_graph *
glued(glu_form form)
{
	return through(glu_graph(form), (const graph_pass[]){mkc_pass_infer, mkc_pass_fuse,
							     mkc_pass_dce, mkc_pass_fuse_norm,
							     mkc_pass_fuse_glu, NULL});
}

/*
 * The form's graph after the passes: one node of op with the inputs want
 * (nin of them), mkc.internal, writing y, with the gate's attributes.
 */
static mkc_node *
glued_one(glu_form form, mkc_op op, int nin, const char *const *want)
{
	mkc_graph *g = glued(form);
	cr_assert_eq(g->nodes.n, 1);
	mkc_node *n = MKC_NODE(g, 0);
	cr_assert_eq(n->op, op, "%s", n->op_type);
	cr_expect_str_eq(n->domain, "mkc.internal");
	cr_expect_str_eq(n->out[0]->name, "y");
	cr_assert_eq(n->nin, nin);
	for (int i = 0; i < nin; i++)
		cr_expect_str_eq(n->in[i]->name, want[i]);
	cr_expect_eq(mkc_node_attr_int(n, "transB", 0), 1, "the gate's attributes");
	return n;
}

Test(fuse_glu, gate_up_and_swiglu_are_one_node)
{
	mkc_node *n = glued_one(GLU_FUSED, MKC_OP_NORM_GLU, 4,
				(const char *[]){"x", "scale", "wg", "wu"});
	cr_expect_float_eq(mkc_node_attr_float(n, "epsilon", 0), 1e-5f, 1e-12);
}

Test(fuse_glu, near_misses_keep_two_products)
{
	const glu_form misses[] = {GLU_UP_ALPHA, GLU_GATE_READ_ELSEWHERE, GLU_TWO_NORMS,
				   GLU_GATE_BIASED};
	for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++) {
		mkc_graph *g = glued(misses[i]);
		cr_expect_eq(gb_count_op(g, MKC_OP_NORM_GLU), 0, "form %d", misses[i]);
		cr_expect_eq(gb_count_op(g, MKC_OP_NORM_GEMM), 2, "form %d", misses[i]);
		cr_expect_eq(only(g, MKC_OP_SILU_MUL)->in[0], gb_find(g, "gate"), "form %d",
			     misses[i]);
	}
}

Test(fuse_glu, rows_without_a_norm_are_one_glu_node)
{
	mkc_node *n = glued_one(GLU_NO_NORM, MKC_OP_GLU, 3, (const char *[]){"x", "wg", "wu"});
	cr_expect_str_eq(n->op_type, "Glu");
}

Test(fuse_glu, fused_swiglu_runs_the_same, .timeout = 300)
{
	same_bits(glu_graph, GLU_FUSED, 1);
	same_bits(glu_graph, GLU_NO_NORM, 1);
}

/*
 * An attention layer of a decode step, as the exports write it: x [1, 16]
 * normed, q/k/v products [1, 32] / [1, 16], seen as heads [1, 4 | 2, 1, 8],
 * q and k rotated by cos and sin [1, 1, 4], keys and values appended to
 * past [1, 2, past_len, 8] by Concat (the state pass makes these caches),
 * and Attention over them.
 */
typedef enum {
	LAYER_PLAIN, LAYER_INTERLEAVED,
	LAYER_Q_BIASED,       /* fuse_qkv: a product with C; fuse_rope still fires */
	LAYER_Q_PARTIAL,      /* fuse_qkv: q rotates 4 of its 8 dims */
	LAYER_K_READ_ELSEWHERE,   /* fuse_rope: the rotated key is read by a Neg too */
	LAYER_K_POSITIONS,    /* fuse_rope: the key's rotary takes position_ids */
	LAYER_SOFTCAP,        /* split_attn: a soft cap keeps the attention whole */
} layer_form;

static mkc_tensor *
layer_product(mkc_graph *g, mkc_tensor *h, const char *name, int heads, bool biased, float seed)
{
	mkc_tensor *w = weight(g, mkc_arena_printf(ctx->arena, "w%s", name), 2,
			       (const int64_t[]){heads * 8, 16}, seed);
	mkc_tensor *c = biased ? weight(g, mkc_arena_printf(ctx->arena, "b%s", name), 1,
					(const int64_t[]){heads * 8}, seed + 1)
			       : NULL;
	mkc_node *gm = gb_node(g, "Gemm", name, biased ? 3 : 2, (mkc_tensor *[]){h, w, c});
	gb_attr_int(g, gm, "transB", 1);
	mkc_tensor *shape = gb_ints(g, mkc_arena_printf(ctx->arena, "%s_heads", name), 4,
				    (const int64_t[]){1, heads, 1, 8});
	return gb_op(g, "Reshape", mkc_arena_printf(ctx->arena, "%s4", name), gm->out[0], shape);
}

static mkc_tensor *
layer_rotary(mkc_graph *g, mkc_tensor *x, const char *out, int form, bool q)
{
	mkc_tensor *cs = gb_find(g, "cos"), *sn = gb_find(g, "sin");
	mkc_node *r;
	if (!q && form == LAYER_K_POSITIONS) {
		mkc_tensor *pos = gb_ints(g, "pos", 1, (const int64_t[]){0});
		pos->rank = 2;
		pos->shape[0] = pos->shape[1] = mkc_dim_const(1);
		mkc_tensor *cache[2] = {weight(g, "cos_cache", 2, (const int64_t[]){4, 4}, 7.0f),
					weight(g, "sin_cache", 2, (const int64_t[]){4, 4}, 8.0f)};
		r = gb_node(g, "RotaryEmbedding", out, 4, (mkc_tensor *[]){x, cache[0], cache[1], pos});
	} else if (q && form == LAYER_Q_PARTIAL) {   /* half of each head: cos and sin [1, 1, 2] */
		cs = gb_input(g, "cos_half", MKC_DT_FLOAT, 3, (const int64_t[]){1, 1, 2});
		sn = gb_input(g, "sin_half", MKC_DT_FLOAT, 3, (const int64_t[]){1, 1, 2});
		r = gb_node(g, "RotaryEmbedding", out, 3, (mkc_tensor *[]){x, cs, sn});
		gb_attr_int(g, r, "rotary_embedding_dim", 4);
	} else {
		r = gb_node(g, "RotaryEmbedding", out, 3, (mkc_tensor *[]){x, cs, sn});
	}
	if (form == LAYER_INTERLEAVED)
		gb_attr_int(g, r, "interleaved", 1);
	return r->out[0];
}

static mkc_graph *
layer_graph(int form)
{
	mkc_graph *g = gb_graph(ctx, "layer.onnx", 23);
	mkc_tensor *x = gb_input(g, "x", MKC_DT_FLOAT, 2, (const int64_t[]){1, 16});
	gb_input(g, "cos", MKC_DT_FLOAT, 3, (const int64_t[]){1, 1, 4});
	gb_input(g, "sin", MKC_DT_FLOAT, 3, (const int64_t[]){1, 1, 4});
	const char *past_dims[] = {"1", "2", "past_len", "8"};
	mkc_tensor *pk = gb_input_dims(g, "past_k", MKC_DT_FLOAT, 4, past_dims);
	mkc_tensor *pv = gb_input_dims(g, "past_v", MKC_DT_FLOAT, 4, past_dims);
	mkc_tensor *h = gb_op(g, "RMSNormalization", "h",
			      x, weight(g, "scale", 1, (const int64_t[]){16}, 1.0f));
	mkc_tensor *q = layer_product(g, h, "q", 4, form == LAYER_Q_BIASED, 2.0f);
	mkc_tensor *k = layer_product(g, h, "k", 2, false, 3.0f);
	mkc_tensor *v = layer_product(g, h, "v", 2, false, 4.0f);
	q = layer_rotary(g, q, "q_rot", form, true);
	k = layer_rotary(g, k, "k_rot", form, false);
	if (form == LAYER_K_READ_ELSEWHERE)
		gb_output(g, gb_op(g, "Neg", "k_neg", k, NULL));
	mkc_tensor *kv[2];
	for (int i = 0; i < 2; i++) {
		mkc_node *c = gb_node(g, "Concat", i ? "present_v" : "present_k", 2,
				      (mkc_tensor *[]){i ? pv : pk, i ? v : k});
		gb_attr_int(g, c, "axis", 2);
		kv[i] = gb_output(g, c->out[0]);
	}
	mkc_node *at = gb_node(g, "Attention", "y", 3, (mkc_tensor *[]){q, kv[0], kv[1]});
	if (form == LAYER_SOFTCAP)
		gb_attr_float(g, at, "softcap", 30.0f);
	gb_output(g, at->out[0]);
	return g;
}

static const mkc_driver_options layer_opts = {.workers = 4, .max_dim = 64, .max_seq = 8};

/* fuse_rope.c */

Test(fuse_rope, the_key_rotates_as_it_is_appended)
{
	/* a biased q keeps fuse_qkv off the layer, so fuse_rope's node is what stays */
	mkc_graph *g = compiled(layer_graph(LAYER_Q_BIASED), &layer_opts);
	cr_expect_eq(gb_count_op(g, MKC_OP_HEAD_PROJ), 0);
	cr_expect_eq(gb_count_op(g, MKC_OP_ROTARY), 1, "the query's rotary stays");
	mkc_node *ck = gb_find(g, "present_k")->producer, *cv = gb_find(g, "present_v")->producer;
	cr_assert_eq(ck->op, MKC_OP_CACHE_APPEND);
	cr_assert_eq(ck->nin, 3);
	cr_expect_str_eq(ck->in[0]->name, "k4", "the key before its rotary");
	cr_expect_str_eq(ck->in[1]->name, "cos");
	cr_expect_str_eq(ck->in[2]->name, "sin");
	cr_expect(ck->kern->rotary);
	cr_expect_not(ck->kern->interleaved);
	cr_expect_eq(cv->op, MKC_OP_CACHE_APPEND);
	cr_expect_eq(cv->nin, 1, "the value is not rotated");
	cr_expect_eq(gb_find(g, "present_k")->kind, MKC_TK_STATE);
}

Test(fuse_rope, near_misses_keep_the_rotary)
{
	const layer_form misses[] = {LAYER_K_READ_ELSEWHERE, LAYER_K_POSITIONS};
	for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++) {
		mkc_graph *g = layer_graph(misses[i]);
		g->kv_cap = 8;
		through(g, (const graph_pass[]){mkc_pass_infer, mkc_pass_dce, mkc_pass_state, NULL});
		mkc_node *ck = gb_find(g, "present_k")->producer;
		cr_assert_eq(ck->op, MKC_OP_CACHE_APPEND, "form %d: state made the appends", misses[i]);
		through(g, (const graph_pass[]){mkc_pass_fuse_rope, NULL});
		cr_expect_eq(ck->nin, 1, "form %d", misses[i]);
		cr_expect_str_eq(ck->in[0]->name, "k_rot", "form %d", misses[i]);
		cr_expect_eq(gb_count_op(g, MKC_OP_ROTARY), 2, "form %d", misses[i]);
	}
}

Test(fuse_rope, appends_that_rotate_run_the_same, .timeout = 300)
{
	same_bits(layer_graph, LAYER_Q_BIASED, 3);
}

/* fuse_qkv.c */

Test(fuse_qkv, rotary_and_appends_go_into_the_products)
{
	for (int form = LAYER_PLAIN; form <= LAYER_INTERLEAVED; form++) {
		mkc_graph *g = compiled(layer_graph(form), &layer_opts);
		cr_expect_eq(gb_count_op(g, MKC_OP_NORM_GEMM), 0);
		cr_expect_eq(gb_count_op(g, MKC_OP_ROTARY), 0);
		cr_expect_eq(gb_count_op(g, MKC_OP_CACHE_APPEND), 0);
		cr_assert_eq(gb_count_op(g, MKC_OP_HEAD_PROJ), 3, "form %d", form);
		const char *outs[] = {"q_rot", "present_k", "present_v"};
		const char *names[] = {"node_q", "node_k", "node_v"}, *ws[] = {"wq", "wk", "wv"};
		for (int i = 0; i < 3; i++) {
			mkc_node *n = gb_find(g, outs[i])->producer;
			cr_assert_eq(n->op, MKC_OP_HEAD_PROJ, "%s", outs[i]);
			cr_expect_str_eq(n->domain, "mkc.internal");
			cr_expect_str_eq(n->name, names[i], "the product's name");
			cr_expect_str_eq(n->in[0]->name, "x");
			cr_expect_str_eq(n->in[1]->name, "scale");
			cr_expect_str_eq(n->in[2]->name, ws[i]);
			bool rot = i < 2;
			cr_assert_eq(n->nin, rot ? 5 : 3, "%s", outs[i]);
			if (rot) {
				cr_expect_str_eq(n->in[3]->name, "cos");
				cr_expect_str_eq(n->in[4]->name, "sin");
			}
			cr_expect_eq(n->kern->kind, MKC_KERN_HEAD_PROJ);
			cr_expect_eq(n->kern->rotary, rot);
			cr_expect_eq(n->kern->interleaved, rot && form == LAYER_INTERLEAVED, "%s",
				     outs[i]);
			cr_expect_float_eq(n->kern->alpha, 1.0f, 0);
			cr_expect_float_eq(n->kern->eps, 1e-5f, 1e-12);
		}
		cr_expect_eq(gb_find(g, "present_v")->kind, MKC_TK_STATE);
	}
}

/* Only whole layers: one product that cannot be taken keeps all three apart. */
Test(fuse_qkv, near_misses_keep_the_layer_apart)
{
	const layer_form misses[] = {LAYER_Q_BIASED, LAYER_Q_PARTIAL};
	for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++) {
		mkc_graph *g = compiled(layer_graph(misses[i]), &layer_opts);
		cr_expect_eq(gb_count_op(g, MKC_OP_HEAD_PROJ), 0, "form %d", misses[i]);
		cr_expect_eq(gb_count_op(g, MKC_OP_NORM_GEMM), 3, "form %d", misses[i]);
		cr_expect_eq(gb_count_op(g, MKC_OP_CACHE_APPEND), 2, "form %d", misses[i]);
	}
}

/*
 * A rotated key that something else reads too: fuse_rope leaves its
 * rotary out of the append, so fuse_qkv takes the rotary (the product
 * writes the rotated key) and the append stays, reading it.
 */
Test(fuse_qkv, a_key_read_elsewhere_is_rotated_by_its_product)
{
	mkc_graph *g = compiled(layer_graph(LAYER_K_READ_ELSEWHERE), &layer_opts);
	cr_expect_eq(gb_count_op(g, MKC_OP_HEAD_PROJ), 3);
	mkc_node *k = gb_find(g, "k_rot")->producer;
	cr_assert_eq(k->op, MKC_OP_HEAD_PROJ);
	cr_expect_eq(k->nin, 5);
	cr_expect_eq(gb_find(g, "k_rot")->kind, MKC_TK_INTERMEDIATE);
	mkc_node *ck = only(g, MKC_OP_CACHE_APPEND);
	cr_expect_str_eq(ck->out[0]->name, "present_k");
	cr_expect_eq(ck->nin, 1);
	cr_expect_str_eq(ck->in[0]->name, "k_rot");
	cr_expect_str_eq(only(g, MKC_OP_NEG)->in[0]->name, "k_rot");
	same_bits(layer_graph, LAYER_K_READ_ELSEWHERE, 3);
}

Test(fuse_qkv, head_products_run_the_same, .timeout = 300)
{
	same_bits(layer_graph, LAYER_PLAIN, 3);
	same_bits(layer_graph, LAYER_INTERLEAVED, 3);
}

/* split_attn.c: Attention(q [1, 4, 1, 8], k, v [1, 2, 5, 8]) of graph inputs. */

typedef enum { ATT_PLAIN, ATT_SCALE, ATT_MASK, ATT_SOFTCAP, ATT_3D } att_form;

static mkc_graph *
attention_graph(int form)
{
	mkc_graph *g = gb_graph(ctx, "attn.onnx", 23);
	bool flat = form == ATT_3D;
	mkc_tensor *q = flat ? gb_input(g, "q", MKC_DT_FLOAT, 3, (const int64_t[]){1, 1, 32})
			     : gb_input(g, "q", MKC_DT_FLOAT, 4, (const int64_t[]){1, 4, 1, 8});
	mkc_tensor *k = flat ? gb_input(g, "k", MKC_DT_FLOAT, 3, (const int64_t[]){1, 5, 16})
			     : gb_input(g, "k", MKC_DT_FLOAT, 4, (const int64_t[]){1, 2, 5, 8});
	mkc_tensor *v = flat ? gb_input(g, "v", MKC_DT_FLOAT, 3, (const int64_t[]){1, 5, 16})
			     : gb_input(g, "v", MKC_DT_FLOAT, 4, (const int64_t[]){1, 2, 5, 8});
	mkc_tensor *m = form == ATT_MASK ? gb_input(g, "mask", MKC_DT_FLOAT, 2,
						    (const int64_t[]){1, 5}) : NULL;
	mkc_node *at = gb_node(g, "Attention", "y", m ? 4 : 3, (mkc_tensor *[]){q, k, v, m});
	if (form == ATT_SCALE)
		gb_attr_float(g, at, "scale", 0.5f);
	if (form == ATT_SOFTCAP)
		gb_attr_float(g, at, "softcap", 30.0f);
	if (flat) {
		gb_attr_int(g, at, "q_num_heads", 4);
		gb_attr_int(g, at, "kv_num_heads", 2);
	}
	gb_output(g, at->out[0]);
	return g;
}

static mkc_graph *
split(att_form form, int workers)
{
	mkc_graph *g = attention_graph(form);
	g->nworkers = workers;
	return through(g, (const graph_pass[]){mkc_pass_infer, mkc_pass_split_attn, NULL});
}

Test(split_attn, parts_over_chunks_then_a_merge)
{
	/* 8 workers over 2 key heads: 4 chunks a head */
	mkc_graph *g = split(ATT_SCALE, 8);
	cr_assert_eq(g->nodes.n, 2);
	mkc_node *part = MKC_NODE(g, 0), *merge = MKC_NODE(g, 1);
	cr_assert_eq(part->op, MKC_OP_ATTN_PART);
	cr_assert_eq(merge->op, MKC_OP_ATTN_MERGE);
	cr_expect_str_eq(part->name, "node_y/part");
	cr_expect_str_eq(merge->name, "node_y");
	const char *qkv[] = {"q", "k", "v"};
	for (int i = 0; i < 3; i++)
		cr_expect_str_eq(part->in[i]->name, qkv[i]);
	cr_assert_eq(merge->nin, 1);
	cr_expect_eq(merge->in[0], part->out[0]);
	cr_expect_str_eq(merge->out[0]->name, "y");
	char b[64];
	/* [B, Hk * C, G * Sq, D + 2]: the sums, then the maximum and the denominator */
	cr_expect_str_eq(mkc_shape_str(g, part->out[0], b, sizeof b), "[1,8,2,10]");
	cr_expect_eq(mkc_node_attr_int(part, "chunks", 0), 4);
	cr_expect_eq(mkc_node_attr_int(merge, "chunks", 0), 4);
	cr_expect_float_eq(mkc_node_attr_float(part, "scale", 0), 0.5f, 0, "the scale kept");
	/* a worker alone still splits, into one chunk; 200 into 64 at most */
	cr_expect_eq(mkc_node_attr_int(MKC_NODE(split(ATT_PLAIN, 1), 0), "chunks", 0), 1);
	cr_expect_eq(mkc_node_attr_int(MKC_NODE(split(ATT_PLAIN, 200), 0), "chunks", 0), 64);
	cr_expect_null(mkc_node_attr(MKC_NODE(split(ATT_PLAIN, 8), 0), "scale"));
}

Test(split_attn, near_misses_stay_one_attention)
{
	const att_form misses[] = {ATT_MASK, ATT_SOFTCAP, ATT_3D};
	for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++) {
		mkc_graph *g = split(misses[i], 8);
		cr_expect_eq(g->nodes.n, 1, "form %d", misses[i]);
		cr_expect_eq(MKC_NODE(g, 0)->op, MKC_OP_ATTENTION, "form %d", misses[i]);
	}
	/* the layer with a soft cap: its attention reads the caches itself */
	mkc_graph *g = compiled(layer_graph(LAYER_SOFTCAP), &layer_opts);
	cr_expect_eq(gb_count_op(g, MKC_OP_ATTN_PART), 0);
	cr_expect_eq(only(g, MKC_OP_ATTENTION)->in[1], gb_find(g, "present_k"));
}

/* softmax(q k^T * scale) v for query head h of the inputs the program fed (step 0). */
static void
reference_attention(float scale, float *y)
{
	for (int h = 0; h < 4; h++) {
		int kh = h / 2;
		double sc[5], mx = -INFINITY, sum = 0;
		for (int p = 0; p < 5; p++) {
			double d = 0;
			for (int j = 0; j < 8; j++)
				d += (double)input_value(0, h * 8 + j, 0) *
				     (double)input_value(1, (kh * 5 + p) * 8 + j, 0);
			sc[p] = d * scale;
			mx = sc[p] > mx ? sc[p] : mx;
		}
		for (int p = 0; p < 5; p++)
			sum += sc[p] = exp(sc[p] - mx);
		for (int j = 0; j < 8; j++) {
			double acc = 0;
			for (int p = 0; p < 5; p++)
				acc += sc[p] * (double)input_value(2, (kh * 5 + p) * 8 + j, 0);
			y[h * 8 + j] = (float)(acc / sum);
		}
	}
}

/* The merged parts are attention, to float32 rounding (the merge sums in another order). */
Test(split_attn, merged_parts_are_attention, .timeout = 300)
{
	for (int form = ATT_PLAIN; form <= ATT_SCALE; form++) {
		const char *out = run_graph(attention_graph(form), &run_opts, 1);
		const char *p = strstr(out, "0 y ");
		cr_assert_not_null(p, "%s", out);
		p += 4;
		float want[32];
		reference_attention(form == ATT_SCALE ? 0.5f : 1 / sqrtf(8), want);
		for (int i = 0; i < 32; i++) {
			char *end;
			float got = strtof(p, &end);
			cr_assert_neq(end, p, "%d values, want 32: %s", i, out);
			cr_expect_float_eq(got, want[i], 1e-5f * (1 + fabsf(want[i])),
					   "form %d, value %d: %a, want %a", form, i, (double)got,
					   (double)want[i]);
			p = end;
		}
	}
}

/*
 * On a GPU the parts of a head of 64 run attention.cuh's body; a head of
 * 96 the portable one: a key row's 96 / 16 = 6 lanes do not divide a warp,
 * and the GPU body's rounds and sums need them to (before session 42 it
 * took such heads too: its lanes past a round's 5 positions scored a sixth
 * with part of its key, and its sums over 6 lanes went by xor of 3 and 1).
 */
Test(split_attn, a_head_not_a_power_of_2_takes_the_portable_part_on_a_gpu)
{
	for (int d = 64; d <= 96; d += 32) {
		mkc_graph *g = gb_graph(ctx, "attn.onnx", 23);
		mkc_tensor *q = gb_input(g, "q", MKC_DT_FLOAT, 4, (const int64_t[]){1, 4, 1, d});
		mkc_tensor *k = gb_input(g, "k", MKC_DT_FLOAT, 4, (const int64_t[]){1, 2, 5, d});
		mkc_tensor *v = gb_input(g, "v", MKC_DT_FLOAT, 4, (const int64_t[]){1, 2, 5, d});
		mkc_node *at = gb_node(g, "Attention", "y", 3, (mkc_tensor *[]){q, k, v});
		gb_output(g, at->out[0]);
		const mkc_driver_options o = {.workers = 8, .max_dim = 64, .wide_target = true};
		const char *dir = emit_graph(g, &o, "cuda", "cu");
		size_t cap = 1 << 22;
		char *text = mkc_arena_alloc(ctx->arena, cap);
		mkc_slurp(mkc_arena_printf(ctx->arena, "%s/net.cu", dir), text, cap);
		char rm[256];
		cr_assert_eq(mkc_shell(mkc_arena_printf(ctx->arena, "rm -rf %s", dir), rm, sizeof rm), 0);
		const char *gpu = mkc_arena_printf(ctx->arena, "\tmkc_attn_part_tile<%d, 2, float", d);
		cr_expect_eq(strstr(text, gpu) != NULL, d == 64, "head %d: GPU body %s", d,
			     d == 64 ? "missing" : "taken");
		cr_expect_eq(strstr(text, "\tmkc_attn_part_c(") != NULL, d == 96,
			     "head %d: portable body %s", d, d == 96 ? "missing" : "taken");
	}
}

/* kv.c */

Test(kv_pass, caches_kept_as_bf16_when_asked)
{
	mkc_driver_options o = layer_opts;
	mkc_graph *g = compiled(layer_graph(LAYER_PLAIN), &o);
	cr_expect_eq(gb_find(g, "present_k")->storage, 0, "float32 unless asked");
	o.kv_dtype = MKC_DT_BFLOAT16;
	/* written by HeadProj (fuse_qkv) or CacheAppend (fuse_rope, --no-fuse), read by AttnPart */
	for (int form = LAYER_PLAIN; form <= LAYER_Q_BIASED; form++)
		for (int plain = 0; plain < 2; plain++) {
			o.no_fuse = plain;
			g = compiled(layer_graph(form), &o);
			for (int i = 0; i < 2; i++) {
				mkc_tensor *c = gb_find(g, i ? "present_v" : "present_k");
				cr_expect_eq(c->storage, MKC_DT_BFLOAT16, "form %d%s: %s", form,
					     plain ? " --no-fuse" : "", c->name);
				cr_expect_eq(c->producer->op, form == LAYER_Q_BIASED || plain
								      ? MKC_OP_CACHE_APPEND
								      : MKC_OP_HEAD_PROJ);
			}
			cr_expect_eq(gb_count_op(g, MKC_OP_ATTN_PART), 1);
		}
}

Test(kv_pass, an_attention_reading_a_cache_stops_bf16)
{
	mkc_driver_options o = layer_opts;
	o.kv_dtype = MKC_DT_BFLOAT16;
	mkc_graph *g = layer_graph(LAYER_SOFTCAP);
	mkc_plan *p = NULL;
	cr_assert_eq(mkc_run_passes(g, &o, &p), -1);
	cr_expect(strstr(errs(), "node 'node_y' (Attention): --kv bf16: KV cache 'present_k' is "
			 "read here"), "%s", errs());
	cr_expect_eq(gb_find(g, "present_k")->storage, 0);
}

/* bf16 caches: near the float32 ones (the keys and values rounded), not the same. */
Test(kv_pass, bf16_caches_run_close, .timeout = 300)
{
	mkc_driver_options o = layer_opts;
	const char *f32 = run_graph(layer_graph(LAYER_PLAIN), &o, 3);
	o.kv_dtype = MKC_DT_BFLOAT16;
	const char *b16 = run_graph(layer_graph(LAYER_PLAIN), &o, 3);
	cr_assert_str_neq(f32, b16, "bf16 caches changed nothing");
	double worst = 0;
	int n = 0;
	for (const char *a = f32, *b = b16; (a = strchr(a, ' ')) && (b = strchr(b, ' '));) {
		char *ea, *eb;
		double x = strtod(a + 1, &ea), y = strtod(b + 1, &eb);
		bool names = ea == a + 1 && eb == b + 1;   /* an output's name, not a value */
		a = ea;
		b = eb;
		if (names)
			continue;
		worst = fmax(worst, fabs(x - y));
		n++;
	}
	cr_expect_gt(n, 90, "3 steps of 32 values");
	cr_expect_lt(worst, 1e-2, "bf16 caches moved a value by %g", worst);
}

/*
 * emit_ops.c - the body of each node's tile function.
 *
 * A tile function gets the model (buffers m->buf[], symbol values m->sym[])
 * and the box lo..hi of output 0 that its task computes; it computes exactly
 * that box. Every body starts by naming its tensors as views
 * (runtime/common.h's mkc_view: pointer, extents, strides, type), one line
 * each, x0, x1, ... the inputs and y, y1, ... the outputs, with extents
 * from the symbols at run time; then it calls one tile body with those
 * views and the node's options (a small struct, initialised by name where
 * a body has several): the bodies are plain C in backends/c/ (data.h,
 * elementwise.h, rows.h, matmul.h, attention.h, gqa.h, ...) that every
 * target embeds, or GPU code in backends/cuda/ where a GPU has a faster
 * one (runtime/limits.h says where it fits). No loop or formula of a tile
 * body is written here; a node whose outputs are known writes their values
 * (emit_known: a table, not a body).
 *
 * Elementwise ops come from ir/ops.def's EW rows: each op's code in
 * elementwise.h and the forms it has. Where no operand broadcasts and every
 * tile is a run of consecutive elements, they walk flat indices instead of
 * coordinates. The C target computes float32 tensors in float, as
 * onnxruntime does.
 *
 * What a body needs beyond shapes and types (axes, eps, transposes, the
 * attention scale) comes resolved in the node's kernel description
 * (ir/kernel.h, passes/lower.c): no body reads an ONNX attribute or opset.
 */
#include "emit.h"
#include "../../ir/kernel.h"
#include "../../runtime/limits.h"

#include <math.h>
#include <string.h>

const char *
mkc_ctype(const mkc_emitter *e, mkc_dtype t)
{
	switch (t) {
	case MKC_DT_FLOAT: return "float";
	case MKC_DT_DOUBLE: return "double";
	case MKC_DT_INT64: return "int64_t";
	case MKC_DT_INT32: return "int32_t";
	case MKC_DT_INT16: return "int16_t";
	case MKC_DT_INT8: return "int8_t";
	case MKC_DT_UINT8: return "uint8_t";
	case MKC_DT_UINT16: return "uint16_t";
	case MKC_DT_UINT32: return "uint32_t";
	case MKC_DT_UINT64: return "uint64_t";
	case MKC_DT_BOOL: return "uint8_t";
	/* stored bits, converted by a Cast only (passes/half.c; emit_elementwise) */
	case MKC_DT_FLOAT16: return "uint16_t";
	default: return NULL;
	}
}

/* The type's MKC_T_ code (backends/c/data.h); NULL where mkc_ctype has none. */
static const char *
tcode(const mkc_emitter *e, mkc_dtype t)
{
	if (!mkc_ctype(e, t))
		return NULL;
	switch (t) {
#define DT(s, id, size, name) case MKC_DT_##s: return "MKC_T_" #s;
#include "../../ir/dtypes.def"
#undef DT
	default: return NULL;
	}
}

/*
 * An int64 literal: "-9223372036854775808" would be the negation of a
 * constant too large for long long, so INT64_MIN is spelled as arithmetic.
 */
static const char *
ilit(char *buf, int64_t v)
{
	if (v == INT64_MIN)
		snprintf(buf, 32, "(-9223372036854775807LL - 1)");
	else
		snprintf(buf, 32, "%lldLL", (long long)v);
	return buf;
}

char *
mkc_dimx(const mkc_graph *g, mkc_dim d, char *buf, size_t n)
{
	char c[32], k[32];
	size_t used = (size_t)snprintf(buf, n, "%s", mkc_dim_is_const(d) ? "" : "(");
	used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s", ilit(c, d.c));
	for (int i = 0; i < MKC_DIM_TERMS; i++)
		if (d.k[i] && used < n)
			used += (size_t)snprintf(buf + used, n - used, " + %s * m->sym[%d]",
						 ilit(k, d.k[i]), d.sym[i]);
	if (!mkc_dim_is_const(d) && used < n)
		snprintf(buf + used, n - used, ")");
	return buf;
}

/*
 * A float literal that C reads back exactly: "1.0f", "9.99999975e-06f";
 * infinities and NaN by math.h's names, which every target includes.
 */
static const char *
flit(char *buf, float v)
{
	if (isinf(v) || isnan(v)) {
		snprintf(buf, 40, "%s", isnan(v) ? "NAN" : v > 0 ? "INFINITY" : "(-INFINITY)");
		return buf;
	}
	int n = snprintf(buf, 40, "%.9g", (double)v);
	if (!strpbrk(buf, ".en"))
		n += snprintf(buf + n, 40 - (size_t)n, ".0");
	snprintf(buf + n, 40 - (size_t)n, "f");
	return buf;
}

static int
unsupported(mkc_emitter *e, const mkc_node *n, const char *why)
{
	return mkc_node_error(e->p->g, n, "the %s target cannot compile this node yet: %s",
			      e->t->name, why);
}

/* A weight or KV cache (passes/kv.c) kept as bf16 is read through
 * mkc_rt_bf16; everything else directly. */
static bool
is_bf16(const mkc_tensor *t)
{
	return t && t->storage == MKC_DT_BFLOAT16;
}

/*
 * A stride or extent as a C expression: the product of the constant k and
 * the symbolic factors in sym ("" when none).
 */
static void
put_product(FILE *f, int64_t k, const char *sym)
{
	if (!*sym)
		fprintf(f, "%lldLL", (long long)k);
	else if (k == 1)
		fputs(sym, f);
	else
		fprintf(f, "%lldLL * %s", (long long)k, sym);
}

/*
 * Declares the view of one tensor (runtime/common.h's mkc_view) in one
 * line: its extents as expressions of the symbols, its strides row-major
 * over them (a KV cache's over cap positions along its cap axis; a
 * Transpose's view its input's, permuted, and a view of a Transpose's
 * output that output's, permuted back), folded to numbers where the
 * extents are.
 */
static void
decl(mkc_emitter *e, const char *var, const mkc_tensor *t)
{
	FILE *f = e->f;
	mkc_graph *g = e->p->g;
	const char *ty = tcode(e, t->dtype);
	e->slot[e->nslot] = e->index[t->id];
	fprintf(f, "\tconst mkc_view %s MKC_UNUSED = {m->buf[bi[%d]], {", var, e->nslot++);
	for (int i = 0; i < t->rank; i++) {
		char b[96];
		fprintf(f, "%s%s", i ? ", " : "", mkc_dimx(g, t->shape[i], b, sizeof b));
	}
	fputs("}, {", f);
	/* stride i is the product of the extents after i: k times the symbolic
	 * ones; a Transpose's view (passes/views.c) has its input's, permuted,
	 * and an input a Transpose's output is a view of has that one's,
	 * permuted back. src[i]: the axis of st whose stride is t's i. */
	const mkc_tensor *st = t;
	int src[MKC_MAX_RANK];
	for (int i = 0; i < t->rank; i++)
		src[i] = i;
	int base = e->p->view_of ? e->p->view_of[t->id] : -1;
	const mkc_node *tp = t->producer, *bp = base >= 0 ? MKC_TENSOR(g, base)->producer : NULL;
	if (base >= 0 && tp && tp->op == MKC_OP_TRANSPOSE) {
		st = tp->in[0];
		for (int i = 0; i < t->rank; i++)
			src[i] = tp->kern->perm[i];
	} else if (base >= 0 && bp && bp->op == MKC_OP_TRANSPOSE && bp->in[0] == t) {
		st = bp->out[0];
		for (int d = 0; d < t->rank; d++)
			src[bp->kern->perm[d]] = d;
	}
	int64_t k[MKC_MAX_RANK];
	const char *sym[MKC_MAX_RANK];
	int64_t kk = 1;
	const char *ss = "";
	for (int i = st->rank - 1; i >= 0; i--) {
		k[i] = kk;
		sym[i] = ss;
		mkc_dim d = st->cap && i == st->cap_axis ? mkc_dim_const(st->cap) : st->shape[i];
		if (mkc_dim_is_const(d)) {
			kk *= d.c;
		} else {
			char b[96];
			mkc_dimx(g, d, b, sizeof b);
			ss = *ss ? mkc_arena_printf(g->ctx->arena, "%s * %s", ss, b)
				 : mkc_arena_printf(g->ctx->arena, "%s", b);
		}
	}
	for (int i = 0; i < t->rank; i++) {
		fputs(i ? ", " : "", f);
		put_product(f, k[src[i]], sym[src[i]]);
	}
	fprintf(f, "}, %d, %s, %d};\n", t->rank, ty ? ty : "0", is_bf16(t));
}

/* The views of every input and output n has (x0, x1, ...; y, y1, ...). */
static void
decl_all(mkc_emitter *e, const mkc_node *n)
{
	char v[16];
	for (int i = 0; i < n->nin; i++)
		if (n->in[i]) {
			snprintf(v, sizeof v, "x%d", i);
			decl(e, v, n->in[i]);
		}
	for (int i = 0; i < n->nout; i++)
		if (n->out[i]) {
			snprintf(v, sizeof v, i ? "y%d" : "y", i);
			decl(e, v, n->out[i]);
		}
}

/* "&x3", or "NULL" for an input n leaves out (or has not: k past nin). */
static const char *
view_in(char *buf, const mkc_node *n, int k)
{
	snprintf(buf, 16, k < n->nin && n->in[k] ? "&x%d" : "NULL", k);
	return buf;
}

/* "&y2", or "NULL" for an output n does not have. */
static const char *
view_out(char *buf, const mkc_node *n, int k)
{
	if (k >= n->nout || !n->out[k])
		snprintf(buf, 16, "NULL");
	else
		snprintf(buf, 16, k ? "&y%d" : "&y", k);
	return buf;
}

/* "\tconst TYPE name[n] = {v0, v1, ...};\n" (C has no empty initialiser: n 0 writes one 0) */
static void
emit_ints(FILE *f, const char *type, const char *name, const int64_t *v, int n)
{
	fprintf(f, "\tconst %s %s[%d] = {", type, name, n ? n : 1);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%lld", i ? ", " : "", (long long)v[i]);
	fputs(n ? "};\n" : "0};\n", f);
}

/* "\tconst mkc_view *const name[n] = {&P0, &P1, ...};\n": views the body takes as an array */
static void
emit_views(FILE *f, const char *name, const char *prefix, int n)
{
	fprintf(f, "\tconst mkc_view *const %s[%d] = {", name, n);
	for (int k = 0; k < n; k++)
		fprintf(f, "%s&%s%d", k ? ", " : "", prefix, k);
	fputs("};\n", f);
}

/*
 * Elementwise: backends/c/elementwise.h's body, by the op's code there and
 * the forms it has (float: a float operand's; int: the integer form, in
 * int64), from the EW rows of ir/ops.def's kernel column, indexed by op.
 */
static const struct {
	const char *code;
	bool f, i;
} ew_table[MKC_OP_COUNT] = {
#define K(kind) {NULL, false, false}
#define EW(code, f, i) {"MKC_EW_" #code, f, i}
#define EW1 EW
#define OP(e, nm, dom, i0, i1, o0, o1, inf, fld, cin, opt, kern) [MKC_OP_##e] = kern,
#include "../../ir/ops.def"
#undef OP
#undef EW1
#undef EW
#undef K
};

/* The row of op in ew_table, or -1 when it has no elementwise code. */
static int
ew_index(mkc_op op)
{
	return ew_table[op].code ? (int)op : -1;
}

/* Whether the box lo..hi of t covers consecutive elements in row-major order. */
static bool
box_is_run(const mkc_tensor *t, const mkc_box *b)
{
	int cut = -1;   /* the last axis the box does not cover whole */
	for (int i = 0; i < t->rank; i++)
		if (!mkc_dim_eq(b->lo[i], mkc_dim_const(0)) || !mkc_dim_eq(b->hi[i], t->shape[i]))
			cut = i;
	for (int i = 0; i < cut; i++) {
		mkc_dim len;
		if (!mkc_dim_sub(b->hi[i], b->lo[i], &len) || !mkc_dim_eq(len, mkc_dim_const(1)))
			return false;
	}
	return true;
}

/*
 * Whether the elementwise node n can walk flat indices: every operand has
 * exactly the output's dims and dense strides (no broadcasting, no KV-cache
 * layout), so flat index i is element i of each; and every tile of n is a
 * run of consecutive elements, lo's flat index on. Decided from the plan's
 * tiles at compile time. Then no lane splits an index into coordinates
 * (two 64-bit divisions an axis), which made small elementwise tasks cost
 * more than their memory traffic.
 */
static bool
flat_walk(const mkc_emitter *e, const mkc_node *n, int nin)
{
	const mkc_tensor *y = n->out[0];
	if (y->cap)
		return false;
	for (int i = 0; i < nin; i++)
		if (n->in[i]->cap || !mkc_tensor_same_shape(n->in[i], y))
			return false;
	for (int i = 0; i < e->p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(e->p, i);
		if (t->node == n && !box_is_run(y, &t->out))
			return false;
	}
	return true;
}

static int
emit_elementwise(mkc_emitter *e, const mkc_node *n, int row)
{
	FILE *f = e->f;
	const mkc_tensor *y = n->out[0];
	/* the form the op computes in: its (first value) operand's type's */
	const mkc_tensor *v = n->op == MKC_OP_WHERE ? n->in[1] : n->in[0];
	bool isf = mkc_dtype_is_float(v->dtype);
	if (!(isf ? ew_table[row].f : ew_table[row].i))
		return unsupported(e, n, "no form of this op for its input type");
	bool variadic = mkc_op_info_of(n->op)->max_in < 0;   /* Max, Min */
	if (n->nin > 3 && !variadic)
		return unsupported(e, n, "more than three operands");
	int nin = n->kern->operands;
	const char *code = ew_table[row].code;
	if (y->dtype == MKC_DT_BOOL && (n->op == MKC_OP_CAST || n->op == MKC_OP_CASTLIKE))
		code = "MKC_EW_NONZERO";
	else if (variadic && nin == 1)
		code = "MKC_EW_IDENTITY";
	bool typed = tcode(e, y->dtype) != NULL;
	for (int i = 0; i < nin && typed; i++)
		typed = tcode(e, n->in[i]->dtype) != NULL;
	if (!typed)
		return unsupported(e, n, "an operand or result of a type it cannot read");
	/* float16 is converted at a model's boundary, by a Cast alone (passes/half.c) */
	bool half = y->dtype == MKC_DT_FLOAT16;
	for (int i = 0; i < nin; i++)
		half |= n->in[i]->dtype == MKC_DT_FLOAT16;
	if (half && n->op != MKC_OP_CAST)
		return unsupported(e, n, "a float16 operand or result (only a Cast converts float16)");
	decl_all(e, n);
	emit_views(f, "in", "x", nin);
	fprintf(f, "\tmkc_elementwise(%s, %d, &y, %d, in, %d, lo, hi);\n", code, isf, nin,
		flat_walk(e, n, nin));
	return 0;
}

/*
 * Reshape and its kin (those not made views): the same bytes in a new
 * shape, element i of the output being element i of the input, both dense.
 * The output is cut into tiles like an elementwise op's (a logits copy is
 * 128256 elements: one task for all of it ended every 1B step with 177 us
 * on one SM); tiles that are runs walk flat indices.
 */
static int
emit_copy(mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *y = n->out[0];
	if (y->cap || n->in[0]->cap)
		return unsupported(e, n, "a reshape of a KV cache");
	decl_all(e, n);
	fprintf(e->f, "\tmkc_copy(&y, &x0, %d, lo, hi);\n", flat_walk(e, n, 0));
	return 0;
}

static int
emit_transpose(mkc_emitter *e, const mkc_node *n)
{
	int r = n->out[0]->rank;
	int64_t perm[MKC_MAX_RANK];
	for (int d = 0; d < r; d++)
		perm[d] = n->kern->perm[d];
	decl_all(e, n);
	emit_ints(e->f, "int", "perm", perm, r);
	fputs("\tmkc_transpose(&y, &x0, perm, lo, hi);\n", e->f);
	return 0;
}

static int
emit_concat(mkc_emitter *e, const mkc_node *n)
{
	decl_all(e, n);
	emit_views(e->f, "in", "x", n->nin);
	fprintf(e->f, "\tmkc_concat(&y, %d, in, %d, lo, hi);\n", n->nin, n->kern->axis);
	return 0;
}

/* Slice: each axis's start (an expression of the symbols) and step; the body clamps. */
static int
emit_slice(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	const mkc_kernel *k = n->kern;
	int r = n->out[0]->rank;
	mkc_dim start[MKC_MAX_RANK];
	int64_t step[MKC_MAX_RANK];
	for (int d = 0; d < r; d++) {
		start[d] = mkc_dim_const(0);
		step[d] = 1;
	}
	for (int i = 0; i < k->nslice; i++) {
		start[k->slice_axis[i]] = k->slice_start[i];
		step[k->slice_axis[i]] = k->slice_step[i];
	}
	decl_all(e, n);
	fprintf(f, "\tconst int64_t start[%d] = {", r ? r : 1);
	for (int d = 0; d < r; d++) {
		char b[96];
		fprintf(f, "%s%s", d ? ", " : "", mkc_dimx(e->p->g, start[d], b, sizeof b));
	}
	fputs(r ? "};\n" : "0};\n", f);
	emit_ints(f, "int64_t", "step", step, r);
	fputs("\tmkc_slice(&y, &x0, start, step, lo, hi);\n", f);
	return 0;
}

/*
 * A body that checks an index from the caller (runtime/common.h's
 * mkc_rt_check_index) returns nonzero with what it found in bad, the
 * lane's own; the exec's MKC_FAIL_INDEX fails the step with a sentence
 * naming the node (the tile function's node, so nodes of one form share
 * the function).
 */
static void
emit_checked(mkc_emitter *e, const char *call)
{
	fprintf(e->f, "\tmkc_rt_bad bad;\n\tif (%s)\n\t\tMKC_FAIL_INDEX(m, node, &bad);\n", call);
}

/* Gather: its indices checked by the body. */
static int
emit_gather(mkc_emitter *e, const mkc_node *n)
{
	char call[96];
	decl_all(e, n);
	snprintf(call, sizeof call, "mkc_gather(&y, &x0, &x1, %d, lo, hi, &bad)", n->kern->axis);
	emit_checked(e, call);
	return 0;
}

static bool
all_float(const mkc_node *n)
{
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] && n->in[i]->dtype != MKC_DT_FLOAT && n->in[i]->dtype != MKC_DT_BOOL &&
		    n->in[i]->dtype != MKC_DT_INT64)
			return false;
	return n->out[0]->dtype == MKC_DT_FLOAT;
}

/*
 * A product's options (backends/c/matmul.h's mkc_mm_opt), by name: Gemm's
 * transposes and epilogue, MatMul's canon-made trans_b, the norm's eps of
 * NormGemm, NormGlu and HeadProj, and HeadProj's pairs.
 */
static void
emit_mm_opt(mkc_emitter *e, const mkc_node *n, int pairs)
{
	const mkc_kernel *k = n->kern;
	char fa[48], fb[48], fe[48];
	bool gemm = n->op != MKC_OP_MATMUL;
	fprintf(e->f, "\tconst mkc_mm_opt o = {.trans_a = %d, .trans_b = %d, .gemm = %d, .alpha = %s, "
		".beta = %s, .eps = %s, .pairs = %d};\n", k->trans_a, k->trans_b, gemm,
		flit(fa, gemm || n->op == MKC_OP_HEAD_PROJ ? k->alpha : 1.0f),
		flit(fb, gemm ? k->beta : 0.0f), flit(fe, k->eps), pairs);
}

/*
 * A product by a weight stored [N, K] (Gemm with transB, as Hugging Face
 * keeps Linear weights; MatMul with canon's mkc_trans_b) on a GPU, read by
 * rows with 16-byte loads (K whole chunks of them): matmul.h's
 * mkc_dot_rows, or matvec.cuh's body where gemv_fits.
 */
static bool
rows_fit(const mkc_emitter *e, const mkc_tensor *w, mkc_dim k)
{
	return e->t->warp && w->kind == MKC_TK_WEIGHT && mkc_dim_is_const(k) &&
	       k.c % (is_bf16(w) ? 8 : 4) == 0;
}

/*
 * Whether every tile of n has one row of activations and at most
 * MKC_GEMV_ROWS outputs, with K whole 16-byte chunks of weights:
 * backends/cuda/matvec.cuh then computes the tile.
 */
static bool
gemv_fits(const mkc_emitter *e, const mkc_node *n, int r, int wi)
{
	const mkc_tensor *y = n->out[0], *a = n->in[0];
	int64_t k = a->shape[a->rank - 1].c;
	if (!e->t->warp || k % (is_bf16(n->in[wi]) ? 8 : 4))
		return false;
	for (int d = 0; d < r - 1; d++)
		if (!mkc_dim_eq(y->shape[d], mkc_dim_const(1)))
			return false;
	/* MKC_GEMV_ROWS dot products a tile; NormGlu's and Glu's two an output */
	const int64_t most = n->op == MKC_OP_NORM_GLU || n->op == MKC_OP_GLU ? MKC_GEMV_ROWS / 2
										 : MKC_GEMV_ROWS;
	const mkc_plan *p = e->p;
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		if (t->node == n && (!mkc_dim_is_const(t->out.hi[r - 1]) ||
				     !mkc_dim_is_const(t->out.lo[r - 1]) ||
				     t->out.hi[r - 1].c - t->out.lo[r - 1].c > most))
			return false;
	}
	return true;
}

/* matvec.cuh's template arguments for weight w, K long, normalised by scale (or none). */
static const char *
gemv_args(char *buf, int64_t k, const mkc_tensor *w, const mkc_tensor *scale)
{
	snprintf(buf, 96, "%lld, %s, %s", (long long)k, is_bf16(w) ? "MKC_W_BF16" : "MKC_W_F32",
		 !scale ? "MKC_NORM_NONE" : is_bf16(scale) ? "MKC_NORM_BF16" : "MKC_NORM_F32");
	return buf;
}

/*
 * A product whose b is a weight [N, K] read by rows (rows_fit): on a GPU
 * the matvec body where every tile fits it, else a warp an output
 * (matmul.h's mkc_dot_rows). c is C's view, "&x2", or "NULL"; u Glu's up
 * weight, "&x2", or "NULL".
 */
static void
emit_dot_rows(mkc_emitter *e, const mkc_node *n, int r, const char *u, const char *c)
{
	char ga[96];
	const mkc_tensor *a = n->in[0];
	if (gemv_fits(e, n, r, 1))
		fprintf(e->f, "\tmkc_gemv_tile<%s, %s>(&y, &x0, &x1, %s, NULL, %s, &o, lo, hi);\n",
			gemv_args(ga, a->shape[a->rank - 1].c, n->in[1], NULL),
			strcmp(u, "NULL") ? "MKC_EPI_GLU" : "MKC_EPI_MM", u, c);
	else
		fprintf(e->f, "\tmkc_dot_rows(&y, &x0, &x1, %s, %s, &o, lo, hi);\n", u, c);
}

static int
emit_matmul(mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *a = n->in[0], *b = n->in[1];
	int r = n->out[0]->rank;
	if (a->rank < 2 || b->rank < 2)
		return unsupported(e, n, "MatMul of a vector");
	decl_all(e, n);
	emit_mm_opt(e, n, 0);
	/* canon's mkc_trans_b: b is stored [N, K] and read by rows */
	if (n->kern->trans_b && rows_fit(e, b, a->shape[a->rank - 1]))
		emit_dot_rows(e, n, r, "NULL", "NULL");
	else if (e->t->warp && b->kind == MKC_TK_WEIGHT && b->rank == 2)
		/* a weight [K, N]: the lanes split the K axis (matmul.h's mkc_matmul_split_k) */
		fputs("\t__shared__ float part[MKC_THREADS];\n"
		      "\tmkc_matmul_split_k(&y, &x0, &x1, &o, lo, hi, part);\n", e->f);
	else
		fputs("\tmkc_matmul(&y, &x0, &x1, NULL, &o, lo, hi);\n", e->f);
	return 0;
}

/*
 * Whether Gemm n's tiles are blocks of a step's tokens (passes/tile.c's
 * clamped row blocks) that backends/cuda/mma.cuh computes: a target with
 * tensor-core tiles, x [S, K] float32 (or written as bf16 by its producer:
 * passes/narrow.c), W a bf16 weight [N, K] (transB), K a multiple of the
 * tile's K step, alpha 1 (and beta 1 with C), C a residual shaped as y or a
 * bias [N], and every tile at most MKC_MM_TM rows by MKC_MM_TN columns; or
 * Glu n on those terms, its tiles half as many columns (each takes a row
 * of both weights), or as many on a target with TMA (passes/tile.c's
 * wide_glu). The widest tile's columns, or 0.
 */
_Static_assert(MKC_MM_TK == 64, "ir/kernel.c's mkc_kernel_tc_gemm asks for K a multiple of 64");

/* A tensor-core product's C: none, a float32 residual shaped as y, or a bias [N]. */
static bool
mma_c_fits(const mkc_node *n)
{
	const int ci = n->op == MKC_OP_GEMM ? 2 : n->op == MKC_OP_NORM_GEMM ? 3 : -1;
	const mkc_tensor *c = ci > 0 && n->nin > ci ? n->in[ci] : NULL, *y = n->out[0];
	return !c || (c->dtype == MKC_DT_FLOAT && !is_bf16(c) &&
		      (mkc_tensor_same_shape(c, y) ||
		       (c->rank == 1 && mkc_dim_eq(c->shape[0], y->shape[1]))));
}

/*
 * The widest of n's tiles in columns when every one is a block of a step's
 * tokens (clamped at run time) of at most most_rows rows by most_cols
 * columns, both constant; else 0.
 */
static int64_t
block_cols(const mkc_emitter *e, const mkc_node *n, int64_t most_rows, int64_t most_cols)
{
	int64_t widest = 0;
	for (int i = 0; i < e->p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(e->p, i);
		if (t->node != n)
			continue;
		mkc_dim rows, cols;
		if (!t->clamp || !mkc_dim_sub(t->out.hi[0], t->out.lo[0], &rows) ||
		    !mkc_dim_sub(t->out.hi[1], t->out.lo[1], &cols) || !mkc_dim_is_const(rows) ||
		    !mkc_dim_is_const(cols) || rows.c > most_rows || cols.c > most_cols)
			return 0;
		widest = cols.c > widest ? cols.c : widest;
	}
	return widest;
}

/* Whether passes/tile.c cut n as a chunk plan's product in a few-token plan. */
static bool
chunk_cut(const mkc_emitter *e, const mkc_node *n)
{
	for (int i = 0; i < e->p->tasks.n; i++)
		if (MKC_TASK(e->p, i)->node == n)
			return MKC_TASK(e->p, i)->chunk_cut;
	return false;
}

/*
 * Whether n is a product of a few-token plan (passes/tile.c's
 * few_products) that mma.cuh's mkc_mm_few_tile computes: the operands
 * mma_cols asks, every tile a block of at most MKC_FEW_ROWS tokens by at
 * most MKC_GEMV_ROWS weight rows (a Glu's features take two), and not
 * cut as a chunk's product (the output layer's: the chunk's tile).
 */
_Static_assert(MKC_FEW_SMEM <= MKC_MM_SMEM, "emit.c gives a file with such tiles MKC_MM_SMEM");

bool
mkc_emit_few(const mkc_emitter *e, const mkc_node *n)
{
	if (!e->t->few_tiles || !e->p->tp.few_products || !mkc_kernel_tc_gemm(n) || !mma_c_fits(n) ||
	    chunk_cut(e, n))
		return false;
	const bool glu = n->op == MKC_OP_GLU || n->op == MKC_OP_NORM_GLU;
	return block_cols(e, n, MKC_FEW_ROWS, glu ? MKC_GEMV_ROWS / 2 : MKC_GEMV_ROWS) > 0;
}

/* the chunk's tile takes no norm (NormGemm, NormGlu: only the few-token tile does) */
static int64_t
mma_cols(const mkc_emitter *e, const mkc_node *n)
{
	if (!e->t->mma || mkc_kernel_norm_product(n) || !mkc_kernel_tc_gemm(n) || !mma_c_fits(n) ||
	    mkc_emit_few(e, n))
		return 0;
	return block_cols(e, n, MKC_MM_TM,
			  n->op != MKC_OP_GLU || e->t->tma ? MKC_MM_TN : MKC_MM_TN / 2);
}

bool
mkc_emit_mma(const mkc_emitter *e, const mkc_node *n)
{
	return mma_cols(e, n) > 0;
}

bool
mkc_emit_mma_wide(const mkc_emitter *e, const mkc_node *n)
{
	return n->op == MKC_OP_GLU && mma_cols(e, n) > MKC_MM_TN / 2;
}

/*
 * Whether a tensor-core tile of n may read its operands by TMA (mma.cuh's
 * mkc_tma_tile): a bf16 x, and x and the weights each a 2-D tensor with a
 * buffer of its own (not a view of another's), for which the CUDA
 * runtime makes a map (exec.cuh's mkc_tmaps: an intermediate or a weight;
 * an input's pointer changes every step). The maps hold the buffer's
 * rows, so tokens past the step's and features past the weight's read as
 * zeros, as mkc_mm_load gives them.
 */
static bool
tma_one(const mkc_emitter *e, const mkc_tensor *t, mkc_tensor_kind kind)
{
	return t && t->kind == kind && t->rank == 2 && is_bf16(t) &&
	       mkc_dim_is_const(t->shape[1]) && t->shape[1].c % 64 == 0 &&
	       !(e->p->view_of && e->p->view_of[t->id] >= 0);
}

static bool
tma_operands(const mkc_emitter *e, const mkc_node *n)
{
	return e->t->tma && tma_one(e, n->in[0], MKC_TK_INTERMEDIATE) &&
	       tma_one(e, n->in[1], MKC_TK_WEIGHT) &&
	       (n->op != MKC_OP_GLU || tma_one(e, n->in[2], MKC_TK_WEIGHT));
}

/*
 * Gemm, and Glu (passes/fuse_glu.c): the tensor-core tile where
 * mkc_emit_mma takes it (Glu's up weight beside the gate's, y in float32
 * or, narrowed, bf16), else a product by rows on a GPU, else the general
 * bodies (matmul.h's mkc_matmul and mkc_glu).
 */
static int
emit_gemm(mkc_emitter *e, const mkc_node *n)
{
	const bool glu = n->op == MKC_OP_GLU;
	char c[16], u[16];
	view_in(c, n, glu ? 3 : 2);
	view_in(u, n, glu ? 2 : 3);
	decl_all(e, n);
	const bool few = mkc_emit_few(e, n);
	if (few || mkc_emit_mma(e, n)) {
		/* a step of few tokens' tile (the weights streamed once, as a decode
		 * step's), or the chunk's; C: a residual by rows, or a bias (ldc 0:
		 * the same row for every token) */
		const mkc_tensor *cx = !glu && n->nin > 2 ? n->in[2] : NULL;
		fprintf(e->f, "\tif (lo[0] < hi[0])\n\t\t%s<%s, %s, %s>(y.p, y.s[0], x0.p, "
			"x0.s[0], (const uint16_t *)x1.p, %s, x1.s[0], %s, %s, hi[0], hi[1], x0.d[1], "
			"lo[0], lo[1], mkc_dyn_smem", few ? "mkc_mm_few_tile" : "mkc_mma_tile",
			is_bf16(n->in[0]) ? "true" : "false",
			glu ? "true" : "false", is_bf16(n->out[0]) ? "true" : "false",
			glu ? "(const uint16_t *)x2.p" : "NULL", cx ? "(const float *)x2.p" : "NULL",
			cx && cx->rank == 2 ? "x2.s[0]" : "0");
		/* by TMA: the maps of x and the weights (slots 0, 1 and a Glu's 2) */
		if (!few && tma_operands(e, n))
			fprintf(e->f, ", MKC_TMAP(m, bi[0]), MKC_TMAP(m, bi[1]), %s",
				glu ? "MKC_TMAP(m, bi[2])" : "NULL");
		fputs(");\n", e->f);
		return 0;
	}
	if (is_bf16(n->in[0]) || is_bf16(n->out[0]))
		return unsupported(e, n, "x or y written as bf16 for a tensor-core tile this product "
				   "does not get (passes/narrow.c and mkc_emit_mma disagree)");
	emit_mm_opt(e, n, 0);
	if (!n->kern->trans_a && n->kern->trans_b && n->in[0]->rank == 2 &&
	    rows_fit(e, n->in[1], n->in[0]->shape[1]))
		emit_dot_rows(e, n, 2, u, c);
	else if (glu)
		fputs("\tmkc_glu(&y, &x0, &x1, &x2, &o, lo, hi);\n", e->f);
	else
		fprintf(e->f, "\tmkc_matmul(&y, &x0, &x1, %s, &o, lo, hi);\n", c);
	return 0;
}

/*
 * NormGemm (passes/fuse_norm.c): Gemm(RMSNormalization(x, scale), W, C) of
 * one row x of K; NormGlu (passes/fuse_glu.c) is two such products, by Wg
 * and Wu, and SiluMul's expression of them. On a GPU the matvec body
 * normalises the row it holds in registers; otherwise matmul.h's
 * mkc_norm_gemm, with the same float operations in the same order as the
 * norm's and the Gemm's own bodies (the C target's results are those of
 * the two nodes, bit for bit).
 */
static int
emit_norm_gemm(mkc_emitter *e, const mkc_node *n)
{
	bool glu = n->op == MKC_OP_NORM_GLU;
	char c[16], ga[96], fe[48];
	view_in(c, n, glu ? 4 : 3);
	decl_all(e, n);
	if (mkc_emit_few(e, n)) {
		/* a few-token step's rows: the few-token tile normalises them (mma.cuh) */
		const mkc_tensor *cx = !glu && n->nin > 3 ? n->in[3] : NULL;
		fprintf(e->f, "\tif (lo[0] < hi[0])\n\t\tmkc_mm_few_tile<false, %s, %s, %s>(y.p, "
			"y.s[0], x0.p, x0.s[0], (const uint16_t *)x2.p, %s, x2.s[0], %s, %s, hi[0], "
			"hi[1], x0.d[1], lo[0], lo[1], mkc_dyn_smem, x1.p, %s);\n",
			glu ? "true" : "false", is_bf16(n->out[0]) ? "true" : "false",
			is_bf16(n->in[1]) ? "MKC_NORM_BF16" : "MKC_NORM_F32",
			glu ? "(const uint16_t *)x3.p" : "NULL", cx ? "(const float *)x3.p" : "NULL",
			cx && cx->rank == 2 ? "x3.s[0]" : "0", flit(fe, n->kern->eps));
		return 0;
	}
	if (is_bf16(n->out[0]))
		return unsupported(e, n, "y written as bf16 for a few-token tile this product does "
				   "not get (passes/narrow.c and mkc_emit_few disagree)");
	emit_mm_opt(e, n, 0);
	if (gemv_fits(e, n, 2, 2))
		fprintf(e->f, "\tmkc_gemv_tile<%s, %s>(&y, &x0, &x2, %s, &x1, %s, &o, lo, hi);\n",
			gemv_args(ga, n->in[0]->shape[1].c, n->in[2], n->in[1]),
			glu ? "MKC_EPI_GLU" : "MKC_EPI_MM", glu ? "&x3" : "NULL", c);
	else
		fprintf(e->f, "\tmkc_norm_gemm(&y, &x0, &x1, &x2, %s, %s, &o, lo, hi);\n",
			glu ? "&x3" : "NULL", c);
	return 0;
}

/* The most units (rows or pairs) a tile of HeadProj n has. */
static int64_t
head_proj_units(const mkc_emitter *e, const mkc_node *n)
{
	int64_t most = 0;
	const mkc_plan *p = e->p;
	for (int i = 0; i < p->tasks.n; i++) {
		const mkc_task *t = MKC_TASK(p, i);
		if (t->node == n && t->out.hi[3].c - t->out.lo[3].c > most)
			most = t->out.hi[3].c - t->out.lo[3].c;
	}
	return n->kern->rotary && n->kern->interleaved ? most / 2 : most;
}

/*
 * HeadProj (passes/fuse_qkv.c): the tile's units of a head (passes/tile.c's
 * tile_head_proj) into y at its position: on a GPU the matvec body computes
 * the rows, a pair's second rows as a second weight, then a lane a unit
 * rotates and stores (matvec.cuh's mkc_head_proj_tile); otherwise
 * matmul.h's mkc_head_proj computes the tile.
 */
static int
emit_head_proj(mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *w = n->in[2];
	const mkc_kernel *k = n->kern;
	const int64_t kk = n->in[0]->shape[1].c;
	const int pairs = !k->rotary ? 0 : k->interleaved ? 2 : 1;
	const char *cs = pairs ? "&x3" : "NULL", *sn = pairs ? "&x4" : "NULL";
	const char *pages = k->paged ? "&m->pages" : "NULL";
	char ga[96];
	decl_all(e, n);
	emit_mm_opt(e, n, pairs);
	if (e->t->warp && kk % (is_bf16(w) ? 8 : 4) == 0 &&
	    head_proj_units(e, n) * (pairs ? 2 : 1) <= MKC_GEMV_ROWS)
		fprintf(e->f, "\tmkc_head_proj_tile<%s>(&y, &x0, &x1, &x2, %s, %s, &o, lo, hi, %s);\n",
			gemv_args(ga, kk, w, n->in[1]), cs, sn, pages);
	else
		fprintf(e->f, "\tmkc_head_proj(&y, &x0, &x1, &x2, %s, %s, &o, lo, hi, %s);\n", cs, sn,
			pages);
	return 0;
}

/*
 * Row-wise ops (Softmax, the norms): backends/c/rows.h walks the box with
 * the row axes collapsed, a lane a row, or for the norms every lane on
 * every row in turn, reducing with mkc_rt_block_sum.
 */
static int
emit_softmax(mkc_emitter *e, const mkc_node *n)
{
	decl_all(e, n);
	fprintf(e->f, "\tmkc_softmax(&y, &x0, %d, %d, lo, hi);\n", n->kern->axis, n->kern->one_axis);
	return 0;
}

/*
 * RMSNormalization and LayerNormalization over the axes from `axis` on.
 * The lanes share each row (a decode step's norms are one row of the
 * hidden size: a lane a row would leave all but one idle), so rows go one
 * after another and each sum is a block-wide reduction.
 */
static int
emit_norm(mkc_emitter *e, const mkc_node *n)
{
	bool layer = n->op == MKC_OP_LAYER_NORM;
	if (n->op == MKC_OP_RMS_NORM && n->nout > 1)
		return unsupported(e, n, "RMSNormalization with more than one output");
	char fe[48], b[16], y1[16], y2[16];
	decl_all(e, n);
	/* scale and bias broadcast to x (infer checked it); the body reads them
	 * by where the element is (backends/c/rows.h: mkc_rows_wkind) */
	fprintf(e->f, "\tconst mkc_norm_opt o = {.axis = %d, .eps = %s, .layer = %d};\n"
		"\tmkc_norm(&y, &x0, &x1, %s, %s, %s, &o, lo, hi);\n", n->kern->axis,
		flit(fe, n->kern->eps), layer, layer ? view_in(b, n, 2) : "NULL", view_out(y1, n, 1),
		view_out(y2, n, 2));
	return 0;
}

/*
 * SkipSimplifiedLayerNormalization (com.microsoft), one whole tile: per row
 * of the last axis, s = input + skip (+ bias), written to output 3 when it
 * is wanted; then s scaled by 1 / sqrt(mean(s^2) + epsilon) and gamma.
 */
static int
emit_skip_norm(mkc_emitter *e, const mkc_node *n)
{
	char fe[48], b[16], y1[16], y2[16], y3[16];
	decl_all(e, n);
	fprintf(e->f, "\tmkc_skip_norm(&y, &x0, &x1, &x2, %s, %s, %s, %s, %s, lo, hi);\n",
		view_in(b, n, 3), view_out(y1, n, 1), view_out(y2, n, 2), view_out(y3, n, 3),
		flit(fe, n->kern->eps));
	return 0;
}

/*
 * RotaryEmbedding: opset 23 takes (X, cos, sin, position_ids?); the
 * com.microsoft op takes (X, position_ids, cos_cache, sin_cache), where a
 * one-element position_ids is the first position of every sequence.
 * X is 4-D [B, H, S, D], or 3-D with num_heads.
 */
static int
emit_rotary(mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	const mkc_kernel *k = n->kern;
	bool ms = n->op == MKC_OP_MS_ROTARY;
	int ic = ms ? 2 : 1, is = ms ? 3 : 2, ip = ms ? 1 : 3;   /* cos, sin, positions */
	bool pos = ip < n->nin && n->in[ip];
	if (x->rank == 3 && k->heads <= 0)
		return unsupported(e, n, "3-D input without num_heads");
	if (x->rank != 3 && x->rank != 4)
		return unsupported(e, n, "an input that is not 3-D or 4-D");
	if (pos && n->in[ip]->dtype != MKC_DT_INT64)
		return unsupported(e, n, "position_ids that are not int64");
	/* the shapes the body indexes by (its positions themselves it checks at run time):
	 * infer checked only the rows' length */
	const mkc_tensor *cs = n->in[ic], *sn = n->in[is], *pt = pos ? n->in[ip] : NULL;
	const mkc_dim B = x->shape[0], S = x->shape[x->rank == 3 ? 1 : 2];
	if (pt && !(pt->rank == 2 && mkc_dim_eq(pt->shape[0], B) && mkc_dim_eq(pt->shape[1], S)) &&
	    mkc_tensor_numel(pt) != 1)
		return unsupported(e, n, "position_ids that are neither [batch, sequence] nor one "
				   "first position");
	for (int i = 0; i < 2; i++) {
		const mkc_tensor *c = i ? sn : cs;
		if (pt ? c->rank != 2
		       : c->rank != 3 || !mkc_dim_eq(c->shape[0], B) || !mkc_dim_eq(c->shape[1], S))
			return unsupported(e, n, pt ? "cos and sin caches that are not [positions, "
						      "rotated / 2]"
						    : "cos and sin that are not [batch, sequence, "
						      "rotated / 2] (without position_ids)");
	}
	char p[16], call[96];
	decl_all(e, n);
	fprintf(e->f, "\tconst mkc_rotary_opt o = {.heads = %lldLL, .rot = %lldLL, .inter = %d, "
		".lo = lo, .hi = hi};\n", (long long)(x->rank == 3 ? k->heads : 0),
		(long long)k->rot_dim, k->interleaved);
	snprintf(call, sizeof call, "mkc_rotary(&y, &x0, &x%d, &x%d, %s, &o, %s)", ic, is,
		 view_in(p, n, ip), pos ? "&bad" : "NULL");
	if (pos)
		emit_checked(e, call);
	else   /* no positions from the caller: nothing to check, nothing to fail */
		fprintf(e->f, "	(void)%s;\n", call);
	return 0;
}

/*
 * An attention node's scale: the model's, or 1 / sqrt(head size) computed
 * at run time from the query's, the float operations lower.c's value came
 * from.
 */
static const char *
scale_expr(char *buf, const mkc_kernel *k, const char *q)
{
	char b[48];
	if (k->scale_given)
		snprintf(buf, 96, "%s", flit(b, k->scale));
	else
		snprintf(buf, 96, "1.0f / sqrtf((float)%s.d[3])", q);
	return buf;
}

/*
 * The head size for which a GPU target has a decode attention body
 * (backends/cuda/attention.cuh: positions spread over the warps), or 0 when
 * the node needs the general one: a mask, a soft cap, is_causal, past inputs, present
 * outputs, or a head size that is not a constant multiple of the warp up to
 * MKC_ATTN_MAX_D shared by query, key and value.
 */
static int64_t
attention_fast_dim(const mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *q = n->in[0], *k = n->in[1], *v = n->in[2];
	if (!e->t->warp || n->nin > 3 || n->kern->softcap != 0 || n->kern->causal)
		return 0;
	for (int o = 1; o < n->nout; o++)
		if (n->out[o])
			return 0;
	if (k->rank != 4 || v->rank != 4 || k->dtype != MKC_DT_FLOAT || v->dtype != MKC_DT_FLOAT ||
	    is_bf16(k) || is_bf16(v))
		return 0;
	mkc_dim d = q->shape[3];
	if (!mkc_dim_is_const(d) || d.c % e->t->warp || d.c > MKC_ATTN_MAX_D ||
	    !mkc_dim_eq(k->shape[3], d) ||
	    !mkc_dim_eq(v->shape[3], d) || !mkc_dim_eq(k->shape[2], v->shape[2]) ||
	    !mkc_dim_is_const(q->shape[1]) || !mkc_dim_is_const(k->shape[1]) ||
	    !mkc_dim_eq(k->shape[1], v->shape[1]) || k->shape[1].c < 1 ||
	    q->shape[1].c % k->shape[1].c)
		return 0;
	return d.c;
}

/*
 * The head size for which a chunk's body computes Attention n's tiles
 * (blocks of a chunk's query positions, passes/tile.c), or 0: a target
 * with a chunk's tensor-core bodies, the keys and values one cache (the
 * past inside them: is_causal 2, or none), batch 1, no mask, soft cap or
 * present outputs, the head size a multiple of the warp up to 128. *mma:
 * mma.cuh's mkc_attn_chunk_mma takes them (a head size of 64 or 128, and
 * the products on tensor cores already or a bf16 cache: its bf16 rounding
 * is then the model's); else attention.cuh's mkc_attn_chunk on CUDA cores,
 * float32 caches only.
 */
static int64_t
attention_chunk_dim(const mkc_emitter *e, const mkc_node *n, bool *mma)
{
	const mkc_tensor *q = n->in[0], *k = n->in[1];
	*mma = false;
	if (!e->t->chunk_attn || !mkc_kernel_chunk_attention(n) || q->shape[3].c % e->t->warp ||
	    q->shape[3].c > 128)
		return 0;
	*mma = e->t->mma && mkc_kernel_tc_attention(n) && (e->mma || is_bf16(k));
	if (!*mma && is_bf16(k))
		return 0;
	for (int i = 0; i < e->p->tasks.n; i++)
		if (MKC_TASK(e->p, i)->node == n && MKC_TASK(e->p, i)->clamp)
			return q->shape[3].c;
	return 0;
}

bool
mkc_emit_attn_mma(const mkc_emitter *e, const mkc_node *n)
{
	bool mma;
	return n->op == MKC_OP_ATTENTION && attention_chunk_dim(e, n, &mma) > 0 && mma;
}

/*
 * Attention (opset 23), 4-D: backends/c/attention.h's mkc_attention, lanes
 * sharing the output elements, each walking the keys once with an online
 * softmax; scores scaled, soft-capped, masked (a bool mask keeps where
 * true, a float mask adds; is_causal keeps a query's positions up to the
 * past's length plus its own index); keys and values the past ones followed by the
 * new ones, which the present outputs are. A tile computes the query heads
 * lo[1]..hi[1] (tile.c cuts Attention by heads when it has no present
 * outputs). On a GPU with a body for its head size, attention.cuh's.
 */
static int
emit_attention(mkc_emitter *e, const mkc_node *n)
{
	if (n->in[0]->rank != 4)
		return unsupported(e, n, "3-D query, key and value");
	if (n->nout > 3 && n->out[3])
		return unsupported(e, n, "the QK^T output");
	char fs[96], fc[48], mask[16], pk[16], pv[16], y1[16], y2[16];
	decl_all(e, n);
	/* caches in pages (--max-seqs): the general body, a row's positions its sequence's */
	const bool paged = n->kern->paged;
	int64_t d = paged ? 0 : attention_fast_dim(e, n);
	bool mma = false;
	int64_t dc = paged ? 0 : attention_chunk_dim(e, n, &mma);
	if (dc > 0 && mma) {
		fprintf(e->f, "\tif (lo[2] < hi[2])\n\t\tmkc_attn_chunk_mma_tile<%lld, %s, %s>(&x0, "
			"&x1, &x2, &y, %d, lo[1], hi[1], lo[2], hi[2], %s, mkc_dyn_smem);\n",
			(long long)dc, is_bf16(n->in[1]) ? "uint16_t" : "float",
			is_bf16(n->out[0]) ? "true" : "false", n->kern->causal,
			scale_expr(fs, n->kern, "x0"));
		return 0;
	}
	if (is_bf16(n->out[0]))
		return unsupported(e, n, "an output written as bf16 for a tensor-core body this "
				   "attention does not get (passes/narrow.c and emit_ops.c disagree)");
	if (dc > 0) {
		fprintf(e->f, "\tif (lo[2] < hi[2])\n\t\tmkc_attn_chunk_tile<%lld>(&x0, &x1, &x2, &y, %d, "
			"lo[1], hi[1], lo[2], hi[2], %s);\n", (long long)dc, n->kern->causal,
			scale_expr(fs, n->kern, "x0"));
		return 0;
	}
	if (d > 0) {
		fprintf(e->f, "\tmkc_attn_rows_tile<%lld>(&x0, &x1, &x2, &y, lo[1], hi[1], %s);\n",
			(long long)d, scale_expr(fs, n->kern, "x0"));
		return 0;
	}
	float softcap = n->kern->softcap;
	fprintf(e->f, "\tconst mkc_attn_opt o = {.scale = %s, .softcap = %s, .causal = %d,\n"
		"\t\t.h0 = lo[1], .h1 = hi[1], .s0 = lo[2], .s1 = hi[2], .pages = %s};\n"
		"\tmkc_attention(&y, &x0, &x1, &x2, %s, %s, %s, %s, %s, &o);\n",
		scale_expr(fs, n->kern, "x0"), flit(fc, softcap > 0 ? softcap : 0), n->kern->causal,
		paged ? "&m->pages" : "NULL",
		view_in(mask, n, 3),
		view_in(pk, n, 4), view_in(pv, n, 5), view_out(y1, n, 1), view_out(y2, n, 2));
	return 0;
}

/*
 * AttnPart and AttnMerge (passes/split_attn.c). Part: for each row r of
 * the box (key head r / C, chunk r % C of the L positions) and each of
 * that key head's G query heads and query positions, an online softmax over
 * the chunk's positions: the unnormalised sums of the values, the maximum
 * score and the sum of exp(score - maximum). On a GPU with a head size it
 * has a body for, backends/cuda/attention.cuh; otherwise backends/c/
 * attention.h's, a lane an output element. Merge: each output element from
 * the C partial results of its key head, rescaled to their common maximum
 * (on a GPU with a body for the head size, backends/cuda/attention.cuh's:
 * mkc_attn_merge_warps, a warp a row, for at most a warp's lanes of
 * chunks, mkc_attn_merge for more; else backends/c/attention.h's).
 */
static int
emit_attn_part(mkc_emitter *e, const mkc_node *n)
{
	int64_t c = n->kern->chunks, d = n->in[0]->shape[3].c;
	int64_t grp = n->in[0]->shape[1].c / n->in[1]->shape[1].c;
	char fs[96];
	decl_all(e, n);
	scale_expr(fs, n->kern, "x0");
	const char *pages = n->kern->paged ? "&m->pages" : "NULL";
	/* in pages, a GPU part's round of positions (attention.cuh's PW) within a page */
	const int64_t round = e->t->warp ? e->t->warp / (d / 16 > 0 ? d / 16 : 1) : 1;
	/* a warp a query row (attention.cuh's W) for steps of several
	 * sequences' tokens, at least a row a warp; on 32-lane warps only */
	const bool warps = n->kern->paged && e->t->warp == 32 &&
			   e->p->g->max_chunk >= MKC_THREADS / 32;
	/* a power-of-2 head size: attention.cuh's rounds give a key row d / 16
	 * lanes, which must divide the warp (a head of 96 took 6, and the lanes
	 * past a round's 5 positions scored a sixth with part of its key) */
	if (e->t->warp && d % e->t->warp == 0 && (d & (d - 1)) == 0 && d <= MKC_ATTN_MAX_D &&
	    grp <= MKC_ATTN_MAX_GROUP && is_bf16(n->in[1]) == is_bf16(n->in[2]) &&
	    (!n->kern->paged || e->p->g->page_size % round == 0))
		/* the element type of the caches: float, or uint16_t for bf16 */
		fprintf(e->f, "\tmkc_attn_part_tile<%lld, %lld, %s, %s>(&x0, &x1, &x2, &y, %lldLL, "
			"lo[1], hi[1], %s, %s);\n", (long long)d, (long long)grp,
			is_bf16(n->in[1]) ? "uint16_t" : "float", warps ? "true" : "false",
			(long long)c, fs, pages);
	else
		fprintf(e->f, "\tmkc_attn_part_c(&x0, &x1, &x2, &y, %lldLL, lo[1], hi[1], %s, %s);\n",
			(long long)c, fs, pages);
	return 0;
}

static int
emit_attn_merge(mkc_emitter *e, const mkc_node *n)
{
	int64_t c = n->kern->chunks, d = n->out[0]->shape[3].c;
	decl_all(e, n);
	/* a warp a row where a warp's lanes hold the chunks, else the one-trip
	 * body (which holds up to MKC_ATTN_MAX_CHUNKS) */
	const bool warps = c <= e->t->warp && d <= MKC_ATTN_MAX_D;
	if (e->t->warp && d % e->t->warp == 0 && d <= MKC_THREADS &&
	    (warps || c <= MKC_ATTN_MAX_CHUNKS))
		fprintf(e->f, "\tmkc_attn_merge_tile<%lld, %s>(&x0, &y, %lldLL, lo[1], hi[1], lo[2], "
			"hi[2]);\n", (long long)d, warps ? "true" : "false", (long long)c);
	else
		fprintf(e->f, "\tmkc_attn_merge_c(&x0, &y, %lldLL, lo[1], hi[1], lo[2], hi[2]);\n",
			(long long)c);
	return 0;
}

/*
 * CacheAppend: the new positions into the cache, at past_len along the
 * cache axis. The box is those positions; the input is dense. A float
 * cache [B, H, cap, D] takes backends/c/cache.h's body, which also rotates
 * the positions for fuse_rope's CacheAppend(x, cos, sin); other layouts
 * move the box's elements with backends/c/data.h's mkc_strided. A bf16
 * cache (passes/kv.c) is always the former.
 */
static int
emit_cache_append(mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *y = n->out[0];
	const mkc_kernel *k = n->kern;
	decl_all(e, n);
	if (y->rank == 4 && y->cap_axis == 2 && y->dtype == MKC_DT_FLOAT &&
	    n->in[0]->dtype == MKC_DT_FLOAT) {
		/* the box: the new positions, or a chunk's head and block of rows */
		fprintf(e->f, "\tmkc_cache_append_box(&y, &x0, %s, %s, %lldLL, %d, y.d[2] - x0.d[2], lo, "
			"hi, %s);\n", k->rotary ? "&x1" : "NULL", k->rotary ? "&x2" : "NULL",
			(long long)k->rot_dim, k->interleaved, k->paged ? "&m->pages" : "NULL");
		return 0;
	}
	if (k->paged)
		return unsupported(e, n, "a cache in pages (--max-seqs) not a float32 [B, H, positions, D]");
	if (k->rotary)
		return unsupported(e, n, "a rotated append into a cache not [B, H, positions, D]");
	if (is_bf16(y))
		return unsupported(e, n, "a bf16 cache not [B, H, positions, D]");
	/* element idx of the box is x0's idx - lo[cap_axis] along the cache axis */
	fprintf(e->f, "\tmkc_strided(&y, &x0, -lo[%d] * x0.s[%d], x0.s, lo, hi);\n", y->cap_axis,
		y->cap_axis);
	return 0;
}

/*
 * GroupQueryAttention (com.microsoft), one whole tile: backends/c/gqa.h's
 * body checks the lengths and positions the caller gave (seqlens_k,
 * total_sequence_length) against the past, then writes the present keys
 * and values, then, once every lane's writes are visible, the attention.
 */
static int
emit_gqa(mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *q = n->in[0];
	if (n->nout < 3 || !n->out[1] || !n->out[2])
		return unsupported(e, n, "GroupQueryAttention without both present outputs");
	const mkc_kernel *k = n->kern;
	int64_t hq = k->heads, hk = k->kv_heads;
	int64_t dh = q->shape[2].c / hq;
	bool rot = k->rotary;
	/* the shapes the body indexes by (the lengths and positions it checks at run time) */
	const mkc_tensor *sl = n->in[5], *tot = n->nin > 6 ? n->in[6] : NULL;
	if (sl->rank != 1 || !mkc_dim_eq(sl->shape[0], q->shape[0]))
		return unsupported(e, n, "seqlens_k that is not [batch]");
	if (tot && mkc_tensor_numel(tot) != 1)
		return unsupported(e, n, "total_sequence_length that is not one value");
	if (rot && (n->in[7]->rank != 2 || n->in[8]->rank != 2))
		return unsupported(e, n, "cos and sin caches that are not [positions, rotated / 2]");
	char fb[48], sc[64], pk[16], pv[16], tl[16];
	decl_all(e, n);
	if (k->scale_given)
		flit(sc, k->scale);
	else
		snprintf(sc, sizeof sc, "1.0f / sqrtf((float)%lldLL)", (long long)dh);
	fprintf(e->f, "\tconst mkc_gqa_args a = {.y = &y, .pk_out = &y1, .pv_out = &y2, .q = &x0, "
		".k = &x1, .v = &x2,\n\t\t.pk = %s, .pv = %s, .seqlens_k = &x5, .total = %s, "
		".cos = %s, .sin = %s,\n"
		"\t\t.hq = %lldLL, .hk = %lldLL, .d = %lldLL, .inter = %d, .scale = %s, .softcap = %s};\n"
		"\tfloat qr[%lld];\n", view_in(pk, n, 3), view_in(pv, n, 4), view_in(tl, n, 6),
		rot ? "&x7" : "NULL", rot ? "&x8" : "NULL", (long long)hq, (long long)hk, (long long)dh,
		k->interleaved, sc, flit(fb, k->softcap > 0 ? k->softcap : 0), (long long)dh);
	emit_checked(e, "mkc_gqa(&a, qr, &bad)");
	fputs("\t(void)lo; (void)hi;\n", e->f);
	return 0;
}

/*
 * LengthCheck (passes/gqa.c): the lengths the caller gave a
 * GroupQueryAttention taken apart, checked (backends/c/gqa.h).
 */
static int
emit_length_check(mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *sl = n->in[0], *want = n->in[1], *tot = n->nin > 2 ? n->in[2] : NULL;
	if (sl->dtype != MKC_DT_INT32 || sl->rank != 1 || want->dtype != MKC_DT_INT64 ||
	    (tot && (tot->dtype != MKC_DT_INT32 || mkc_tensor_numel(tot) != 1)))
		return unsupported(e, n, "int32 seqlens_k [batch] and total length are what it takes");
	char tl[16], call[96];
	decl_all(e, n);
	snprintf(call, sizeof call, "mkc_length_check(&y, &x0, &x1, %s, &bad)", view_in(tl, n, 2));
	emit_checked(e, call);
	fputs("	(void)lo; (void)hi;\n", e->f);
	return 0;
}

/* ReduceMean, ReduceSum, ReduceMax: one whole tile (backends/c/reduce.h). */
static int
emit_reduce(mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	mkc_dtype dt = x->dtype;
	bool ints = (dt == MKC_DT_INT64 || dt == MKC_DT_INT32) && n->out[0]->dtype == dt;
	if (ints && n->op == MKC_OP_REDUCE_MEAN)
		return unsupported(e, n, "ReduceMean of an integer tensor");
	if (!ints && !all_float(n))
		return unsupported(e, n, "a reduction of a tensor that is not float32, int32 or int64");
	int64_t red[MKC_MAX_RANK] = {0};
	for (int i = 0; i < n->kern->naxes; i++)
		red[n->kern->axes[i]] = 1;
	decl_all(e, n);
	emit_ints(e->f, "int", "red", red, x->rank);
	const char *op = n->op == MKC_OP_REDUCE_MAX ? "MKC_REDUCE_MAX"
			 : n->op == MKC_OP_REDUCE_MEAN ? "MKC_REDUCE_MEAN" : "MKC_REDUCE_SUM";
	fprintf(e->f, "\tmkc_reduce(%s, &y, &x0, red, %d);\n\t(void)lo; (void)hi;\n", op,
		ints ? (int)mkc_dtype_size(dt) : 0);
	return 0;
}

static int
emit_range(mkc_emitter *e, const mkc_node *n)
{
	if (!tcode(e, n->out[0]->dtype))
		return unsupported(e, n, "a Range of this type");
	decl_all(e, n);
	fputs("\tmkc_range(&y, &x0, &x2, lo, hi);\n", e->f);
	return 0;
}

/* Split: one whole tile, each output present in turn (an absent one takes no room). */
static int
emit_split(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	int nout = 0;
	decl_all(e, n);
	fputs("\tconst mkc_view *const out[] = {", f);
	for (int o = 0; o < n->nout; o++) {
		char v[16];
		if (!n->out[o])
			continue;
		fprintf(f, "%s%s", nout++ ? ", " : "", view_out(v, n, o));
	}
	fprintf(f, "};\n\tmkc_split(%d, out, &x0, %d);\n\t(void)lo; (void)hi;\n", nout,
		n->kern->axis);
	return 0;
}

/* A node whose outputs are all known (kept only because they are graph
 * outputs): write the values. */
static int
emit_known(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	mkc_graph *g = e->p->g;
	for (int i = 0; i < n->nout; i++) {
		const mkc_tensor *t = n->out[i];
		if (!t || t->kind != MKC_TK_OUTPUT)
			continue;   /* a weight already holds its value */
		const char *ct = mkc_ctype(e, t->dtype);
		e->slot[e->nslot] = e->index[t->id];
		fprintf(f, "\tif (MKC_LANE == 0) {\n\t\t%s *o = (%s *)m->buf[bi[%d]];\n", ct, ct,
			e->nslot++);
		if (t->symval) {
			for (int64_t k = 0; k < t->nsymval; k++) {
				char b[96];
				fprintf(f, "\t\to[%lld] = (%s)%s;\n", (long long)k, ct,
					mkc_dimx(g, t->symval[k], b, sizeof b));
			}
		} else {
			fprintf(f, "\t\tstatic const unsigned char v[%zu] = {", t->nbytes + 1);
			for (size_t k = 0; k < t->nbytes; k++)
				fprintf(f, "%u,", ((const unsigned char *)t->data)[k]);
			fprintf(f, "0};\n\t\tmemcpy(o, v, %zu);\n", t->nbytes);
		}
		fputs("\t\t(void)o;\n\t}\n", f);
	}
	fputs("\t(void)m; (void)lo; (void)hi; (void)bi;\n", f);
	return 0;
}

/*
 * Dispatch on the node's kernel description (passes/lower.c); within a kind
 * the op picks the body (Softmax or a norm, Gemm or MatMul).
 */
int
mkc_emit_node(mkc_emitter *e, const mkc_node *n)
{
	const mkc_kernel *k = n->kern;
	MKC_ASSERT(k);
	if (k->known)
		return emit_known(e, n);
	if (k->refuse)
		return unsupported(e, n, k->refuse);
	switch (k->kind) {
	case MKC_KERN_ELEMENTWISE: {
		/* ops.def's EW rows are this kind's ops, each with its code */
		int row = ew_index(n->op);
		MKC_ASSERT(row >= 0);
		return emit_elementwise(e, n, row);
	}
	case MKC_KERN_COPY: return emit_copy(e, n);
	case MKC_KERN_TRANSPOSE: return emit_transpose(e, n);
	case MKC_KERN_CONCAT: return emit_concat(e, n);
	case MKC_KERN_SLICE: return emit_slice(e, n);
	case MKC_KERN_GATHER: return emit_gather(e, n);
	case MKC_KERN_RANGE: return emit_range(e, n);
	case MKC_KERN_SPLIT: return emit_split(e, n);
	case MKC_KERN_ATTENTION:
		if (n->op != MKC_OP_MS_GQA)
			break;
		/* int32 seqlens_k and total length beside float tensors */
		if (n->in[0]->dtype != MKC_DT_FLOAT || n->in[5]->dtype != MKC_DT_INT32 ||
		    (n->nin > 6 && n->in[6] && n->in[6]->dtype != MKC_DT_INT32))
			return unsupported(e, n, "float32 query and int32 seqlens_k and total length are "
					   "what it takes");
		return emit_gqa(e, n);
	case MKC_KERN_CHECK: return emit_length_check(e, n);
	default: break;
	}
	if (k->kind == MKC_KERN_REDUCE)
		return emit_reduce(e, n);
	if (!all_float(n))
		return unsupported(e, n, "float32 is the only type it takes on this target");
	switch (k->kind) {
	case MKC_KERN_MATMUL:
		return n->op == MKC_OP_MATMUL ? emit_matmul(e, n)
		       : n->op == MKC_OP_GEMM || n->op == MKC_OP_GLU ? emit_gemm(e, n)
							       : emit_norm_gemm(e, n);
	case MKC_KERN_ROWS:
		return n->op == MKC_OP_SOFTMAX ? emit_softmax(e, n)
		       : n->op == MKC_OP_MS_SKIP_SIMPLIFIED_LN ? emit_skip_norm(e, n) : emit_norm(e, n);
	case MKC_KERN_REDUCE: return emit_reduce(e, n);
	case MKC_KERN_ROTARY: return emit_rotary(e, n);
	case MKC_KERN_ATTENTION:
		return n->op == MKC_OP_ATTENTION ? emit_attention(e, n)
		       : n->op == MKC_OP_ATTN_PART ? emit_attn_part(e, n) : emit_attn_merge(e, n);
	case MKC_KERN_CACHE_APPEND: return emit_cache_append(e, n);
	case MKC_KERN_HEAD_PROJ: return emit_head_proj(e, n);
	default: return unsupported(e, n, "no code generator for this op");
	}
}

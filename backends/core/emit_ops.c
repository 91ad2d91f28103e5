/*
 * emit_ops.c - the body of each node's tile function.
 *
 * A tile function gets the model (buffers m->buf[], symbol values m->sym[])
 * and the box lo..hi of output 0 that its task computes; it computes exactly
 * that box. Every body starts by naming its tensors:
 *   y, y_d[], y_s[]        output 0: pointer, dims, strides (y1.. for more)
 *   x0, x0_d[], x0_s[]     input 0, and so on
 * with dims evaluated from the symbols at run time. Then one call of a tile
 * body with the node's constants (rank, axis, op code, types): the bodies
 * are plain C in backends/c/ (data.h, elementwise.h, rows.h, matmul.h,
 * attention.h, gqa.h, ...) that every target embeds, or device code in
 * backends/cuda/ where a GPU has a faster one. No tile body is written here
 * as C text; a node whose outputs are known writes their values
 * (emit_known: a table, not a body).
 *
 * Elementwise ops come from one table: each op's code in elementwise.h and
 * the forms it has. Where no operand broadcasts and every tile is a run of
 * consecutive elements, they walk flat indices instead of coordinates. The
 * C target computes float32 tensors in float, as onnxruntime does.
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
	if (mkc_dim_is_const(d))
		snprintf(buf, n, "%s", ilit(c, d.c));
	else
		snprintf(buf, n, "(%s + %s * m->sym[%d])", ilit(c, d.c), ilit(k, d.k), d.sym);
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
 * Input k as the float32 and bf16 arguments of a body that takes either
 * (backends/c/rows.h): "x2, NULL" or "NULL, x2"; "NULL, NULL" when k < 0
 * (an input the node leaves out).
 */
static const char *
vec_args(char *buf, const mkc_node *n, int k)
{
	if (k < 0)
		snprintf(buf, 32, "NULL, NULL");
	else
		snprintf(buf, 32, is_bf16(n->in[k]) ? "NULL, x%d" : "x%d, NULL", k);
	return buf;
}

/* Declares pointer, dims and strides of one tensor. */
static void
decl(mkc_emitter *e, const char *var, const mkc_tensor *t, bool out)
{
	FILE *f = e->f;
	const char *ct = is_bf16(t) ? "uint16_t" : mkc_ctype(e, t->dtype);
	e->slot[e->nslot] = e->index[t->id];
	fprintf(f, "\t%s%s *MKC_RESTRICT %s MKC_UNUSED = (%s%s *)m->buf[bi[%d]];\n", out ? "" : "const ", ct, var,
		out ? "" : "const ", ct, e->nslot++);
	fprintf(f, "\tconst int64_t %s_d[%d] MKC_UNUSED = {", var, t->rank + 1);
	for (int i = 0; i < t->rank; i++) {
		char b[96];
		fprintf(f, "%s, ", mkc_dimx(e->p->g, t->shape[i], b, sizeof b));
	}
	fprintf(f, "0};\n\tint64_t %s_s[%d] MKC_UNUSED;\n", var, t->rank + 1);
	if (t->cap) {
		/* a KV cache: laid out for cap positions, of which dims[cap_axis] are in use */
		fprintf(f, "\tint64_t %s_l[%d];\n\tmemcpy(%s_l, %s_d, sizeof %s_l);\n\t%s_l[%d] = %lld;\n"
			"\tmkc_rt_strides(%s_l, %d, %s_s);\n", var, t->rank + 1, var, var, var, var,
			t->cap_axis, (long long)t->cap, var, t->rank, var);
	} else {
		fprintf(f, "\tmkc_rt_strides(%s_d, %d, %s_s);\n", var, t->rank, var);
	}
}

static void
decl_all(mkc_emitter *e, const mkc_node *n)
{
	char v[16];
	for (int i = 0; i < n->nin; i++)
		if (n->in[i]) {
			snprintf(v, sizeof v, "x%d", i);
			decl(e, v, n->in[i], false);
		}
	for (int i = 0; i < n->nout; i++)
		if (n->out[i]) {
			snprintf(v, sizeof v, i ? "y%d" : "y", i);
			decl(e, v, n->out[i], true);
		}
}

/*
 * The data ops move elements as bits (backends/c/data.h): a body takes an
 * element's bytes as stored (a bf16 weight's 2).
 */
static int
esize(const mkc_tensor *t)
{
	return is_bf16(t) ? 2 : (int)mkc_dtype_size(t->dtype);
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

/*
 * "\tTYPE name[n] = {P0S, P1S, ...};\n" (P the prefix, S the suffix): the
 * inputs' pointers ("x", ""), dims ("x", "_d") or strides ("x", "_s"), or
 * broadcast strides ("b", ""), for a body that takes the n inputs as arrays.
 */
static void
emit_inputs(FILE *f, const char *type, const char *name, const char *prefix, const char *suffix,
	    int n)
{
	fprintf(f, "\t%s %s[%d] = {", type, name, n);
	for (int k = 0; k < n; k++)
		fprintf(f, "%s%s%d%s", k ? ", " : "", prefix, k, suffix);
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
	bool variadic = n->op == MKC_OP_MAX || n->op == MKC_OP_MIN;
	if (n->nin > 3 && !variadic)
		return unsupported(e, n, "more than three operands");
	int nin = n->op == MKC_OP_CASTLIKE || n->op == MKC_OP_EXPAND ? 1 : n->nin;
	const char *code = ew_table[row].code;
	if (y->dtype == MKC_DT_BOOL && (n->op == MKC_OP_CAST || n->op == MKC_OP_CASTLIKE))
		code = "MKC_EW_NONZERO";
	else if (variadic && nin == 1)
		code = "MKC_EW_IDENTITY";
	const char *ty = tcode(e, y->dtype);
	for (int i = 0; i < nin && ty; i++)
		if (!tcode(e, n->in[i]->dtype))
			ty = NULL;
	if (!ty)
		return unsupported(e, n, "an operand or result of a type it cannot read");
	bool flat = flat_walk(e, n, nin);
	decl_all(e, n);
	emit_inputs(f, "const void *const", "in", "x", "", nin);
	fprintf(f, "\tconst int in_t[%d] = {", nin);
	for (int i = 0; i < nin; i++)
		fprintf(f, "%s%s", i ? ", " : "", tcode(e, n->in[i]->dtype));
	fputs("};\n", f);
	if (!flat) {
		for (int i = 0; i < nin; i++)
			fprintf(f, "\tint64_t b%d[%d];\n\tmkc_rt_bmap(x%d_d, x%d_s, %d, %d, b%d);\n", i,
				y->rank + 1, i, i, n->in[i]->rank, y->rank, i);
		emit_inputs(f, "const int64_t *const", "in_b", "b", "", nin);
	}
	fprintf(f, "\tmkc_elementwise(%s, %d, y, %s, y_s, %d, %d, in, in_t, %s, lo, hi);\n", code, isf,
		ty, y->rank, nin, flat ? "NULL" : "in_b");
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
	fprintf(e->f, "\tmkc_copy(y, y_s, x0, %d, %d, %d, lo, hi);\n", y->rank, esize(y),
		flat_walk(e, n, 0));
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
	fprintf(e->f, "\tmkc_transpose(y, y_s, x0, x0_s, perm, %d, %d, lo, hi);\n", r,
		esize(n->out[0]));
	return 0;
}

static int
emit_concat(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	decl_all(e, n);
	emit_inputs(f, "const void *const", "in", "x", "", n->nin);
	emit_inputs(f, "const int64_t *const", "in_d", "x", "_d", n->nin);
	emit_inputs(f, "const int64_t *const", "in_s", "x", "_s", n->nin);
	fprintf(f, "\tmkc_concat(y, y_s, %d, in, in_d, in_s, %d, %d, %d, lo, hi);\n", n->nin,
		n->kern->axis, n->out[0]->rank, esize(n->out[0]));
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
	fprintf(f, "\tmkc_slice(y, y_s, x0, x0_d, x0_s, start, step, %d, %d, lo, hi);\n", r,
		esize(n->out[0]));
	return 0;
}

/* Gather: the body finds an index out of range; the tile function names the node. */
static int
emit_gather(mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *x = n->in[0], *ind = n->in[1];
	decl_all(e, n);
	fprintf(e->f, "\tint64_t bad;\n"
		"\tif (mkc_gather(y, y_s, %d, x0, x0_d, x0_s, %d, %d, %d, x1, x1_s, %d, %d, %d, lo, hi, "
		"&bad))\n\t\tMKC_FAIL(m, \"node '%s' (Gather): index %%lld is out of range\", "
		"(long long)bad);\n", n->out[0]->rank, x->rank, esize(x), is_bf16(x), ind->rank,
		esize(ind), n->kern->axis, mkc_cstr(e->p->g->ctx->arena, n->name, true));
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
 * MatMul by a weight [K, N] on a GPU: the lanes split the K axis
 * (backends/c/matmul.h's mkc_matmul_split_k), their partial sums meeting
 * in shared memory.
 */
static void
emit_matmul_split_k(mkc_emitter *e, const mkc_node *n, int r)
{
	char ba[32];
	fprintf(e->f, "\t__shared__ float part[MKC_THREADS];\n"
		"\tmkc_matmul_split_k(y, y_s, %d, lo, hi, x0, as, ak, %s, bs, bk, K, part);\n", r,
		vec_args(ba, n, 1));
}

/*
 * A product by a weight stored [N, K] (Gemm with transB, as Hugging Face
 * keeps Linear weights; MatMul with canon's mkc_trans_b) on a GPU: one warp
 * per output element walks the two contiguous rows, the activations' from
 * pa and the weight's row idx[r - 1], with 16-byte loads (8 bf16 or 4
 * float32 weights a lane), and a shuffle reduction sums the lanes; lane 0
 * stores out (an expression of acc). K is a constant here, so the walk
 * unrolls and a lane has several loads in flight (one block per SM holds
 * few warps to hide latency).
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
	/* MKC_GEMV_ROWS dot products a tile; NormGlu's two an output */
	const int64_t most = n->op == MKC_OP_NORM_GLU ? MKC_GEMV_ROWS / 2 : MKC_GEMV_ROWS;
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

/*
 * The call of the matvec body (backends/cuda/matvec.cuh) on the tile's rows
 * of weight w (operand xwi), K long, by the activations x (an expression;
 * with at0 it reads idx, set first to the tile's first output), normalised
 * first when norm is 1 or 2 (scale, eps: C expressions), then the epilogue
 * out (of acc and idx) into y. With a second weight (operand x(wi + 1),
 * NormGlu) the tile's rows of it too, acc2 in out. MatMul, Gemm, NormGemm
 * and NormGlu share it.
 */
static void
emit_gemv(mkc_emitter *e, int r, int64_t k, const mkc_tensor *w, int wi, bool two, const char *x,
	  bool at0, int norm, const char *scale, const char *eps, const char *out)
{
	FILE *f = e->f;
	char w2[64] = "";
	if (two)
		snprintf(w2, sizeof w2, ", x%d + lo[%d] * x%d_s[0]", wi + 1, r - 1, wi + 1);
	fprintf(f, "\t__shared__ float dots[MKC_GEMV_ROWS];\n"
		"\tint64_t ext[%d], idx[%d];\n\tconst int64_t cnt = mkc_rt_extents(lo, hi, %d, ext);\n",
		r + 1, r + 1, r);
	if (at0)
		fprintf(f, "\tmkc_rt_unflat(0, lo, ext, %d, idx);\n", r);
	fprintf(f, "\tmkc_gemv<%lld, %s, %d>(%s, x%d + lo[%d] * x%d_s[0], x%d_s[0], cnt, dots, %s, "
		"%s%s);\n\tfor (int64_t f = MKC_LANE; f < cnt; f += MKC_NLANES) {\n"
		"\t\tmkc_rt_unflat(f, lo, ext, %d, idx);\n\t\tconst float acc = dots[f];\n%s"
		"\t\ty[mkc_rt_dot(idx, y_s, %d)] = %s;\n\t}\n",
		(long long)k, is_bf16(w) ? "true" : "false", norm, x, wi, r - 1, wi, wi, scale, eps,
		w2, r, two ? "\t\tconst float acc2 = dots[cnt + f];\n" : "", r, out);
}

/*
 * as: the declaration of the activations' strides as[] that the body takes
 * (MatMul has them already: ""); ep: the epilogue's initialiser.
 */
static void
emit_dot_rows(mkc_emitter *e, const mkc_node *n, int r, const char *pa, const char *out,
	      const char *as, const char *ep)
{
	FILE *f = e->f;
	char ba[32];
	const mkc_tensor *a = n->in[0];
	if (gemv_fits(e, n, r, 1)) {
		emit_gemv(e, r, a->shape[a->rank - 1].c, n->in[1], 1, false, pa, true, 0, "NULL", "0.0f",
			  out);
		return;
	}
	fprintf(f, "%s\tconst mkc_mm_epi ep = %s;\n"
		"\tmkc_dot_rows(y, y_s, %d, lo, hi, x0, as, %s, x1_s[0], %lldLL, %d, &ep);\n", as, ep,
		r, vec_args(ba, n, 1), (long long)a->shape[a->rank - 1].c, e->t->warp);
}

static int
emit_matmul(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	const mkc_tensor *a = n->in[0], *b = n->in[1];
	int r = n->out[0]->rank;
	if (a->rank < 2 || b->rank < 2)
		return unsupported(e, n, "MatMul of a vector");
	/* canon's mkc_trans_b: b is stored [N, K] and read by rows */
	bool tb = n->kern->trans_b;
	decl_all(e, n);
	fprintf(f, "\tint64_t as[%d], bs[%d];\n"
		"\tmkc_rt_bmap(x0_d, x0_s, %d, %d, as);\n\tmkc_rt_bmap(x1_d, x1_s, %d, %d, bs);\n"
		"\tas[%d] = x0_s[%d]; as[%d] = 0;\n\tbs[%d] = 0; bs[%d] = x1_s[%d];\n"
		"\tconst int64_t K = x0_d[%d], ak = x0_s[%d], bk = x1_s[%d];\n",
		r + 1, r + 1, a->rank - 2, r - 2, b->rank - 2, r - 2, r - 2, a->rank - 2, r - 1,
		r - 2, r - 1, tb ? b->rank - 2 : b->rank - 1, a->rank - 1, a->rank - 1,
		tb ? b->rank - 1 : b->rank - 2);
	if (tb && rows_fit(e, b, a->shape[a->rank - 1])) {
		char pa[64];
		snprintf(pa, sizeof pa, "x0 + mkc_rt_dot(idx, as, %d)", r);
		fputs("\t(void)K; (void)ak; (void)bk;\n", f);
		emit_dot_rows(e, n, r, pa, "acc", "", "{0, 1.0f, 0.0f, NULL, NULL}");
		return 0;
	}
	if (e->t->warp && b->kind == MKC_TK_WEIGHT && b->rank == 2) {
		emit_matmul_split_k(e, n, r);
		return 0;
	}
	char ba[32];
	fprintf(f, "\tconst mkc_mm_epi ep = {0, 1.0f, 0.0f, NULL, NULL};\n"
		"\tmkc_matmul(y, y_s, %d, lo, hi, x0, as, ak, %s, bs, bk, K, &ep);\n", r,
		vec_args(ba, n, 1));
	return 0;
}

/* "{1, alpha, beta, xC, cs}": Gemm's epilogue (mkc_mm_epi), with C input c or none (-1). */
static const char *
gemm_epi(char *buf, const mkc_kernel *k, int c)
{
	char fa[48], fb[48];
	if (c >= 0)
		snprintf(buf, 160, "{1, %s, %s, x%d, cs}", flit(fa, k->alpha), flit(fb, k->beta), c);
	else
		snprintf(buf, 160, "{1, %s, %s, NULL, NULL}", flit(fa, k->alpha), flit(fb, k->beta));
	return buf;
}

static int
emit_gemm(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	bool ta = n->kern->trans_a, tb = n->kern->trans_b;
	float alpha = n->kern->alpha, beta = n->kern->beta;
	bool c = n->nin > 2 && n->in[2];
	char fa[48], ep[160], ba[32];
	decl_all(e, n);
	gemm_epi(ep, n->kern, c ? 2 : -1);
	if (!ta && tb && n->in[0]->rank == 2 && rows_fit(e, n->in[1], n->in[0]->shape[1])) {
		char out[160], fb[48];
		if (c)
			fprintf(f, "\tint64_t cs[3];\n\tmkc_rt_bmap(x2_d, x2_s, %d, 2, cs);\n",
				n->in[2]->rank);
		snprintf(out, sizeof out, "%s * acc%s%s%s", flit(fa, alpha), c ? " + " : "",
			 c ? flit(fb, beta) : "", c ? " * x2[mkc_rt_dot(idx, cs, 2)]" : "");
		emit_dot_rows(e, n, 2, "x0 + idx[0] * x0_s[0]", out,
			      "\tconst int64_t as[3] = {x0_s[0], 0, 0};\n", ep);
		return 0;
	}
	fprintf(f, "\tconst int64_t as[3] = {x0_s[%d], 0, 0}, bs[3] = {0, x1_s[%d], 0};\n"
		"\tconst int64_t K = x0_d[%d], ak = x0_s[%d], bk = x1_s[%d];\n",
		ta, !tb, !ta, !ta, tb);
	if (c)
		fprintf(f, "\tint64_t cs[3];\n\tmkc_rt_bmap(x2_d, x2_s, %d, 2, cs);\n", n->in[2]->rank);
	fprintf(f, "\tconst mkc_mm_epi ep = %s;\n"
		"\tmkc_matmul(y, y_s, 2, lo, hi, x0, as, ak, %s, bs, bk, K, &ep);\n", ep,
		vec_args(ba, n, 1));
	return 0;
}

/*
 * NormGemm (passes/fuse_norm.c): Gemm(RMSNormalization(x, scale), W, C) of
 * one row x of K. On a GPU the matvec body normalises the row it holds in
 * registers; otherwise the row's sum of squares first, then each product
 * scales x on the fly, with the same float operations in the same order as
 * the norm's and the Gemm's own bodies (the C target's results are those of
 * the two nodes, bit for bit). NormGlu (passes/fuse_glu.c) is two such
 * products, by Wg and Wu, and SiluMul's expression of them.
 */
static int
emit_norm_gemm(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	float alpha = n->kern->alpha, beta = n->kern->beta;
	float eps = n->kern->eps;
	bool glu = n->op == MKC_OP_NORM_GLU, c = !glu && n->nin > 3 && n->in[3];
	int64_t k = n->in[0]->shape[1].c;
	char fa[48], fb[48], fe[48], out[200];
	decl_all(e, n);
	if (c)
		fprintf(f, "\tint64_t cs[3];\n\tmkc_rt_bmap(x3_d, x3_s, %d, 2, cs);\n", n->in[3]->rank);
	if (glu)   /* SiluMul's $0 * (1.0f / (1.0f + expf(-$0))) * $1 of the two products */
		snprintf(out, sizeof out, "(%s * acc) * (1.0f / (1.0f + expf(-(%s * acc)))) * (%s * acc2)",
			 flit(fa, alpha), fa, fa);
	else
		snprintf(out, sizeof out, "%s * acc%s%s%s", flit(fa, alpha), c ? " + " : "",
			 c ? flit(fb, beta) : "", c ? " * x3[mkc_rt_dot(idx, cs, 2)]" : "");
	if (gemv_fits(e, n, 2, 2)) {
		emit_gemv(e, 2, k, n->in[2], 2, glu, "x0", false, is_bf16(n->in[1]) ? 2 : 1, "x1",
			  flit(fe, eps), out);
		return 0;
	}
	char sa[32], wa[32], ua[32], ep[160];
	fprintf(f, "\tconst mkc_mm_epi ep = %s;\n"
		"\tmkc_norm_gemm(y, y_s, lo, hi, x0, %lldLL, %s, %s, %s, x2_s[0], %s, %s, &ep);\n",
		gemm_epi(ep, n->kern, c ? 3 : -1), (long long)k, flit(fe, eps), vec_args(sa, n, 1),
		vec_args(wa, n, 2), vec_args(ua, n, glu ? 3 : -1), glu ? "x3_s[0]" : "0");
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
 * HeadProj (passes/fuse_qkv.c): the tile's units of head lo[1], whose
 * first rows are lo[3] .. hi[3] of the head (passes/tile.c's
 * tile_head_proj), into y at position lo[2] (a cache's new one, or 0).
 * On a GPU the matvec body (backends/cuda/matvec.cuh) computes
 * the rows, a pair's second rows as NormGlu's second weight (halves: D/2
 * rows on; interleaved: every other row, from the next), then a lane a
 * unit rotates and stores (backends/c/matmul.h's mkc_head_put); otherwise
 * backends/c/matmul.h's mkc_head_proj computes the tile.
 */
static int
emit_head_proj(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	const mkc_tensor *y = n->out[0], *w = n->in[2];
	const mkc_kernel *k = n->kern;
	const int64_t kk = n->in[0]->shape[1].c, d = y->shape[3].c;
	const int pairs = !k->rotary ? 0 : k->interleaved ? 2 : 1;
	const long long step = pairs == 2 ? 2 : 1, off = pairs == 1 ? d / 2 : 1;
	const char *ys = is_bf16(y) ? "NULL, y" : "y, NULL";
	char fe[48], fa[48], sa[32], wa[32], cs[80] = "NULL, NULL";
	decl_all(e, n);
	fprintf(f, "\tconst int64_t d0 = lo[3], n = (hi[3] - lo[3]) / %lldLL, h0 = lo[1] * %lldLL + d0;\n"
		"\tconst int64_t o0 = lo[1] * y_s[1] + lo[2] * y_s[2] + d0;\n", step, (long long)d);
	flit(fe, k->eps);
	flit(fa, k->alpha);
	if (e->t->warp && kk % (is_bf16(w) ? 8 : 4) == 0 &&
	    head_proj_units(e, n) * (pairs ? 2 : 1) <= MKC_GEMV_ROWS) {
		char w2[64] = "", pb[64] = "0.0f";
		if (pairs) {
			snprintf(w2, sizeof w2, ", x2 + (h0 + %lldLL) * x2_s[0]", off);
			snprintf(pb, sizeof pb, "%s * dots[n + f]", fa);
			snprintf(cs, sizeof cs, "x3 + d0 / %lldLL + f, x4 + d0 / %lldLL + f", step, step);
		}
		fprintf(f, "\t__shared__ float dots[MKC_GEMV_ROWS];\n"
			"\tmkc_gemv<%lld, %s, %d>(x0, x2 + h0 * x2_s[0], %lldLL * x2_s[0], n, dots, "
			"x1, %s%s);\n\tfor (int64_t f = MKC_LANE; f < n; f += MKC_NLANES)\n"
			"\t\tmkc_head_put(%s, o0 + %lldLL * f, o0 + %lldLL * f + %lldLL, %s * dots[f], "
			"%s, %s);\n",
			(long long)kk, is_bf16(w) ? "true" : "false", is_bf16(n->in[1]) ? 2 : 1, step, fe,
			w2, ys, step, step, off, fa, pb, cs);
		return 0;
	}
	if (pairs)
		snprintf(cs, sizeof cs, "x3 + d0 / %lldLL, x4 + d0 / %lldLL", step, step);
	fprintf(f, "\tmkc_head_proj(%s, o0, n, %d, %lldLL, x0, %lldLL, %s, %s, %s, %s, x2_s[0], h0, "
		"%s);\n", ys, pairs, (long long)d, (long long)kk, fe, fa, vec_args(sa, n, 1),
		vec_args(wa, n, 2), cs);
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
	fprintf(e->f, "\tmkc_softmax(y, x0, y_d, y_s, %d, %d, %d, lo, hi);\n", n->out[0]->rank,
		n->kern->axis, n->kern->one_axis);
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
	FILE *f = e->f;
	bool layer = n->op == MKC_OP_LAYER_NORM;
	if (n->op == MKC_OP_RMS_NORM && n->nout > 1)
		return unsupported(e, n, "RMSNormalization with more than one output");
	char fe[48], sa[32], ba[32];
	bool bias = layer && n->nin > 2 && n->in[2];
	bool y1 = n->nout > 1 && n->out[1], y2 = n->nout > 2 && n->out[2];
	decl_all(e, n);
	/* scale and bias are indexed by the element's place in the row: they
	 * hold the whole row, or one value (infer checked they broadcast) */
	fprintf(f, "\tmkc_norm(y, x0, y_d, y_s, %d, %d, lo, hi, %s, %s, mkc_rt_count(x1_d, %d), %s, "
		"%d, %s, %s);\n",
		n->out[0]->rank, n->kern->axis, vec_args(sa, n, 1), vec_args(ba, n, bias ? 2 : -1),
		n->in[1]->rank, flit(fe, n->kern->eps), layer,
		y1 ? "y1, y1_s" : "NULL, NULL", y2 ? "y2, y2_s" : "NULL, NULL");
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
	char fe[48], ga[32], ba[32];
	bool bias = n->nin > 3 && n->in[3], keep = n->nout > 3 && n->out[3];
	bool y1 = n->nout > 1 && n->out[1], y2 = n->nout > 2 && n->out[2];
	decl_all(e, n);
	fprintf(e->f, "\tmkc_skip_norm(y, x0, x1, y_d, y_s, %d, %d, lo, hi, %s, %s, %s, %s, %s, %s);\n",
		n->out[0]->rank, n->kern->axis, vec_args(ga, n, 2), vec_args(ba, n, bias ? 3 : -1),
		flit(fe, n->kern->eps), keep ? "y3" : "NULL", y1 ? "y1, y1_s" : "NULL, NULL",
		y2 ? "y2, y2_s" : "NULL, NULL");
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
	FILE *f = e->f;
	const mkc_tensor *x = n->in[0];
	bool inter = n->kern->interleaved;
	int64_t heads = n->kern->heads, rot = n->kern->rot_dim;
	bool ms = n->op == MKC_OP_MS_ROTARY;
	bool pos = ms || (n->nin > 3 && n->in[3]);
	int ic = ms ? 2 : 1, is = ms ? 3 : 2, ip = ms ? 1 : 3;   /* cos, sin, positions */
	if (x->rank == 3 && heads <= 0)
		return unsupported(e, n, "3-D input without num_heads");
	if (x->rank != 3 && x->rank != 4)
		return unsupported(e, n, "an input that is not 3-D or 4-D");
	if (pos && n->in[ip]->dtype != MKC_DT_INT64)
		return unsupported(e, n, "position_ids that are not int64");
	decl_all(e, n);
	if (x->rank == 4)
		fputs("\tconst int64_t B = x0_d[0], H = x0_d[1], S = x0_d[2], D = x0_d[3];\n"
		      "\tconst int64_t sb = x0_s[0], sh = x0_s[1], ss = x0_s[2];\n", f);
	else
		fprintf(f, "\tconst int64_t B = x0_d[0], H = %lld, S = x0_d[1], D = x0_d[2] / H;\n"
			"\tconst int64_t sb = x0_s[0], sh = D, ss = x0_s[1];\n", (long long)heads);
	fprintf(f, "\tmkc_rotary(y, x0, B, H, S, D, sb, sh, ss, x%d, x%d, x%d_s[0], ", ic, is, ic);
	if (pos && n->in[ip]->rank == 2)
		fprintf(f, "0, x%d, x%d_s[0], x%d_s[1], 0, ", ip, ip, ip);
	else if (pos)
		fprintf(f, "0, x%d, 0, 0, 1, ", ip);
	else
		fputs("x1_s[1], NULL, 0, 0, 0, ", f);
	fprintf(f, "%lldLL ? %lldLL : D, %d);\n\t(void)lo;\n\t(void)hi;\n", (long long)rot,
		(long long)rot, inter);
	return 0;
}

/*
 * An attention node's scale: the model's, or 1 / sqrt(head size) computed
 * at run time from dim, the float operations lower.c's value came from.
 */
static void
emit_scale(FILE *f, const mkc_kernel *k, const char *dim)
{
	char b[48];
	if (k->scale_given)
		fprintf(f, "\tconst float scale = %s;\n", flit(b, k->scale));
	else
		fprintf(f, "\tconst float scale = 1.0f / sqrtf((float)%s);\n", dim);
}

/*
 * Attention (opset 23), 4-D: backends/c/attention.h's mkc_attention, lanes
 * sharing the output elements, each walking the keys once with an online
 * softmax; scores scaled, soft-capped, masked (a bool mask keeps where
 * true, a float mask adds); keys and values the past ones followed by the
 * new ones, which the present outputs are. A tile computes the query heads
 * lo[1]..hi[1] (tile.c cuts Attention by heads when it has no present
 * outputs).
 */
/*
 * The head size for which a GPU target has a decode attention body
 * (backends/cuda/attention.cuh: positions spread over the warps), or 0 when
 * the node needs the general one: a mask, a soft cap, past inputs, present
 * outputs, or a head size that is not a constant multiple of the warp up to
 * MKC_ATTN_MAX_D
 * shared by query, key and value.
 */
static int64_t
attention_fast_dim(const mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *q = n->in[0], *k = n->in[1], *v = n->in[2];
	if (!e->t->warp || n->nin > 3 || n->kern->softcap != 0)
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

static int
emit_attention(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	const mkc_tensor *q = n->in[0];
	if (q->rank != 4)
		return unsupported(e, n, "3-D query, key and value");
	if (n->kern->causal)
		return unsupported(e, n, "is_causal = 1");
	if (n->nout > 3 && n->out[3])
		return unsupported(e, n, "the QK^T output");
	bool mask = n->nin > 3 && n->in[3], past = n->nin > 4 && n->in[4];
	float softcap = n->kern->softcap;
	char fa[48];
	decl_all(e, n);
	emit_scale(f, n->kern, "x0_d[3]");
	int64_t d = attention_fast_dim(e, n);
	if (d > 0) {
		fprintf(f, "\tmkc_attn_rows<%lld>(x0, x0_s, x1, x1_s, x2, x2_s, y, y_s, x0_d[0], x0_d[2], "
			"x1_d[2], x0_d[1] / x1_d[1], lo[1], hi[1], scale);\n", (long long)d);
		return 0;
	}
	char mask_args[64] = "NULL, NULL, NULL";
	if (mask) {
		fprintf(f, "\tint64_t ms[5];\n\tmkc_rt_bmap(x3_d, x3_s, %d, 4, ms);\n", n->in[3]->rank);
		snprintf(mask_args, sizeof mask_args, n->in[3]->dtype == MKC_DT_BOOL ?
			 "NULL, x3, ms" : "x3, NULL, ms");
	}
	fprintf(f, "\tmkc_attention(y, y_s, x0, x0_s, x1, x1_s, x2, x2_s, %s, %s, x0_d[0], "
		"x0_d[1], x0_d[2], x0_d[3], x1_d[1], %s, x1_d[2], x2_d[3], lo[1], hi[1], scale, %s",
		past ? "x4, x4_s, x5, x5_s" : "NULL, NULL, NULL, NULL", mask_args,
		past ? "x4_d[2]" : "0", flit(fa, softcap > 0 ? softcap : 0));
	for (int o = 1; o <= 2; o++) {
		if (n->nout > o && n->out[o])
			fprintf(f, ", y%d, y%d_s, y%d_d[3]", o, o, o);
		else
			fputs(", NULL, NULL, 0", f);
	}
	fputs(");\n", f);
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
 * (backends/cuda/attention.cuh's mkc_attn_merge on a GPU with a body for
 * the head size when there are more than MKC_MERGE_WIDE_CHUNKS, else backends/c/
 * attention.h's).
 */
static int
emit_attn_part(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	int64_t c = n->kern->chunks, d = n->in[0]->shape[3].c;
	decl_all(e, n);
	emit_scale(f, n->kern, "x0_d[3]");
	fprintf(f, "\tconst int64_t B = x0_d[0], Sq = x0_d[2], D = x0_d[3], L = x1_d[2];\n"
		"\tconst int64_t C = %lld, G = x0_d[1] / x1_d[1];\n", (long long)c);
	int64_t grp = n->in[0]->shape[1].c / n->in[1]->shape[1].c;
	if (e->t->warp && d % e->t->warp == 0 && d <= MKC_ATTN_MAX_D && grp <= MKC_ATTN_MAX_GROUP &&
	    is_bf16(n->in[1]) == is_bf16(n->in[2])) {
		/* the element type of the caches (float or uint16_t) from x1 and x2 */
		fprintf(f, "\t(void)D;\n\t(void)G;\n\tmkc_attn_part<%lld, %lld>(x0, x0_s, x1, x1_s, x2, x2_s, y, y_s, "
			"B, Sq, L, C, lo[1], hi[1], scale);\n", (long long)d, (long long)grp);
		return 0;
	}
	char ka[32], va[32];
	fprintf(f, "\tmkc_attn_part_c(x0, x0_s, %s, x1_s, %s, x2_s, y, y_s, B, Sq, D, L, C, G, lo[1], "
		"hi[1], scale);\n", vec_args(ka, n, 1), vec_args(va, n, 2));
	return 0;
}

static int
emit_attn_merge(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	int64_t c = n->kern->chunks, d = n->out[0]->shape[3].c;
	decl_all(e, n);
	fprintf(f, "\tconst int64_t C = %lld, G = y_d[1] / (x0_d[1] / C);\n", (long long)c);
	/* the one-trip body where the chunks are many (runtime/limits.h says why) */
	if (e->t->warp && d % e->t->warp == 0 && d <= MKC_THREADS && c > MKC_MERGE_WIDE_CHUNKS &&
	    c <= MKC_ATTN_MAX_CHUNKS) {
		fprintf(f, "\tmkc_attn_merge<%lld>(x0, x0_s, y, y_s, y_d[0], y_d[2], C, G, lo[1], "
			"hi[1]);\n", (long long)d);
		return 0;
	}
	fputs("\tmkc_attn_merge_c(x0, x0_s, y, y_s, y_d[0], y_d[2], y_d[3], C, G, lo[1], hi[1]);\n", f);
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
		fprintf(e->f, "\tmkc_cache_append(%s, x0, x0_d[0], x0_d[1], x0_d[2], x0_d[3], %lldLL, "
			"lo[2], ", is_bf16(y) ? "NULL, y" : "y, NULL", (long long)y->cap);
		if (k->rotary)
			fprintf(e->f, "x1, x2, x1_s[0], x1_s[1], %lldLL ? %lldLL : x0_d[3], %d);\n",
				(long long)k->rot_dim, (long long)k->rot_dim, k->interleaved);
		else
			fputs("NULL, NULL, 0, 0, 0, 0);\n", e->f);
		fputs("\t(void)hi;\n", e->f);
		return 0;
	}
	if (k->rotary)
		return unsupported(e, n, "a rotated append into a cache not [B, H, positions, D]");
	if (is_bf16(y))
		return unsupported(e, n, "a bf16 cache not [B, H, positions, D]");
	/* element idx of the box is x0's idx - lo[cap_axis] along the cache axis */
	fprintf(e->f, "\tmkc_strided(y, y_s, x0, -lo[%d] * x0_s[%d], x0_s, %d, %d, lo, hi);\n",
		y->cap_axis, y->cap_axis, y->rank, esize(y));
	return 0;
}

/*
 * GroupQueryAttention (com.microsoft), one whole tile: backends/c/gqa.h's
 * body, the present keys and values, then, once every lane's writes are
 * visible, the attention. The body finds a position outside the cos/sin
 * caches; the tile function names the node.
 */
static int
emit_gqa(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	const mkc_tensor *q = n->in[0];
	if (n->nout < 3 || !n->out[1] || !n->out[2])
		return unsupported(e, n, "GroupQueryAttention without both present outputs");
	const mkc_kernel *k = n->kern;
	int64_t hq = k->heads, hk = k->kv_heads;
	int64_t dh = q->shape[2].c / hq;
	bool rot = k->rotary, past = n->in[3] != NULL;
	char fb[48];
	decl_all(e, n);
	char sc[64];
	if (k->scale_given)
		flit(sc, k->scale);
	else
		snprintf(sc, sizeof sc, "1.0f / sqrtf((float)%lldLL)", (long long)dh);
	/* backends/c/gqa.h's mkc_gqa_args, in its order */
	fprintf(f, "\tconst mkc_gqa_args a = {y, y_s, y1, y1_s, y2, y2_s, x0, x0_s, x1, x1_s, x2, x2_s,\n"
		"\t\t%s, x5, %s,\n\t\tx0_d[0], x0_d[1], %lldLL, %lldLL, %lldLL, %s, %s, %d, %s, %s};\n",
		past ? "x3, x3_s, x4, x4_s" : "NULL, NULL, NULL, NULL",
		rot ? "x7, x7_s[0], x8, x8_s[0], x7_d[0]" : "NULL, 0, NULL, 0, 0", (long long)hq,
		(long long)hk, (long long)dh, past ? "x3_d[2]" : "0", rot ? "2 * x7_d[1]" : "0",
		k->interleaved, sc, flit(fb, k->softcap > 0 ? k->softcap : 0));
	fprintf(f, "\tfloat qr[%lld];\n\tint64_t bad;\n"
		"\tif (mkc_gqa(&a, qr, &bad))\n\t\tMKC_FAIL(m, \"node '%s' (GroupQueryAttention): "
		"position %%lld is outside the cos/sin caches\", (long long)bad);\n"
		"\t(void)lo; (void)hi;\n", (long long)dh,
		mkc_cstr(e->p->g->ctx->arena, n->name, true));
	return 0;
}

/* ReduceMean, ReduceSum, ReduceMax: one whole tile (backends/c/reduce.h). */
static int
emit_reduce(mkc_emitter *e, const mkc_node *n)
{
	const mkc_tensor *x = n->in[0];
	if (!all_float(n))
		return unsupported(e, n, "a reduction of a non-float tensor");
	int64_t red[MKC_MAX_RANK] = {0};
	for (int i = 0; i < n->kern->naxes; i++)
		red[n->kern->axes[i]] = 1;
	decl_all(e, n);
	emit_ints(e->f, "int", "red", red, x->rank);
	fprintf(e->f, "\tmkc_reduce(%s, y, x0, x0_d, x0_s, %d, red);\n\t(void)lo; (void)hi;\n",
		n->op == MKC_OP_REDUCE_MAX ? "MKC_REDUCE_MAX"
		: n->op == MKC_OP_REDUCE_MEAN ? "MKC_REDUCE_MEAN" : "MKC_REDUCE_SUM", x->rank);
	return 0;
}

static int
emit_range(mkc_emitter *e, const mkc_node *n)
{
	const char *t = tcode(e, n->out[0]->dtype);
	if (!t)
		return unsupported(e, n, "a Range of this type");
	decl_all(e, n);
	fprintf(e->f, "\tmkc_range(y, %s, x0, x2, lo[0], hi[0]);\n", t);
	return 0;
}

/* Split: one whole tile, each output present in turn (an absent one takes no room). */
static int
emit_split(mkc_emitter *e, const mkc_node *n)
{
	FILE *f = e->f;
	static const char *const what[3][3] = {{"void *const", "out", ""},
					      {"const int64_t *const", "out_d", "_d"},
					      {"const int64_t *const", "out_s", "_s"}};
	int nout = 0;
	for (int o = 0; o < n->nout; o++)
		nout += n->out[o] != NULL;
	decl_all(e, n);
	for (int w = 0; w < 3; w++) {
		fprintf(f, "\t%s %s[%d] = {", what[w][0], what[w][1], nout);
		for (int o = 0, k = 0; o < n->nout; o++) {
			if (!n->out[o])
				continue;
			char v[16];
			snprintf(v, sizeof v, o ? "y%d" : "y", o);
			fprintf(f, "%s%s%s", k++ ? ", " : "", v, what[w][2]);
		}
		fputs("};\n", f);
	}
	fprintf(f, "\tmkc_split(%d, out, out_d, out_s, x0, x0_s, %d, %d, %d);\n\t(void)lo; (void)hi;\n",
		nout, n->kern->axis, n->in[0]->rank, esize(n->in[0]));
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
		if (n->in[0]->dtype != MKC_DT_FLOAT || n->in[5]->dtype != MKC_DT_INT32)
			return unsupported(e, n, "float32 query and int32 seqlens_k are what it takes");
		return emit_gqa(e, n);
	default: break;
	}
	if (!all_float(n))
		return unsupported(e, n, "float32 is the only type it takes on this target");
	switch (k->kind) {
	case MKC_KERN_MATMUL:
		return n->op == MKC_OP_MATMUL ? emit_matmul(e, n)
		       : n->op == MKC_OP_GEMM ? emit_gemm(e, n) : emit_norm_gemm(e, n);
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

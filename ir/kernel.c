/*
 * kernel.c - the op table's kernel column, and printing kernel descriptions
 * (--dump-after=lower). See kernel.h.
 */
#include "kernel.h"

const char *
mkc_kernel_kind_name(mkc_kernel_kind k)
{
	static const char *const names[] = {
		[MKC_KERN_ELEMENTWISE] = "elementwise",
		[MKC_KERN_COPY] = "copy", [MKC_KERN_TRANSPOSE] = "transpose",
		[MKC_KERN_CONCAT] = "concat", [MKC_KERN_SLICE] = "slice",
		[MKC_KERN_GATHER] = "gather", [MKC_KERN_SPLIT] = "split",
		[MKC_KERN_RANGE] = "range", [MKC_KERN_MATMUL] = "matmul",
		[MKC_KERN_ROWS] = "rows", [MKC_KERN_REDUCE] = "reduce",
		[MKC_KERN_ROTARY] = "rotary", [MKC_KERN_ATTENTION] = "attention",
		[MKC_KERN_CACHE_APPEND] = "cache_append", [MKC_KERN_HEAD_PROJ] = "head_proj",
		[MKC_KERN_CHECK] = "check",
		[MKC_KERN_OTHER] = "other",
	};
	return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

static const mkc_op_kernel op_kernels[MKC_OP_COUNT] = {
#define K(kind) {MKC_KERN_##kind, false}
#define EW(code, f, i) {MKC_KERN_ELEMENTWISE, false}
#define EW1(code, f, i) {MKC_KERN_ELEMENTWISE, true}
#define OP(e, nm, dom, i0, i1, o0, o1, inf, fld, cin, opt, kern) [MKC_OP_##e] = kern,
#include "ops.def"
#undef OP
#undef EW1
#undef EW
#undef K
	[MKC_OP_UNKNOWN] = {MKC_KERN_OTHER, false},
};

const mkc_op_kernel *
mkc_op_kernel_of(mkc_op op)
{
	MKC_ASSERT(op >= 0 && op < MKC_OP_COUNT);
	return &op_kernels[op];
}

static void
ints(FILE *f, const char *name, const int *v, int n)
{
	fprintf(f, " %s=[", name);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%d", i ? "," : "", v[i]);
	fputc(']', f);
}

static void
print_slice(FILE *f, const mkc_graph *g, const mkc_kernel *k)
{
	ints(f, "axes", k->slice_axis, k->nslice);
	fputs(" starts=[", f);
	for (int i = 0; i < k->nslice; i++) {
		char b[64];
		fprintf(f, "%s%s", i ? "," : "", mkc_dim_str(g, k->slice_start[i], b, sizeof b));
	}
	fputs("] steps=[", f);
	for (int i = 0; i < k->nslice; i++)
		fprintf(f, "%s%lld", i ? "," : "", (long long)k->slice_step[i]);
	fputc(']', f);
}

static void
print_attention(FILE *f, const mkc_node *n, const mkc_kernel *k)
{
	fprintf(f, " scale=%.9g%s softcap=%.9g causal=%d", (double)k->scale,
		k->scale_given ? "" : " (1/sqrt(head size))", (double)k->softcap, k->causal);
	if (n->op == MKC_OP_ATTN_PART || n->op == MKC_OP_ATTN_MERGE)
		fprintf(f, " chunks=%lld", (long long)k->chunks);
	if (n->op == MKC_OP_MS_GQA)
		fprintf(f, " heads=%lld kv_heads=%lld rotary=%d interleaved=%d", (long long)k->heads,
			(long long)k->kv_heads, k->rotary, k->interleaved);
}

void
mkc_kernel_print(FILE *f, const mkc_graph *g, const mkc_node *n)
{
	const mkc_kernel *k = n->kern;
	fputs(mkc_kernel_kind_name(k->kind), f);
	switch (k->kind) {
	case MKC_KERN_ELEMENTWISE:
		if (k->operands < n->nin)
			fprintf(f, " operands=%d", k->operands);
		break;
	case MKC_KERN_TRANSPOSE:
		ints(f, "perm", k->perm, n->out[0]->rank);
		break;
	case MKC_KERN_CONCAT: case MKC_KERN_GATHER: case MKC_KERN_SPLIT:
		fprintf(f, " axis=%d", k->axis);
		break;
	case MKC_KERN_SLICE:
		print_slice(f, g, k);
		break;
	case MKC_KERN_MATMUL:
		fprintf(f, " trans_a=%d trans_b=%d alpha=%.9g beta=%.9g", k->trans_a, k->trans_b,
			(double)k->alpha, (double)k->beta);
		if (mkc_kernel_norm_product(n))
			fprintf(f, " eps=%.9g", (double)k->eps);
		break;
	case MKC_KERN_ROWS:
		fprintf(f, " axis=%d%s", k->axis, k->one_axis ? " (that axis alone)" : " (axes from it on)");
		if (n->op != MKC_OP_SOFTMAX)
			fprintf(f, " eps=%.9g", (double)k->eps);
		break;
	case MKC_KERN_REDUCE:
		ints(f, "axes", k->axes, k->naxes);
		break;
	case MKC_KERN_ROTARY:
		fprintf(f, " interleaved=%d heads=%lld rot_dim=%lld", k->interleaved,
			(long long)k->heads, (long long)k->rot_dim);
		break;
	case MKC_KERN_ATTENTION:
		print_attention(f, n, k);
		break;
	case MKC_KERN_HEAD_PROJ:
		fprintf(f, " alpha=%.9g eps=%.9g", (double)k->alpha, (double)k->eps);
		if (k->rotary)
			fprintf(f, " rotary interleaved=%d", k->interleaved);
		break;
	case MKC_KERN_CACHE_APPEND:
		if (k->rotary)
			fprintf(f, " rotary interleaved=%d rot_dim=%lld", k->interleaved,
				(long long)k->rot_dim);
		break;
	default:
		break;
	}
	if (k->known)
		fputs(" (outputs known: their values are written)", f);
	else if (k->refuse)
		fprintf(f, " (refused: %s)", k->refuse);
}

/* NormGemm or NormGlu: a product of rows normalised first (passes/fuse_norm.c) */
bool
mkc_kernel_norm_product(const mkc_node *n)
{
	return n->op == MKC_OP_NORM_GEMM || n->op == MKC_OP_NORM_GLU;
}

/*
 * Whether Gemm n is the product a tensor-core tile (backends/cuda/mma.cuh)
 * can take: x [S, K] float32 by a bf16 weight [N, K] (transB), K a
 * multiple of the tile's K step (64), alpha 1 (and beta 1 with C); or Glu
 * n on those terms (its up weight is the gate's twin: passes/fuse_glu.c);
 * or NormGemm or NormGlu (passes/fuse_norm.c: x normalised first), which
 * only a few-token plan's tile takes. passes/narrow.c and
 * backends/core/emit_ops.c's mkc_emit_mma and mkc_emit_few ask alike.
 */
bool
mkc_kernel_tc_gemm(const mkc_node *n)
{
	const bool norm = mkc_kernel_norm_product(n);
	const bool glu = n->op == MKC_OP_GLU || n->op == MKC_OP_NORM_GLU;
	if ((n->op != MKC_OP_GEMM && !glu && !norm) || !n->kern || n->nout != 1 || n->nin < 2 + norm)
		return false;
	const int wi = norm ? 2 : 1;   /* the weight's input */
	if (glu && n->in[wi + 1]->storage != n->in[wi]->storage)
		return false;
	const mkc_tensor *x = n->in[0], *w = n->in[wi], *y = n->out[0];
	return !n->kern->trans_a && n->kern->trans_b && x->rank == 2 &&
	       x->dtype == MKC_DT_FLOAT && y->dtype == MKC_DT_FLOAT &&
	       mkc_dim_is_const(x->shape[1]) && x->shape[1].c % 64 == 0 &&
	       w->kind == MKC_TK_WEIGHT && w->storage == MKC_DT_BFLOAT16 && w->rank == 2 &&
	       n->kern->alpha == 1.0f &&
	       (glu || n->nin < wi + 2 || n->kern->beta == 1.0f);
}

/*
 * Whether Attention n is one that a prompt chunk's GPU bodies can take
 * (backends/core/emit_ops.c's attention_chunk_dim): q, k and v 4-D float32
 * of batch 1 (the caches float32 or bf16 alike), one head size, no mask,
 * soft cap or present outputs, causal by the past or not at all, not in
 * pages. The tensor-core one (backends/cuda/mma.cuh's mkc_attn_chunk_mma)
 * takes those of a head size of 64 or 128: passes/narrow.c asks that.
 */
bool
mkc_kernel_chunk_attention(const mkc_node *n)
{
	if (n->op != MKC_OP_ATTENTION || !n->kern || n->kern->paged || n->nin != 3 || n->nout != 1 ||
	    n->kern->softcap > 0 || (n->kern->causal != 0 && n->kern->causal != 2))
		return false;
	const mkc_tensor *q = n->in[0], *k = n->in[1], *v = n->in[2];
	return q->rank == 4 && k->rank == 4 && v->rank == 4 && q->dtype == MKC_DT_FLOAT &&
	       k->dtype == MKC_DT_FLOAT && v->dtype == MKC_DT_FLOAT && k->storage == v->storage &&
	       mkc_dim_eq(q->shape[0], mkc_dim_const(1)) && mkc_dim_is_const(q->shape[3]) &&
	       mkc_dim_eq(q->shape[3], k->shape[3]) && mkc_dim_eq(q->shape[3], v->shape[3]);
}

bool
mkc_kernel_tc_attention(const mkc_node *n)
{
	return mkc_kernel_chunk_attention(n) && n->in[0]->shape[3].c % 64 == 0 &&
	       n->in[0]->shape[3].c <= 128;
}

/*
 * lower.c - each node into a target-neutral kernel description.
 *
 * requires: the graph passes done (it is the last: no node changes after
 *           it), shapes and values from infer.
 * provides: n->kern (ir/kernel.h) for every live node: its kind (the
 *           kernel column of ir/ops.def), whether its outputs are all
 *           known, and every attribute resolved, with the ONNX rules
 *           applied: negative axes made non-negative, defaults that live
 *           only in the spec filled in, Softmax's axis read by its opset's
 *           rule, Slice's starts and steps and the reduced axes read from
 *           their constant inputs.
 *
 * Who reads ONNX attributes and opsets: the frontends, infer (and fold),
 * canon, the graph passes that rewrite by them (fuse, fuse_norm, fuse_glu,
 * fuse_qkv, split_attn, state), and this pass. After it no one does: tile
 * and the plan passes after it, and the backends, see these descriptions
 * and the tensors' shapes and types. A node the backends cannot compile as
 * the model has it is not an error here (mkc without -o emits nothing):
 * the description says why in `refuse`, and the emitter reports it.
 */
#include "passes.h"
#include "kernel.h"

#include <math.h>
#include <string.h>

static int
norm_axis(int64_t a, int rank)
{
	return (int)(a < 0 ? a + rank : a);
}

/*
 * Softmax's axis attribute with its default: 1 before opset 13 (the axes
 * from it on flatten into one row), -1 from 13 on (that axis alone). The
 * one place this rule lives; infer, canon and this pass ask here.
 */
int64_t
mkc_softmax_axis_attr(const mkc_graph *g, const mkc_node *n, bool *one_axis)
{
	bool v13 = mkc_graph_opset(g, "") >= 13;
	if (one_axis)
		*one_axis = v13;
	return mkc_node_attr_int(n, "axis", v13 ? -1 : 1);
}

/*
 * The first axis of the rows a row-wise op (Softmax, the norms) works on,
 * non-negative, and whether a row is that axis alone (Softmax from opset
 * 13) rather than every axis from it on.
 */
static int
rows_axis(const mkc_graph *g, const mkc_node *n, bool *one_axis)
{
	int rank = n->out[0]->rank;
	if (n->op == MKC_OP_SOFTMAX)
		return norm_axis(mkc_softmax_axis_attr(g, n, one_axis), rank);
	*one_axis = false;
	if (n->op == MKC_OP_MS_SKIP_SIMPLIFIED_LN)
		return rank - 1;   /* no axis attribute: the last axis */
	return norm_axis(mkc_node_attr_int(n, "axis", -1), rank);
}

/* A node kept only because its outputs are graph outputs, all known. */
static bool
all_known(const mkc_node *n)
{
	for (int i = 0; i < n->nout; i++)
		if (n->out[i] && !mkc_tensor_is_const(n->out[i]))
			return false;
	return true;
}

static void
lower_transpose(const mkc_node *n, mkc_kernel *k)
{
	const mkc_attr *p = mkc_node_attr(n, "perm");
	int r = n->out[0]->rank;
	for (int d = 0; d < r; d++)
		k->perm[d] = (int)(p ? p->ints[d] : r - 1 - d);
}

/* Slice from opset 10: starts (maybe symbolic), axes and steps are inputs. */
static int
lower_slice(mkc_graph *g, const mkc_node *n, mkc_kernel *k)
{
	if (mkc_graph_opset(g, "") < 10) {
		k->refuse = "Slice before opset 10";
		return 0;
	}
	mkc_dim ax[MKC_MAX_RANK], sp[MKC_MAX_RANK];
	int64_t cnt = mkc_const_dims(g, n, 1, k->slice_start, MKC_MAX_RANK, true);
	if (cnt < 0)
		return -1;
	for (int i = 0; i < cnt; i++) {
		ax[i] = mkc_dim_const(i);
		sp[i] = mkc_dim_const(1);
	}
	if (n->nin > 3 && n->in[3] && mkc_const_dims(g, n, 3, ax, MKC_MAX_RANK, false) < 0)
		return -1;
	if (n->nin > 4 && n->in[4] && mkc_const_dims(g, n, 4, sp, MKC_MAX_RANK, false) < 0)
		return -1;
	k->nslice = (int)cnt;
	for (int i = 0; i < cnt; i++) {
		k->slice_axis[i] = norm_axis(ax[i].c, n->out[0]->rank);
		k->slice_step[i] = sp[i].c;
	}
	return 0;
}

/* The reduced axes from the attribute (before opset 18) or input 1, ascending. */
static int
lower_reduce(mkc_graph *g, const mkc_node *n, mkc_kernel *k)
{
	int rank = n->in[0]->rank;
	bool red[MKC_MAX_RANK] = {false};
	const mkc_attr *a = mkc_node_attr(n, "axes");
	mkc_dim ax[MKC_MAX_RANK];
	int64_t na = 0;
	if (a) {
		na = a->n;
		for (int i = 0; i < a->n; i++)
			ax[i] = mkc_dim_const(a->ints[i]);
	} else if (n->nin > 1 && n->in[1] && (na = mkc_const_dims(g, n, 1, ax, MKC_MAX_RANK, false)) < 0) {
		return -1;
	}
	for (int i = 0; i < na; i++)
		red[norm_axis(ax[i].c, rank)] = true;
	/* no axes: every axis, unless noop_with_empty_axes says none */
	if (na == 0 && !mkc_node_attr_int(n, "noop_with_empty_axes", 0))
		for (int i = 0; i < rank; i++)
			red[i] = true;
	for (int i = 0; i < rank; i++)
		if (red[i])
			k->axes[k->naxes++] = i;
	return 0;
}

static void
lower_matmul(const mkc_node *n, mkc_kernel *k)
{
	if (n->op == MKC_OP_MATMUL) {
		k->trans_b = mkc_node_attr_int(n, "mkc_trans_b", 0);   /* canon: b stored [N, K] */
		k->alpha = k->beta = 1;
		return;
	}
	k->trans_a = mkc_node_attr_int(n, "transA", 0);
	k->trans_b = mkc_node_attr_int(n, "transB", 0);
	k->alpha = mkc_node_attr_float(n, "alpha", 1);
	k->beta = mkc_node_attr_float(n, "beta", 1);
	if (mkc_kernel_norm_product(n))
		k->eps = mkc_node_attr_float(n, "epsilon", 1e-5f);
}

static void
lower_rows(const mkc_graph *g, const mkc_node *n, mkc_kernel *k)
{
	k->axis = rows_axis(g, n, &k->one_axis);
	if (n->op != MKC_OP_SOFTMAX)
		k->eps = mkc_node_epsilon(n);
}

static void
lower_rotary(const mkc_node *n, mkc_kernel *k)
{
	k->interleaved = mkc_node_attr_int(n, "interleaved", 0);
	k->heads = mkc_node_attr_int(n, "num_heads", 0);
	k->rot_dim = mkc_node_attr_int(n, "rotary_embedding_dim", 0);
}

/* The head size of an attention node's query, or 0 when it is not a constant. */
static int64_t
head_size(const mkc_node *n, const mkc_kernel *k)
{
	const mkc_tensor *q = n->in[0];
	if (n->op == MKC_OP_ATTN_MERGE || q->rank < 3)
		return 0;
	if (n->op == MKC_OP_MS_GQA)
		return k->heads > 0 && mkc_dim_is_const(q->shape[2]) ? q->shape[2].c / k->heads : 0;
	if (q->rank == 3) {
		int64_t h = mkc_node_attr_int(n, "q_num_heads", 0);
		return h > 0 && mkc_dim_is_const(q->shape[2]) ? q->shape[2].c / h : 0;
	}
	return mkc_dim_is_const(q->shape[3]) ? q->shape[3].c : 0;
}

static void
lower_attention(const mkc_node *n, mkc_kernel *k)
{
	k->chunks = mkc_node_attr_int(n, "chunks", 1);
	k->causal = mkc_node_attr_int(n, "is_causal", 0);
	k->softcap = mkc_node_attr_float(n, "softcap", 0);
	if (n->op == MKC_OP_MS_GQA) {
		k->heads = mkc_node_attr_int(n, "num_heads", 0);
		k->kv_heads = mkc_node_attr_int(n, "kv_num_heads", 0);
		k->rotary = mkc_node_attr_int(n, "do_rotary", 0);
		k->interleaved = mkc_node_attr_int(n, "rotary_interleaved", 0);
	}
	const mkc_attr *sa = mkc_node_attr(n, "scale");
	k->scale_given = sa != NULL;
	int64_t d = head_size(n, k);
	if (sa)
		k->scale = sa->f;
	else if (d > 0)
		k->scale = 1.0f / sqrtf((float)d);   /* as the backends compute it at run time */
}

/*
 * The kind is the op table's (ir/ops.def); here its attributes are
 * resolved, a known node's too: tile cuts it by them.
 */
static int
lower_node(mkc_graph *g, const mkc_node *n, mkc_kernel *k)
{
	const mkc_op_kernel *ok = mkc_op_kernel_of(n->op);
	k->kind = ok->kind;
	k->known = all_known(n);
	/* passes/half.c leaves float16 only at the boundary, its Casts' side: the
	 * bodies compute float32, and no other reads float16's bits */
	for (int i = 0; i < n->nin + n->nout && n->op != MKC_OP_CAST; i++) {
		const mkc_tensor *t = i < n->nin ? n->in[i] : n->out[i - n->nin];
		if (t && t->dtype == MKC_DT_FLOAT16)
			k->refuse = "a float16 operand or result (only a Cast converts float16)";
	}
	switch (k->kind) {
	case MKC_KERN_ELEMENTWISE:
		k->operands = ok->one_operand ? 1 : n->nin;
		/* Tile as a broadcast: every axis of x its length in y, or 1 */
		for (int d = 0; n->op == MKC_OP_TILE && d < n->in[0]->rank; d++)
			if (!mkc_dim_eq(n->in[0]->shape[d], n->out[0]->shape[d]) &&
			    !mkc_dim_eq(n->in[0]->shape[d], mkc_dim_const(1)))
				k->refuse = "Tile repeating an axis longer than 1 (only a broadcast of "
					    "length-1 axes is computed)";
		return 0;
	case MKC_KERN_TRANSPOSE:
		lower_transpose(n, k);
		return 0;
	case MKC_KERN_CONCAT:
		k->axis = norm_axis(mkc_node_attr_int(n, "axis", 0), n->out[0]->rank);
		return 0;
	case MKC_KERN_SLICE:
		return lower_slice(g, n, k);
	case MKC_KERN_GATHER:
	case MKC_KERN_SPLIT:
		k->axis = norm_axis(mkc_node_attr_int(n, "axis", 0), n->in[0]->rank);
		return 0;
	case MKC_KERN_MATMUL:
		lower_matmul(n, k);
		return 0;
	case MKC_KERN_ROWS:
		lower_rows(g, n, k);
		return 0;
	case MKC_KERN_REDUCE:
		return lower_reduce(g, n, k);
	case MKC_KERN_ROTARY:
		lower_rotary(n, k);
		return 0;
	case MKC_KERN_ATTENTION:
		lower_attention(n, k);
		if (g->max_seqs && n->op != MKC_OP_ATTN_MERGE && n->nin > 2 && n->in[1] &&
		    n->in[1]->cap) {
			k->paged = true;
			if ((n->nin > 3 && n->in[3]) || k->softcap > 0 || n->in[0]->rank != 4)
				k->refuse = "a mask, a soft cap or 3-D inputs beside caches in pages "
					    "(--max-seqs takes a causal attention of 4-D heads)";
		}
		return 0;
	case MKC_KERN_HEAD_PROJ:   /* fuse_qkv's */
		k->alpha = mkc_node_attr_float(n, "alpha", 1);
		k->eps = mkc_node_attr_float(n, "epsilon", 1e-5f);
		k->rotary = n->nin > 3 && n->in[3];
		k->interleaved = mkc_node_attr_int(n, "interleaved", 0);
		k->paged = g->max_seqs > 0 && n->out[0]->kind == MKC_TK_STATE;   /* into a cache */
		return 0;
	case MKC_KERN_CACHE_APPEND:
		k->paged = g->max_seqs > 0;
		if (n->nin == 3) {   /* fuse_rope's: the rotary's attributes */
			k->rotary = true;
			lower_rotary(n, k);
		}
		return 0;
	default:   /* copy, range, check, other: no attributes */
		return 0;
	}
}

int
mkc_pass_lower(mkc_graph *g)
{
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->dead)
			continue;
		n->kern = mkc_arena_alloc(g->ctx->arena, sizeof *n->kern);
		if (lower_node(g, n, n->kern) != 0)
			return -1;
	}
	return 0;
}

/*
 * kernel.h - a node lowered: what its tile function computes, with every
 * ONNX attribute and opset rule already resolved.
 *
 * passes/lower.c fills n->kern for every live node; passes/tile.c and the
 * backends read it (with the tensors' shapes and types) and never an
 * attribute or an opset, so the ONNX rules (Softmax's axis before and after
 * opset 13, negative axes, defaults that exist only in the spec) live in
 * one place. Which fields mean something depends on the kind, as the
 * comments say; the others are zero.
 *
 *   const mkc_kernel *k = n->kern;
 *   if (k->kind == MKC_KERN_ROWS) ... rows from k->axis, k->eps ...
 */
#ifndef MKC_KERNEL_H
#define MKC_KERNEL_H

#include "graph.h"

typedef enum {
	MKC_KERN_ELEMENTWISE,  /* one, two or three operands (Max, Min: any), broadcast */
	MKC_KERN_COPY,         /* Reshape and its kin: the same elements, a new shape */
	MKC_KERN_TRANSPOSE,    /* perm */
	MKC_KERN_CONCAT,       /* axis */
	MKC_KERN_SLICE,        /* nslice starts and steps along slice_axis */
	MKC_KERN_GATHER,       /* axis of the data */
	MKC_KERN_SPLIT,        /* axis */
	MKC_KERN_RANGE,
	MKC_KERN_MATMUL,       /* MatMul, Gemm, NormGemm: trans_a, trans_b, alpha, beta (eps) */
	MKC_KERN_ROWS,         /* Softmax and the norms: rows from axis (one_axis), eps */
	MKC_KERN_REDUCE,       /* naxes reduced axes */
	MKC_KERN_ROTARY,       /* interleaved, heads, rot_dim */
	MKC_KERN_ATTENTION,    /* Attention, AttnPart, AttnMerge, GroupQueryAttention */
	MKC_KERN_CACHE_APPEND,
	MKC_KERN_HEAD_PROJ,    /* HeadProj: alpha, eps, rotary, interleaved */
	MKC_KERN_CHECK,        /* LengthCheck: values from the caller checked, nothing computed */
	MKC_KERN_OTHER,        /* an op no kind above describes (the backend refuses it) */
} mkc_kernel_kind;

typedef struct mkc_kernel {
	mkc_kernel_kind kind;
	/*
	 * Every output known at compile time: the emitter writes the values.
	 * The kind and fields still describe the op, which tile cuts as it
	 * would any other node of it.
	 */
	bool known;
	/* ELEMENTWISE: inputs 0 .. operands - 1 are values, broadcast into the
	 * output; the others give only its type (CastLike) or shape (Expand) */
	int operands;
	/* why no backend can compile the node as the model has it; NULL: none */
	const char *refuse;
	int axis;                  /* non-negative; ROWS: the first axis of a row */
	bool one_axis;             /* ROWS: a row is axis alone, not axis .. rank - 1 */
	int perm[MKC_MAX_RANK];    /* TRANSPOSE: output axis d is input axis perm[d] */
	/* REDUCE: the reduced axes, ascending (none: noop_with_empty_axes) */
	int naxes, axes[MKC_MAX_RANK];
	/* SLICE: in the model's order; starts may be symbolic, clamped at run time */
	int nslice, slice_axis[MKC_MAX_RANK];
	mkc_dim slice_start[MKC_MAX_RANK];
	int64_t slice_step[MKC_MAX_RANK];
	bool trans_a, trans_b;     /* MATMUL: b stored [N, K] (transB, canon's mkc_trans_b) */
	float alpha, beta;         /* MATMUL; HEAD_PROJ: alpha */
	float eps;                 /* ROWS, MATMUL (NormGemm's norm), HEAD_PROJ */
	/*
	 * ATTENTION: scale is the model's, or 1 / sqrt(head size) when
	 * scale_given is false (the backend may compute that at run time:
	 * the same float operations); softcap 0: none.
	 */
	float scale, softcap;
	bool scale_given;
	int causal;   /* is_causal: 0, 1 (query s sees the past and s more), 2 (the diagonal at the end) */
	int64_t chunks;            /* AttnPart, AttnMerge: position chunks a key head */
	int64_t heads, kv_heads;   /* ROTARY (heads of a 3-D input; 0: 4-D), GroupQueryAttention */
	/* GroupQueryAttention's do_rotary, CACHE_APPEND's and HEAD_PROJ's
	 * rotation of the new positions; ROTARY and those: pairs (2i, 2i+1)
	 * when interleaved */
	bool rotary, interleaved;
	int64_t rot_dim;           /* ROTARY, CACHE_APPEND: leading dims rotated (0: all) */
	/* ATTENTION reading caches, CACHE_APPEND: the caches are in pages
	 * (mkc --max-seqs), a token row's position and sequence the runtime's */
	bool paged;
} mkc_kernel;

const char *mkc_kernel_kind_name(mkc_kernel_kind k);

/*
 * ir/ops.def's kernel column, by op: the kind its nodes lower to (unless
 * every output is known), and for an elementwise op whether input 0 is its
 * only operand (EW1: CastLike, Expand). backends/core/emit_ops.c reads the
 * elementwise codes and forms from the same column.
 */
typedef struct {
	mkc_kernel_kind kind;
	bool one_operand;
} mkc_op_kernel;

const mkc_op_kernel *mkc_op_kernel_of(mkc_op op);

/* Gemm n is a product a tensor-core tile takes (ir/kernel.c says which). */
bool mkc_kernel_tc_gemm(const mkc_node *n);
/* n is NormGemm or NormGlu: a product of rows normalised first (passes/fuse_norm.c). */
bool mkc_kernel_norm_product(const mkc_node *n);
/* Attention n is one a chunk's GPU bodies take, and the tensor-core one (ir/kernel.c). */
bool mkc_kernel_chunk_attention(const mkc_node *n);
bool mkc_kernel_tc_attention(const mkc_node *n);

/* One line, no newline: "rows axis=3 one_axis eps=1e-05". */
void mkc_kernel_print(FILE *f, const mkc_graph *g, const mkc_node *n);

#endif

/*
 * graph.h - the graph IR: tensors and the nodes that connect them.
 *
 * A graph is what every frontend produces and every later pass reads:
 *   - tensors: name, element type, shape, kind (input, output, weight,
 *     state, intermediate), the node that produces it, and, for weights and
 *     values known at compile time, their bytes;
 *   - nodes: an op from ir/ops.def, inputs and outputs, attributes, and the
 *     ONNX node name it came from (every error names it);
 *   - symbols: the symbolic dimensions (past_len, batch) of graph inputs.
 *
 * A dimension is an affine form c + k * sym over at most one symbol, which
 * covers what decode-step exports carry (past_len, past_len + 1). Products of
 * two symbolic dimensions are rejected with an error naming the node.
 *
 * Nodes are kept in a topological order once mkc_graph_sort has run; every
 * pass after the frontend may rely on it. Everything lives in the arena of
 * the context the graph was made in.
 */
#ifndef MKC_GRAPH_H
#define MKC_GRAPH_H

#include "base.h"

#include <stdbool.h>


typedef enum {
	MKC_DT_UNDEF = 0,
#define DT(e, id, size, name) MKC_DT_##e = id,
#include "dtypes.def"
#undef DT
} mkc_dtype;

typedef enum {
#define OP(e, name, dom, i0, i1, o0, o1, inf, fld, cin, opt, kern) MKC_OP_##e,
#include "ops.def"
#undef OP
	MKC_OP_UNKNOWN,   /* read but not in the op table */
	MKC_OP_COUNT
} mkc_op;

typedef struct {
	const char *name, *domain;
	int min_in, max_in, min_out, max_out;
	bool folds;   /* has a constant evaluator */
	unsigned const_inputs;   /* bit i: input i must be known at compile time */
	unsigned optional_in;    /* bit i: input i < min_in may be left out */
} mkc_op_info;

const mkc_op_info *mkc_op_info_of(mkc_op op);
mkc_op mkc_op_lookup(const char *domain, const char *op_type);

const char *mkc_dtype_name(mkc_dtype t);
size_t mkc_dtype_size(mkc_dtype t);  /* 0 for unknown types and strings */
bool mkc_dtype_valid(int onnx_id);
bool mkc_dtype_is_float(mkc_dtype t);

enum { MKC_MAX_RANK = 8 };
/*
 * The most bytes one tensor, or all intermediates together, may take (256
 * TiB): more than any machine holds, and far enough from 2^63 that sums
 * and products of a few such sizes cannot overflow.
 */
#define MKC_MAX_BYTES ((int64_t)1 << 48)

/*
 * A dimension affine in up to MKC_DIM_TERMS symbols: c + k[0] * sym[0] +
 * k[1] * sym[1]. A prompt chunk's mask spans past_len + seq_len, so two
 * terms are needed; products of symbols are not affine and are refused.
 * Canonical form (every constructor and operation returns it): the terms in
 * use have k != 0 and come first, in ascending symbol order; unused terms
 * have k 0 and sym -1. An unknown dimension has sym[0] MKC_DIM_UNKNOWN.
 */
enum { MKC_DIM_TERMS = 2 };
typedef struct {
	int64_t c;
	int64_t k[MKC_DIM_TERMS];
	int sym[MKC_DIM_TERMS];   /* index into graph->syms, -1, or MKC_DIM_UNKNOWN */
} mkc_dim;

/* An output's declared dimension that mkc cannot read; inference decides. */
#define MKC_DIM_UNKNOWN (-2)

mkc_dim mkc_dim_const(int64_t c);
mkc_dim mkc_dim_sym(int sym);
mkc_dim mkc_dim_unknown(void);
bool mkc_dim_is_unknown(mkc_dim d);
bool mkc_dim_is_const(mkc_dim d);
int mkc_dim_nterms(mkc_dim d);   /* symbols it depends on */
bool mkc_dim_uses(mkc_dim d, int sym, int64_t *k);   /* k: its coefficient */
int mkc_dim_bare_sym(mkc_dim d);   /* the symbol d is alone (1 * s), or -1 */
bool mkc_dim_eq(mkc_dim a, mkc_dim b);
/* no size: a negative constant, or one that shrinks as a symbol grows */
bool mkc_dim_negative(mkc_dim d);
bool mkc_dim_add(mkc_dim a, mkc_dim b, mkc_dim *r);   /* false: not affine, or overflows */
bool mkc_dim_sub(mkc_dim a, mkc_dim b, mkc_dim *r);
bool mkc_dim_mul(mkc_dim a, mkc_dim b, mkc_dim *r);
bool mkc_dim_div(mkc_dim a, mkc_dim b, mkc_dim *r);   /* exact, or floor by a constant */
/* the value with symbol s at val[s]; false when it overflows */
bool mkc_dim_value(mkc_dim d, const int64_t *val, int64_t *r);
/* the largest value with each symbol in 0..max[s]; false when it overflows */
bool mkc_dim_max(mkc_dim d, const int64_t *max, int64_t *r);

typedef enum {
	MKC_TK_INTERMEDIATE,
	MKC_TK_INPUT,       /* graph input, fed at every step */
	MKC_TK_OUTPUT,      /* graph output, produced by a node */
	MKC_TK_WEIGHT,      /* initializer or Constant: bytes known */
	MKC_TK_STATE,       /* kept across steps (KV cache); set by later passes */
} mkc_tensor_kind;

typedef struct mkc_graph mkc_graph;
typedef struct mkc_node mkc_node;
typedef struct mkc_kernel mkc_kernel;   /* ir/kernel.h */

typedef struct mkc_tensor {
	const char *name;
	mkc_dtype dtype;
	int rank;                  /* -1 until known */
	mkc_dim shape[MKC_MAX_RANK];
	mkc_tensor_kind kind;
	mkc_node *producer;        /* NULL for inputs and weights */
	int nconsumers;
	int id;

	/* Compile-time value: bytes (little endian, dense, row major). */
	const void *data;
	size_t nbytes;
	bool initializer;          /* the model file holds the bytes (by name) */
	mkc_dtype storage;         /* weights kept in another type (bf16); 0: dtype */
	mkc_dtype file_dtype;      /* type of the bytes in the file, and in data but for a
	                              float16 initializer's, widened to float32 at compile
	                              time (passes/half.c); 0: dtype */
	/*
	 * A weight whose bytes sit in a file of their own (ONNX external data,
	 * safetensors): the path as opened (below the model's folder) and the
	 * offset of the first byte. The emitted code reads them from there.
	 */
	const char *ext_file;
	uint64_t ext_offset;
	/*
	 * A weight stored transposed (passes/canon.c): the file holds a [xk,
	 * xn] matrix at ext_file/ext_offset, of which this tensor [rows, xk]
	 * is the transpose of columns xc0 .. xc0 + rows - 1; the loader makes
	 * it at load time. xk 0: the bytes as the file holds them.
	 */
	int64_t xk, xn, xc0;

	/* Integer values that may be symbolic (folded shape arithmetic). */
	mkc_dim *symval;
	int64_t nsymval;

	/*
	 * A KV cache kept as state (passes/state.c): its memory holds cap
	 * positions along axis cap_axis, of which the shape's symbolic length
	 * is in use. Strides come from that layout. cap 0: dense as shaped.
	 */
	int cap_axis;
	int64_t cap;
} mkc_tensor;

/*
 * A KV cache turned into state: the present output `cache` (now of kind
 * MKC_TK_STATE, written in place by a CacheAppend node) replaced the pair
 * past input / present output. The symbol `sym` counts the positions
 * already in the cache; each step appends `nnew` of them: a constant, or
 * the chunk symbol (a step of S tokens appends S).
 */
typedef struct {
	mkc_tensor *cache;
	const char *past;          /* the graph input it replaced */
	int axis, sym;
	mkc_dim nnew;
} mkc_state;

typedef enum {
	MKC_AT_FLOAT, MKC_AT_INT, MKC_AT_STRING, MKC_AT_TENSOR, MKC_AT_GRAPH,
	MKC_AT_FLOATS, MKC_AT_INTS, MKC_AT_STRINGS, MKC_AT_TENSORS,
	MKC_AT_GRAPHS, MKC_AT_SPARSE_TENSOR, MKC_AT_TYPE_PROTO, MKC_AT_OTHER,
} mkc_attr_type;

/* A subgraph attribute is kept as a summary: mkc runs no control flow. */
typedef struct {
	const char *name;
	int nnodes, ninputs, noutputs;
} mkc_subgraph;

typedef struct {
	const char *name;
	mkc_attr_type type;
	float f;
	int64_t i;
	const char *s;   /* NUL-terminated copy; slen holds the byte length */
	size_t slen;
	mkc_tensor *t;
	mkc_subgraph *g;
	int n;           /* element count of the list forms */
	float *floats;
	int64_t *ints;
	const char **strings;
	mkc_tensor **tensors;
	mkc_subgraph **graphs;
} mkc_attr;

struct mkc_node {
	const char *name;          /* ONNX node name (made up when empty) */
	const char *op_type, *domain;
	mkc_op op;
	int nin, nout, nattr;
	mkc_tensor **in;           /* NULL where an optional input is left out */
	mkc_tensor **out;
	mkc_attr *attr;
	int id;
	bool dead;                 /* folded away; removed by the dce pass */
	mkc_kernel *kern;          /* passes/lower.c: what the backends compile; NULL before */
};

typedef struct {
	const char *domain;
	int64_t version;
} mkc_opset;

struct mkc_graph {
	mkc_ctx *ctx;
	const char *path;          /* the model file, for messages */
	const char *dir;           /* its folder: external data must stay inside */
	bool protobuf_weights;     /* inline initializers can be read back from path
	                              by name (a binary ONNX file) */
	const char *name;
	int64_t ir_version;
	const char *producer;
	mkc_opset *opsets;
	int nopsets;
	mkc_vec tensors, nodes, inputs, outputs, syms;
	mkc_map by_name;
	/* passes/state.c: positions a KV cache holds (0: keep past and present
	 * as inputs and outputs), and the caches it made (mkc_state *) */
	int64_t kv_cap;
	bool kv_cap_default;       /* kv_cap is the default, no flag's: a pass may lower it */
	/* the driver: the symbol counting a step's new tokens (-1: none, or
	 * fixed at 1) and its largest value */
	int chunk_sym;
	int64_t max_chunk;
	/* the driver: a few-token plan's graph (one block of at most
	 * MKC_FEW_ROWS rows) on a target whose products may normalise such
	 * rows (passes/fuse_norm.c): the C target's general bodies, or
	 * a few-token plan's tensor-core tiles (for bf16 weights) */
	bool few_norms;
	/* the driver (mkc --max-seqs): a step's tokens belong to up to max_seqs
	 * sequences, whose caches are pages of page_size positions, cache_pages
	 * of them shared (passes/state.c); max_seqs 0: one sequence, dense */
	int64_t max_seqs, page_size, cache_pages;
	mkc_vec states;
	/* passes/half.c: float16 past inputs and present outputs it made float32
	 * with no Cast, which the state pass must keep in place (mkc_tensor *) */
	mkc_vec half_caches;
	bool bf16_weights;         /* passes/weights.c: float32 weights stored as bf16 */
	bool tc_products;          /* the target's chunk products run on tensor cores (passes/narrow.c) */
	bool tc_attention;         /* ... and its chunk attention where it can (narrow_attention) */
	mkc_dtype kv_dtype;        /* passes/kv.c: the caches' storage (MKC_DT_BFLOAT16, or float32) */
	int nworkers;              /* the plan's workers (split_attn sizes its chunks by them) */
};

mkc_graph *mkc_graph_create(mkc_ctx *c, const char *path);
mkc_tensor *mkc_graph_tensor(mkc_graph *g, const char *name);   /* find or add */
mkc_tensor *mkc_graph_find(const mkc_graph *g, const char *name);
mkc_node *mkc_graph_find_node(const mkc_graph *g, const char *name);   /* NULL if none */
mkc_node *mkc_graph_add_node(mkc_graph *g, const char *name, const char *domain,
			     const char *op_type, int nin, int nout, int nattr);
/* base_suffix, or base_suffix_1, _2, ... where that names a tensor already */
const char *mkc_graph_fresh_name(mkc_graph *g, const char *base, const char *suffix);
/* a new int64 [n] weight of values v, symbolic ones (with no bytes then) computed at run time */
mkc_tensor *mkc_graph_ints(mkc_graph *g, const char *name, int n, const mkc_dim *v);
/* n, the last node, just before node at (ids follow) */
void mkc_graph_move_before(mkc_graph *g, mkc_node *n, const mkc_node *at);
int mkc_graph_sym(mkc_graph *g, const char *name);   /* find or add */
int mkc_graph_find_sym(const mkc_graph *g, const char *name, size_t len);   /* -1 if none */
/*
 * The largest value symbol s takes at run time: dflt, but a symbol that
 * counts cache positions stops where the cache is full.
 */
int64_t mkc_graph_sym_max(const mkc_graph *g, int s, int64_t dflt);
/*
 * The symbol that counts a step's new positions (a prompt chunk's length),
 * or -1: the S of a graph output's dimension P + S where a graph input has
 * the output's shape but P there (the past and present of a KV cache); or,
 * where the present's length is a symbol of its own T beside the past's P
 * (onnxruntime-genai's total_sequence_length, which inference binds to P +
 * S), the symbol of input_ids' second axis.
 */
int mkc_graph_chunk_sym(const mkc_graph *g);
/*
 * Gives symbol s the value v everywhere (shapes and symbolic values) and,
 * unless keep, drops it from the list; the symbols after it move down by
 * one. (keep: the symbols stay numbered as before, unused s among them.)
 */
void mkc_graph_fix_sym(mkc_graph *g, int s, int64_t v, bool keep);
/*
 * Symbol s becomes the dimension by (in other symbols) everywhere, as
 * mkc_graph_fix_sym; false, and nothing changed, where a dimension would
 * then need more than MKC_DIM_TERMS symbols. mkc_dim_subst does it to one
 * dimension that is not in the graph's tensors.
 */
bool mkc_graph_subst_sym(mkc_graph *g, int s, mkc_dim by, bool keep);
bool mkc_dim_subst(mkc_dim *d, int s, mkc_dim by, bool keep);
int64_t mkc_graph_opset(const mkc_graph *g, const char *domain); /* 0: absent */
int mkc_graph_sort(mkc_graph *g);

/*
 * Makes graph input `name` a constant with the given value (type and rank
 * must match the declaration; its dims become the value's). An ahead-of-time
 * compiler needs shapes, axes and the like at compile time: `mkc --const`
 * and `mkc test --bind-consts` use this. 0, or -1 with an error.
 */
int mkc_graph_bind_input(mkc_graph *g, const char *name, const mkc_tensor *value);

/* True if some node reads t where its op needs a compile-time value. */
bool mkc_graph_needs_const(const mkc_graph *g, const mkc_tensor *t);

/* True if every live node that reads t reads it as an input i with ok(node, i). */
bool mkc_graph_readers_all(const mkc_graph *g, const mkc_tensor *t,
			   bool (*ok)(const mkc_node *n, int input));
/* The same, and some live node reads t (an unread t is not "read only by"). */
bool mkc_graph_read_only_by(const mkc_graph *g, const mkc_tensor *t,
			    bool (*ok)(const mkc_node *n, int input));
/* The one live node that reads t, as its input 0 and nowhere else, or NULL. */
mkc_node *mkc_graph_sole_reader(const mkc_graph *g, const mkc_tensor *t);
void mkc_graph_count_uses(mkc_graph *g);
/* The same, counting only nodes that are not dead (passes that leave dead
 * nodes in place until dce); and n's reads added to its inputs' counts. */
void mkc_graph_count_live_uses(mkc_graph *g);
void mkc_node_count_reads(mkc_node *n, int delta);
/* Whether two tensors have the same rank and dims. */
bool mkc_tensor_same_shape(const mkc_tensor *a, const mkc_tensor *b);

#define MKC_TENSOR(g, i) ((mkc_tensor *)(g)->tensors.v[i])
#define MKC_NODE(g, i) ((mkc_node *)(g)->nodes.v[i])
#define MKC_INPUT(g, i) ((mkc_tensor *)(g)->inputs.v[i])
#define MKC_OUTPUT(g, i) ((mkc_tensor *)(g)->outputs.v[i])
#define MKC_SYM(g, i) ((const char *)(g)->syms.v[i])
#define MKC_STATE(g, i) ((mkc_state *)(g)->states.v[i])

const mkc_attr *mkc_node_attr(const mkc_node *n, const char *name);
/* Whether a node of the op must give input i (not leave it out as ""). */
bool mkc_op_input_required(const mkc_op_info *oi, int i);
/*
 * A node read from a model against its op's schema: input and output
 * counts, required inputs present, attribute types. 0, or -1 with an error
 * naming the node. Nodes of unknown ops pass (the compile driver refuses
 * them).
 */
int mkc_node_check_schema(const mkc_graph *g, const mkc_node *n);
int64_t mkc_node_attr_int(const mkc_node *n, const char *name, int64_t dflt);
float mkc_node_attr_float(const mkc_node *n, const char *name, float dflt);
float mkc_node_epsilon(const mkc_node *n);
void mkc_node_add_attr(mkc_graph *g, mkc_node *n, mkc_attr a);   /* a after n's attributes */   /* a norm's, or its op's default */
int mkc_node_error(const mkc_graph *g, const mkc_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));   /* returns -1 */

int64_t mkc_tensor_numel(const mkc_tensor *t);   /* -1 if symbolic, unknown or past int64 */
bool mkc_tensor_is_const(const mkc_tensor *t);   /* bytes or symbolic values */

/* Printing: "[1,2,past_len+1,32]", "float32[1,8]". */
char *mkc_dim_str(const mkc_graph *g, mkc_dim d, char *buf, size_t n);

/*
 * Reads a compile-time integer tensor (a shape, axes, a scalar) into v;
 * returns the element count, or -1 with an error naming node n and its
 * input. Symbolic values are allowed only when allow_sym is set.
 */
int64_t mkc_const_dims(mkc_graph *g, const mkc_node *n, int input,
		       mkc_dim *v, int64_t max, bool allow_sym);
char *mkc_shape_str(const mkc_graph *g, const mkc_tensor *t, char *buf, size_t n);

/*
 * Parses "past_len", "past_len + 1", "2*past_len - 3", "7". Unknown names
 * become new symbols when add_syms is set, else the parse fails; so does
 * anything that is not affine in one symbol.
 */
bool mkc_dim_parse(mkc_graph *g, const char *s, bool add_syms, mkc_dim *d);

/*
 * IR checks (ir/verify.c): every node's inputs defined before it, one
 * producer per tensor, arity within the op table's limits; with shapes set,
 * every live tensor has a dtype and a rank too. 0, or -1 with errors.
 */
int mkc_verify_graph(mkc_graph *g, bool shapes);

/* Text form of the graph (ir/dump.c), the output of --dump-after. */
void mkc_dump_graph(FILE *f, const mkc_graph *g);

#endif

/*
 * passes.h - the graph passes and the IR checks between them. Each pass
 * returns 0, or -1 after adding errors to the graph's context.
 *
 * The driver (compiler/driver.c) runs them as a flat list:
 *   infer   requires: nodes in topological order (mkc_graph_sort).
 *           provides: dtype and shape of every tensor; compile-time values
 *           of every tensor the constant evaluator can compute (bytes, or
 *           symbolic integers in terms of the input symbols); nodes whose
 *           outputs all became constant are marked dead.
 *   half    requires: infer. provides: float16 only at the graph's
 *           boundary, converted by Casts; everything else float32.
 *   gqa, layout (each file's opening comment says what it does), then
 *   canon   requires: infer. provides: the decomposed RMSNorm, RoPE and
 *           attention of real exports as RMSNormalization, RotaryEmbedding
 *           and Attention (opset 23) nodes; Attention reading grouped
 *           key/value heads without copies; duplicate attribute-free nodes
 *           merged; replaced nodes marked dead; topological order kept.
 *   fuse    requires: canon. provides: residual adds in the epilogue of the
 *           Gemm that feeds them; SiLU and SwiGLU as one elementwise node
 *           (Silu, SiluMul); bit-identical results (--no-fuse skips it).
 *   dce     requires: infer. provides: no dead nodes, no node whose outputs
 *           nobody reads; tensor use counts.
 *   state   requires: dce. provides: past/present KV pairs as caches the
 *           model owns, appended in place (unless --kv-io).
 *   then weights, fuse_norm, fuse_glu, fuse_rope, fuse_qkv, split_attn
 *   and kv (each file's opening comment says what it does), and last
 *   lower   requires: the other graph passes. provides: every node's
 *           kernel description (ir/kernel.h), attributes resolved: what
 *           tile and the backends read instead of ONNX.
 *   narrow  (passes/narrow.c) after it: a chunk's product inputs bf16
 *           where the target's tensor-core tile reads them.
 *
 * Then, on a plan (ir/task.h) made from the graph:
 *   tile      nodes into tasks with the regions they read and write, by
 *             their kernel descriptions
 *   views     Reshape, Flatten, Squeeze, Unsqueeze read in place: no task
 *   memory    intermediates placed in one arena, reusing freed space
 *   deps      exact predecessor lists from overlapping regions
 *   events    predecessor sets into counters with thresholds
 *   schedule  tasks onto per-worker queues in one topological order
 *   verify    the proof: thresholds exact, no deadlock, every conflicting
 *             pair of accesses ordered; nothing is emitted unless it passes
 * Each file's opening comment says what it requires and provides.
 */
#ifndef MKC_PASSES_H
#define MKC_PASSES_H

#include "../ir/graph.h"
#include "../ir/task.h"

int mkc_pass_infer(mkc_graph *g);
int mkc_pass_half(mkc_graph *g);           /* passes/half.c: float16 computed as float32 */
int mkc_pass_decompose(mkc_graph *g);      /* passes/decompose.c: ops as graphs of others */
int mkc_pass_gqa(mkc_graph *g);            /* passes/gqa.c: GroupQueryAttention taken apart */
int mkc_pass_layout(mkc_graph *g);         /* passes/layout.c: weights stored as products read them */
int mkc_pass_flat(mkc_graph *g);           /* passes/flat.c: hidden states as rows [S, X] */
int mkc_pass_canon(mkc_graph *g);
int mkc_pass_fuse(mkc_graph *g);           /* passes/fuse.c: exact fusions */
int mkc_pass_dce(mkc_graph *g);
int mkc_pass_state(mkc_graph *g);          /* passes/state.c: KV caches kept in place */
int mkc_pass_weights(mkc_graph *g);        /* passes/weights.c: bf16 storage */
int mkc_pass_fuse_norm(mkc_graph *g);      /* passes/fuse_norm.c: RMS norms into products */
int mkc_pass_fuse_glu(mkc_graph *g);       /* passes/fuse_glu.c: SwiGLU with its two products */
int mkc_pass_fuse_rope(mkc_graph *g);      /* passes/fuse_rope.c: a key's rotary into its append */
int mkc_pass_fuse_qkv(mkc_graph *g);       /* passes/fuse_qkv.c: rotary and appends into q/k/v */
int mkc_pass_split_attn(mkc_graph *g);     /* passes/split_attn.c: attention over position chunks */
int mkc_pass_kv(mkc_graph *g);             /* passes/kv.c: the KV caches' storage type */
int mkc_pass_lower(mkc_graph *g);          /* passes/lower.c: kernel descriptions */
int mkc_pass_narrow(mkc_graph *g);         /* passes/narrow.c: bf16 inputs of chunk products */

int mkc_pass_tile(mkc_plan *p);
int mkc_pass_views(mkc_plan *p);
int mkc_pass_memory(mkc_plan *p);
int mkc_pass_deps(mkc_plan *p);
int mkc_pass_events(mkc_plan *p);
int mkc_pass_schedule(mkc_plan *p);
int mkc_pass_verify(mkc_plan *p);

/*
 * An ONNX rule that passes before lower need too (passes/lower.c, its one
 * place): Softmax's axis attribute with its opset's default (1 before
 * opset 13, -1 from it), not normalised; *one_axis (when not NULL): a row
 * is that axis alone (opset 13 on) rather than every axis from it on.
 */
int64_t mkc_softmax_axis_attr(const mkc_graph *g, const mkc_node *n, bool *one_axis);

/*
 * Constant evaluation of one node whose inputs are known (passes/fold.c).
 * Returns 1 when every output got a value, 0 when the node cannot be
 * evaluated at compile time, -1 on an error in the model.
 */
int mkc_fold_node(mkc_graph *g, mkc_node *n);

/*
 * Shape and type inference of one node whose inputs have theirs, as the
 * infer pass does it (folding included): for the nodes a later pass makes
 * from ONNX ops. 0, or -1 with the error reported.
 */
int mkc_infer_node(mkc_graph *g, mkc_node *n);

/*
 * A new node op_type (ai.onnx) named at's name/what, just before at,
 * reading in, with the given attributes; its one output is out (NULL: a new
 * tensor), shaped by mkc_infer_node. NULL on an error (reported).
 */
mkc_tensor *mkc_infer_add(mkc_graph *g, mkc_node *at, const char *what, const char *op_type,
			  int nin, mkc_tensor *const *in, int nattr, const mkc_attr *attr,
			  mkc_tensor *out);

/*
 * Slice's first index along an axis of dim elements from its start and
 * step, clamped as ONNX clamps it (infer's lengths and fold's values; the
 * emitted code's twin is runtime/common.h's mkc_rt_slice_start).
 */
int64_t mkc_slice_first(int64_t start, int64_t step, int64_t dim);

/* Largest tensor the evaluator computes, in elements. */
enum { MKC_FOLD_MAX = 1 << 16 };

#endif

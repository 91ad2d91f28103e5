/*
 * task.h - the task IR: what the persistent kernel executes.
 *
 * A task is one tile of one node: the node, the box of its output that the
 * tile computes, the regions of tensors it reads and writes, the events it
 * waits on before it starts and signals when it is done, and its place in
 * one worker's queue. An event is a counter with a threshold: it fires when
 * every one of its producer tasks has signalled it once in this step.
 *
 * Boxes are half-open hyper-rectangles in a tensor's index space whose
 * bounds may be symbolic (0 .. past_len + 1), so one plan serves every
 * context length. Two regions of the same tensor overlap unless some axis
 * provably separates them; anything not provable counts as an overlap, so
 * the dependency and verify passes err on the safe side.
 *
 * The plan lives in the graph's arena. Passes fill it in this order:
 * tile (tasks, regions), views (reshapes without tasks), memory (where
 * intermediates live), deps (predecessors), events, schedule (workers and
 * queues), verify (the proof).
 */
#ifndef MKC_TASK_H
#define MKC_TASK_H

#include "graph.h"

typedef struct {
	mkc_dim lo[MKC_MAX_RANK], hi[MKC_MAX_RANK];
} mkc_box;

typedef struct {
	mkc_tensor *t;
	mkc_box box;
} mkc_region;

typedef struct mkc_task {
	int id;
	mkc_node *node;
	int tile, ntiles;
	mkc_box out;               /* the box of output 0 this tile computes */
	/*
	 * out may pass the output's run-time extent (a block of a step's
	 * tokens past its S): the runtime clamps the box to it, and a box
	 * left empty computes nothing
	 */
	bool clamp;
	/* a few-token plan's product cut as a chunk plan's, for its tile
	 * (passes/tile.c's few_chunk_cut) */
	bool chunk_cut;
	mkc_region *reads, *writes;
	int nreads, nwrites;
	int *preds;                /* tasks that must finish first (deps) */
	int npreds;
	int *waits, *signals;      /* event ids (events) */
	int nwaits, nsignals;
	int worker, pos;           /* schedule */
	int64_t cost;              /* bytes the tile moves, for the schedule */
} mkc_task;

typedef struct {
	int id;
	int threshold;             /* signals per step before it fires */
	int *producers;
	int nproducers;
	int nconsumers;
} mkc_event;

typedef struct {
	/* tiling: split work so every worker has some in every phase */
	int nworkers;
	int64_t min_tile_elems;    /* elementwise tiles are at least this big */
	int64_t matmul_tile_cols;  /* output columns per weight-streaming tile */
	int64_t matmul_min_cols;   /* fewest columns a tile, when spreading over workers */
	int64_t chunk_rows;        /* a step's tokens: fewest rows a block of them (0: 128) */
	bool wide_glu;             /* a Glu's tiles past a chunk's first block take
	                              matmul_tile_cols rows of each weight, not half */
	bool few_products;         /* a few-token plan's: products cut as a decode
	                              step's, not matmul_tile_cols a tile */
	int64_t max_dim;           /* every symbol's largest value (0: 4096) */
	bool no_reuse;             /* memory: every intermediate gets its own buffer */
} mkc_target_params;

typedef struct mkc_plan {
	mkc_graph *g;
	mkc_target_params tp;
	mkc_vec tasks, events;
	mkc_task ***queues;        /* queues[w][i]: worker w's i-th task */
	int *qlen;
	int64_t nedges;
	/*
	 * memory: intermediates share one arena. mem_off[tensor id] is the
	 * byte offset of an intermediate in it (-1: a buffer of its own),
	 * mem_size its bytes at the symbols' maxima; alias[id] lists the other
	 * tensors whose bytes overlap its own (they must be ordered too).
	 */
	int64_t *mem_off, *mem_size;
	int64_t arena_bytes;
	int **alias;
	int *nalias;
	/*
	 * views (passes/views.c): view_of[tensor id] is the id of the tensor
	 * whose bytes it is (a Reshape or a Transpose read in place, or an
	 * attention's output its Transpose's output is), or -1; NULL before
	 * the pass. Views have no regions, and a view's node no tasks (but an
	 * attention written through its Transpose: its tasks write the base).
	 */
	int *view_of;
} mkc_plan;

#define MKC_TASK(p, i) ((mkc_task *)(p)->tasks.v[i])
#define MKC_EVENT(p, i) ((mkc_event *)(p)->events.v[i])

mkc_plan *mkc_plan_create(mkc_graph *g, const mkc_target_params *tp);
mkc_task *mkc_plan_add_task(mkc_plan *p, mkc_node *n, int tile, int ntiles);
void mkc_task_add_region(mkc_plan *p, mkc_task *t, bool write, mkc_tensor *x,
			 const mkc_box *b);
mkc_box mkc_box_full(const mkc_tensor *t);

/* True unless some axis provably separates the two boxes. */
bool mkc_box_overlap(int rank, const mkc_box *a, const mkc_box *b);

/* Text dump (tasks, events, queues), for --dump-after. */
void mkc_dump_plan(FILE *f, const mkc_plan *p);

/* The same as a Graphviz digraph (--dump-format dot): tasks and dependencies. */
void mkc_dump_plan_dot(FILE *f, const mkc_plan *p);

#endif

/*
 * driver.h - the compile pipeline shared by `mkc MODEL` and `mkc test`:
 * the flat list of passes, with the IR checker between graph passes and
 * --dump-after printing after any of them.
 */
#ifndef MKC_DRIVER_H
#define MKC_DRIVER_H

#include "passes.h"

typedef struct {
	int workers;             /* 0: the default (8) */
	const char *dump_after;  /* a pass name, or NULL */
	bool dump_dot;           /* plans as Graphviz rather than text */
	bool bf16_weights;       /* store MatMul, Gather and norm weights as bf16 */
	int64_t max_dim;         /* every symbol's largest value (0: 4096) */
	bool no_reuse;           /* every intermediate in a buffer of its own */
	int64_t max_seq;         /* positions a KV cache holds (0: max_dim) */
	bool kv_io;              /* keep past/present as inputs and outputs */
	bool no_fuse;            /* skip the fuse and fuse_norm passes (exact rewrites) */
	bool wide_target;        /* a GPU: a tile's lanes are a block's threads, not one */
	bool tc_products;        /* a chunk's products run on tensor cores (passes/narrow.c) */
	bool few_tiles;          /* ... and a few-token plan's, by a tile of their own */
	bool tc_attention;       /* a chunk's attention runs on tensor cores where it can */
	bool tma_products;       /* ... their operands by TMA: a Glu tile past a chunk's first
	                            block is twice as wide (passes/tile.c) */
	mkc_dtype kv_dtype;      /* KV caches: MKC_DT_BFLOAT16, or float32 (MKC_DT_FLOAT or 0) */
	int64_t max_chunk;       /* most new positions a step takes (0 or 1: one) */
	int64_t max_seqs;        /* sequences a step serves, caches in pages (0: one, dense) */
	int64_t page_size;       /* positions a cache page holds (0: 16) */
	int64_t cache_pages;     /* pages in the pool (0: enough for max_seqs at max_seq) */
	/* the one-token plan of a chunked file (max_chunk 1): its symbols keep
	 * the chunked plan's numbers, S among them (emit.c's last plan) */
	bool one_token_twin;
	/* steps of 2 to few_tokens tokens of a chunked file whose max_chunk is
	 * more run a plan of their own, its products cut as a decode step's
	 * (-1: the target's default, MKC_FEW_ROWS where products run on tensor
	 * cores, else none; 0 or 1: none) */
	int64_t few_tokens;
	bool few_twin;           /* this is that plan (max_chunk few_tokens) */
} mkc_driver_options;

bool mkc_pass_known(const char *name);   /* "load" and every pass */

/* Runs every pass on g; *plan gets the verified task plan. 0 or -1. */
int mkc_run_passes(mkc_graph *g, const mkc_driver_options *o, mkc_plan **plan);
/*
 * --dim NAME=N: the model's symbolic dimension NAME is N, fixed at compile
 * time; an error names the symbols there are when the model has no NAME,
 * or N is no size. Then a symbolic batch (axis 0 of input_ids, nothing
 * but axis 0 of every graph input and output) is 1: one sequence a step.
 */
int mkc_fix_dims(mkc_graph *g, const char *const *dims, int n);

/*
 * The twins of plan 0 (made from g by mkc_run_passes with o) when g takes
 * steps of several tokens: the few-token plan where o's --max-chunk passes
 * its few_tokens, a few-token plan of steps of at most 32 tokens (whose
 * norms go into its products) where the plan before it takes more, then
 * the one-token plan, each from the model loaded again by load(user).
 * Returns how many (0 to 3: twins holds MKC_MAX_PLANS - 1) are in twins,
 * or -1.
 */
int mkc_run_twins(const mkc_graph *g, mkc_graph *(*load)(void *user), void *user,
		  const mkc_driver_options *o, mkc_plan **twins);

/* The few_tokens o gives: its own, or the target's default for -1. */
int64_t mkc_few_tokens(const mkc_driver_options *o);

/* `mkc test DIR...` (compiler/test.c); returns the exit status. */
int mkc_test_main(int argc, char **argv);

#endif

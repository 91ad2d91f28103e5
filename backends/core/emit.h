/*
 * emit.h - the one emitter, and the target tables that steer it.
 *
 * mkc_emit writes a verified plan as ONE source file (OUT) and its header
 * (OUT with .h): provenance, the tensor, task, event and queue tables, one
 * tile function per node, the target's runtime (executor and host API,
 * runtime/), and the public API named by the prefix. Both files are written
 * to temporary names and renamed at the end, so a failure leaves no partial
 * output.
 *
 * A target is a const table of what differs between C, CUDA and HIP: the
 * headers, the runtime texts embedded after the tables, how tile
 * functions are declared, and how `mkc test` builds what it emits. Each
 * target describes itself in its own folder (backends/c/target_c.c, ...);
 * backends/core/targets.c is the registry, a line a target. Runtime and
 * API texts are templates in one small language: every "$P" becomes the
 * API prefix (llama_create, ...).
 */
#ifndef MKC_EMIT_H
#define MKC_EMIT_H

#include "../../ir/task.h"
#include "runtime_files.h"

typedef struct {
	const char *name;           /* --target: "c", "cuda", "hip" */
	const char *ext;            /* OUT's extension that picks it: "c", "cu", "hip" */
	const char *unwritten;      /* why it cannot emit yet (a sentence), or NULL */
	const char *headers;        /* #include lines at the top */
	/* texts by name (runtime_files.h), each list NULL-terminated; between the
	 * tables and the tile functions the file holds: exec, bodies, then the
	 * host code every target shares (runtime/files.h, host.h, profile.h) */
	const char *const *prelude; /* right after the headers (a GPU vendor's names and
	                               primitives, which runtime/common.h uses); optional */
	const char *const *exec;    /* the model object and the executor */
	const char *const *bodies;  /* tile bodies the tile functions call */
	const char *api;            /* the public API's implementation */
	const char *fn_qual;        /* declares a tile function: "static" */
	const char *node_qual;      /* added for node bodies: " __noinline__" on GPUs */
	bool upload_tables;         /* the workers' tables are __device__ arrays filled
	                               at creation (emit.c's table_open); else static const */
	bool half_types;            /* float16 / bfloat16 tensors supported */
	int warp;                   /* lanes of a warp (MKC_WARP in the file): the GPU bodies'
	                               lane groups; 0: no warps (a lane is a thread) */
	bool mma;                   /* a chunk's products on tensor cores (mkc_mma_tile:
	                               backends/cuda/mma.cuh, backends/hip/mfma.h, in
	                               bodies), in dynamic shared memory */
	bool few_tiles;             /* a few-token plan's products by mma.cuh's mkc_mm_few_tile
	                               (compiler/driver.c makes such plans by default) */
	bool chunk_attn;            /* a chunk's attention by attention.cuh's mkc_attn_chunk,
	                               or with mma by mma.cuh's mkc_attn_chunk_mma */
	bool tma;                   /* their operands by TMA, through the maps the runtime makes
	                               (backends/cuda/tma.h, exec.cuh's MKC_TMAP) */
	/* mkc test: a shell command that builds $W/model.EXT and $W/main.EXT
	 * (the harness) into $W/run; $F: the flags of --tsan or $MKC_TEST_CFLAGS */
	const char *test_build;
	const char *test_buffers;   /* the harness's DEV_ALLOC, TO_DEV, TO_HOST, POISON, DEV_FREE */
	bool host_workers;          /* workers are host threads: --tsan and --shuffle apply */
	/* --arch: the GPU architectures the file may be generated for, the
	 * default first, NULL-terminated; NULL: the target takes no --arch */
	const char *const *archs;
	/* with archs: the lines after the headers that hold a device compile
	 * to the chosen one; "%s" (any number of them) is its name */
	const char *arch_guard;
} mkc_target;

/* Whether t takes --arch a (any a when a is NULL: whether it takes --arch at all). */
bool mkc_target_has_arch(const mkc_target *t, const char *a);

/*
 * The tile bodies every target embeds (backends/c/: plain C over a tile's
 * lanes), in the order they use each other; and the GPU targets' (one
 * source for CUDA and HIP: the decode bodies of backends/cuda/ after them).
 */
#define MKC_PORTABLE_BODIES "backends/c/scalar.h", "backends/c/cache.h", \
	"backends/c/attention.h", "backends/c/rows.h", "backends/c/data.h", \
	"backends/c/elementwise.h", "backends/c/reduce.h", "backends/c/matmul.h", \
	"backends/c/gqa.h"
#define MKC_GPU_BODIES MKC_PORTABLE_BODIES, "backends/cuda/attention.cuh", \
	"backends/cuda/matvec.cuh"

/* The standard headers every written target includes. */
#define MKC_STD_HEADERS "#include <errno.h>\n#include <fcntl.h>\n#include <math.h>\n" \
	"#include <stdarg.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n" \
	"#include <string.h>\n#include <sys/stat.h>\n#include <unistd.h>\n"

extern const mkc_target *const mkc_targets[];   /* the registry (targets.c), NULL-terminated */

const mkc_target *mkc_target_find(const char *name);   /* NULL if unknown */

/*
 * The texts a target's file holds between the tables and the tile
 * functions, in order: its exec, runtime/exec_api.h (the hooks, checked),
 * its bodies, then mkc_shared_runtime (host code every target embeds).
 * names gets them, NULL-terminated; returns how many.
 */
#define MKC_MAX_TEXTS 32
extern const char *const mkc_shared_runtime[];
int mkc_target_runtime(const mkc_target *t, const char **names);
const mkc_target *mkc_target_of_path(const char *out); /* by OUT's extension; NULL if none */

typedef struct {
	const char *out_path;       /* the .c / .cu file; the header goes beside it */
	const char *prefix;         /* API prefix; NULL: OUT's stem */
	const char *command_line;   /* for the provenance header */
	int64_t max_dim;            /* compiled maximum of every symbol */
	int64_t embed_limit;        /* initializers up to this many bytes are embedded */
	int profile_steps;          /* --profile: steps the timeline keeps (0: no timeline) */
	const char *arch;           /* --arch, for a target with archs; NULL: its default */
} mkc_emit_options;

/*
 * Writes the file of plans[0] and its twins (nplans in all, at most
 * MKC_MAX_PLANS): for a model taken in steps of up to --max-chunk tokens,
 * the few-token steps' plan where there is one and the one-token step's
 * last (the same model compiled with S at most --few-tokens, and with S
 * fixed at 1: compiler/driver.c's mkc_run_twins); a step runs the plan its
 * S picks. They share the graph inputs and outputs, the caches and every
 * weight that is the same in all (name, type, bytes and source); the rest
 * is each its own.
 */
int mkc_emit(mkc_plan *const *plans, int nplans, const mkc_target *t, const mkc_emit_options *o);

/*
 * The start of every file target t emits, up to the tables: its headers,
 * MKC_WARP, the --arch guard (arch; NULL: the default), MKC_PROF_TARGET,
 * the prelude, runtime/limits.h, common.h and bf16.h, and the public
 * declarations with the API prefix. (tests/backends/test_runtime.c writes
 * its stub files with it.)
 */
void mkc_emit_head(FILE *f, const mkc_target *t, const char *arch, const char *prefix);

/*
 * Why name cannot be the API prefix (not a C identifier, a keyword, a name
 * the emitted code or its headers use), or NULL when it can. A prefix taken
 * from OUT's stem is made safe instead ("out" becomes "out_model").
 */
const char *mkc_emit_name_problem(const char *name);

/*
 * What the tile emitters (emit_ops.c) need to know about the file being
 * written: each tensor's index in the tensor table.
 */
enum { MKC_MAX_PLANS = 4, MKC_MAX_UPLOADS = 16 };

typedef struct {
	FILE *f;
	mkc_plan *p;                /* the plan being written (one of plans) */
	const mkc_target *t;
	int *index;                 /* its graph's tensor id -> table index, or -1 */
	/* a file's plans: its steps (0) and, in a chunked file, the few-token
	 * steps' plan where there is one, then the one-token step's, compiled
	 * apart (the last); their tasks, events and nodes follow each
	 * other in the tables, plan k's from task0[k], event0[k], node0[k] */
	mkc_plan *plans[MKC_MAX_PLANS];
	int *indexes[MKC_MAX_PLANS];
	int nplans;
	int task0[MKC_MAX_PLANS + 1], event0[MKC_MAX_PLANS + 1], node0[MKC_MAX_PLANS + 1];
	/* a body names its tensors as m->buf[bi[k]], never by table index, so
	 * that nodes of one form share one body: bi[k] is slot[k] */
	int *slot;
	int nslot;
	bool mma;                   /* some product runs on tensor cores (mkc_emit_mma,
	                               mkc_emit_few) */
	/* the device tables written so far, with upload_tables */
	const char *uploads[MKC_MAX_UPLOADS];
	int nuploads;
} mkc_emitter;

/*
 * Writes the body of node n's tile function; -1 with an error if
 * unsupported. Its tensors are read through slots (e->slot, e->nslot: the
 * caller sizes slot for the node's inputs and outputs and zeroes nslot).
 */
int mkc_emit_node(mkc_emitter *e, const mkc_node *n);

/* Whether node n's tiles run on tensor cores (backends/cuda/mma.cuh): the
 * file then gives each worker MKC_MM_SMEM bytes of dynamic shared memory. */
bool mkc_emit_mma(const mkc_emitter *e, const mkc_node *n);

/* Whether n's tiles are a few-token plan's products (mma.cuh's
 * mkc_mm_few_tile; they take MKC_FEW_SMEM bytes, within MKC_MM_SMEM). */
bool mkc_emit_few(const mkc_emitter *e, const mkc_node *n);

/* Whether Glu node n has tensor-core tiles of MKC_MM_TN rows of each
 * weight (passes/tile.c's wide_glu), by TMA: MKC_MM_WIDE_SMEM bytes. */
bool mkc_emit_mma_wide(const mkc_emitter *e, const mkc_node *n);

/* Whether Attention node n's tiles run on tensor cores (mma.cuh's
 * mkc_attn_chunk_mma; e->mma set first): they take the same memory. */
bool mkc_emit_attn_mma(const mkc_emitter *e, const mkc_node *n);

/*
 * Model text made safe for the emitted file: inside a string literal
 * (backslash, quote, '%' and control bytes escaped; '%' doubled when the
 * literal is a printf format), or inside a comment ("*" "/" broken up).
 */
const char *mkc_cstr(mkc_arena *a, const char *s, bool format);
const char *mkc_ccomment(mkc_arena *a, const char *s);

/* A dimension as a C expression over m->sym[]: "(1 + 1 * m->sym[0])". */
char *mkc_dimx(const mkc_graph *g, mkc_dim d, char *buf, size_t n);

/* C type of an element, NULL if the target cannot hold it. */
const char *mkc_ctype(const mkc_emitter *e, mkc_dtype t);

#endif

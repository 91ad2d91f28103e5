/*
 * exec.cuh - the GPU runtime of both GPU targets, embedded after the tables
 * of an emitted .cu or .hip file: the persistent kernel, the event protocol
 * on the GPU, and the host object that owns device memory. It is written
 * in CUDA's names; the HIP target embeds backends/hip/names.h (HIP's names
 * for them) first, and each target's sync header (backends/cuda/sync.cuh,
 * backends/hip/sync.h) gives the primitives that differ: the acquire and
 * release, the pause, the clocks, shuffles, loads and the copy into shared
 * memory. Nothing in this file is one vendor's.
 *
 * One launch per step. Block w is worker w and runs queue w; the grid has
 * exactly MKC_NWORKERS blocks, and create refuses a GPU on which that many
 * blocks cannot be resident at once (a block spinning on an event whose
 * producer never got an SM would hang the step), or whose warps are not
 * MKC_WARP lanes wide (the bodies' lane groups are sized by it).
 *
 * Event protocol, per task (its memory ordering is the sync header's):
 *   wait:   thread 0 polls the 64-bit counter with mkc_ld_acquire until it
 *           reaches threshold * epoch; __syncthreads() hands the result
 *           (and what the acquire made visible) to the block;
 *   run:    all threads of the block share the tile's loops;
 *   signal: __syncthreads() (the block's writes are done), thread 0
 *           mkc_red_release (add 1) on the counter of its one event, or,
 *           with several, mkc_fence_release once and mkc_red_relaxed on
 *           each counter.
 * What a task is (its node, box, event, signals) comes from its descriptor,
 * built on the device at create time and copied into shared memory three
 * tasks ahead (mkc_qdesc_kernel).
 * Counters are never reset; the epoch grows by one a step. A file may
 * hold several plans (a chunked file's one-token step has its own, and its
 * steps of few tokens may: MKC_STEP_PLAN): a launch runs one plan's queues (plan k's of block w:
 * k * MKC_NWORKERS + w), each plan counting its own epochs over its own
 * events. A watchdog in
 * the wait (clock64, the SM's clock; the device's clock rate gives its
 * peak rate, so the limit is a lower bound when the clock is lowered) gives
 * up after timeout_s and reports task and event; every block then leaves.
 * A tile that finds an index from the caller out of range (runtime/common.h's
 * mkc_rt_check_index: a Gather index, a position, a length) reports it the
 * same way, with what it found; the host makes it the C target's sentence.
 *
 * Symbolic-valued tensors (past_len + 1) are written by a one-thread
 * kernel launched just before the persistent one, on the same stream.
 */

/*
 * How a launch ended, in device memory: state 0 ok, 1 the watchdog (who:
 * the task, or -1 at generate's barrier; ev: the event), 2 an index out
 * of range (who: the node; bad: what its check found). The first block to
 * set state (atomicCAS) writes the rest; the host reads it after the
 * launch.
 */
struct mkc_status {
	int state, who, ev;
	mkc_rt_bad bad;
};

#ifndef MKC_TMA
#define MKC_TMA 0   /* the HIP target: no tensor maps (backends/cuda/tma.h) */
#endif

struct mkc_model {              /* what tile functions see, in device memory */
	void *buf[MKC_NTENSORS];
#if MKC_TMA
	const struct mkc_tmap *tmap;   /* tensor t's map at [t], or NULL: no TMA (mkc_tmaps) */
#endif
	int64_t sym[MKC_NSYMS + 1];
	struct mkc_status *status;
	const int *qdesc;           /* the task descriptors (mkc_qdesc_kernel) */
#if MKC_PROFILE
	unsigned long long *prof;   /* the timeline (runtime/profile.h) */
#endif
#if MKC_MAX_SEQS
	mkc_rt_pages pages;         /* the step's rows and the page table (runtime/seqs.h) */
#endif
};

static __device__ void MKC_UNUSED
mkc_dev_fail_index(struct mkc_model *m, int node, const mkc_rt_bad *bad)
{
	if (atomicCAS(&m->status->state, 0, 2) == 0) {
		m->status->who = node;
		m->status->bad = *bad;
	}
}

#define MKC_FAIL_INDEX(m, node, bad) mkc_dev_fail_index(m, node, bad)

/* tensor t's map, for a TMA tile's operand (mma.cuh), or NULL: the tile loads by cp.async */
#if MKC_TMA
#define MKC_TMAP(m, t) ((m)->tmap ? (const void *)((m)->tmap + (t)) : (const void *)NULL)
#else
#define MKC_TMAP(m, t) ((const void *)NULL)
#endif

struct mkc_gpu_host {
	void *buf[MKC_NTENSORS];    /* device pointers */
	unsigned char owned[MKC_NTENSORS];
	unsigned char filled[MKC_NTENSORS];   /* a weight holds its values (runtime/host.h) */
	int64_t sym[MKC_NSYMS + 1];
	struct mkc_model *dev;      /* the device copy of the tile view */
	struct mkc_model view;      /* its host copy, staged before each launch */
	void *arena;                /* the intermediates, placed by the memory pass */
	unsigned long long *counter;
	struct mkc_status *status;
	int *qdesc;                 /* device memory */
	unsigned long long epoch[MKC_NPLANS];   /* each plan's steps */
	unsigned long long bars;    /* arrivals at generate's barrier so far */
	cudaStream_t stream;        /* every launch and copy (set_stream; 0: the default) */
	double timeout_s;
	long long timeout_cycles;
	char err[512];
#if MKC_TMA
	mkc_tma_encoder tma_enc;    /* NULL: no TMA here (not sm_90, or no encoder) */
	struct mkc_tmap *tmap;      /* device memory, a map a tensor (mkc_tmaps) */
	struct mkc_tmap *tmap_h;    /* its host copy (aligned as the type asks) */
	void *tmap_of[MKC_NTENSORS];   /* the pointer each map was made for */
#endif
#if MKC_PROFILE
	unsigned long long *prof;   /* device memory */
	long long prof_count;       /* steps recorded since the last call began */
#endif
#if MKC_MAX_SEQS
	mkc_rt_pages pages;         /* device memory: the step's rows, the page table */
	struct mkc_seq_pool *pool;  /* the sequences and free pages (runtime/seqs.h) */
	const int *step_seqs;         /* the step's rows' sequences (NULL: all sequence 0) */
#endif
};

typedef struct mkc_gpu_host mkc_host;

static void
mkc_seterr(mkc_host *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int64_t mkc_numel(const mkc_host *m, int t, int use_max);
static int mkc_place_tensors(mkc_host *m, void *arena);
static void mkc_free_tensors(mkc_host *m);
static int mkc_begin_step(mkc_host *m, const void *const *inputs, void *const *outputs,
			  const int64_t *dims);

/* what is the call as written, "cudaMalloc(...)": named by the vendor's name (MKC_GPU_API) */
static int
mkc_gpu_check(mkc_host *m, cudaError_t e, const char *what, int line)
{
	if (e == cudaSuccess)
		return 0;
	if (strncmp(what, "cuda", 4))   /* mkc_copy(...): the runtime's own */
		mkc_seterr(m, "%s failed (line %d of the runtime): %s", what, line,
			   cudaGetErrorString(e));
	else
		mkc_seterr(m, "%s%s failed (line %d of the runtime): %s", MKC_GPU_API, what + 4, line,
			   cudaGetErrorString(e));
	return -1;
}

/* Every runtime call goes through this: it names the call and the line. */
#define MKC_GPU(m, call) mkc_gpu_check(m, (call), #call, __LINE__)

/*
 * Copies and sets on the model's stream, finished when they return (as
 * cudaMemcpy's are), so that they follow the caller's work queued there
 * before the call and nothing of the model's is left running after it.
 */
static cudaError_t
mkc_copy(cudaStream_t st, void *dst, const void *src, size_t n, cudaMemcpyKind kind)
{
	const cudaError_t e = cudaMemcpyAsync(dst, src, n, kind, st);
	return e != cudaSuccess ? e : cudaStreamSynchronize(st);
}

static cudaError_t
mkc_copy2d(cudaStream_t st, void *dst, size_t dpitch, const void *src, size_t spitch,
	   size_t width, size_t rows)
{
	const cudaError_t e = cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows,
						cudaMemcpyDefault, st);
	return e != cudaSuccess ? e : cudaStreamSynchronize(st);
}

static cudaError_t
mkc_set(cudaStream_t st, void *dst, int v, size_t n)
{
	const cudaError_t e = cudaMemsetAsync(dst, v, n, st);
	return e != cudaSuccess ? e : cudaStreamSynchronize(st);
}

/* While tearing down: the first error is in err already. */
static void
mkc_gpu_free(void *p)
{
	if (p)
		(void)cudaFree(p);
}

static __global__ void
mkc_symvals_kernel(struct mkc_model *m)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		mkc_fill_symvals(m);
}

/*
 * Thread 0 waits until *counter reaches target, then the block goes on;
 * 0, or 1 when the step failed or the watchdog fired (who = task, or -1
 * for generate's grid barrier).
 */
static __device__ int
mkc_wait(struct mkc_model *m, unsigned long long *counter, unsigned long long target,
	 long long timeout_cycles, int who, int ev)
{
	__shared__ int stop;
	if (threadIdx.x == 0) {
		const long long start = clock64();
		int ok = 1;
		while (mkc_ld_acquire(counter) < target) {
			if (mkc_ld_flag(&m->status->state)) {
				ok = 0;
				break;
			}
			if (clock64() - start > timeout_cycles) {
				if (atomicCAS(&m->status->state, 0, 1) == 0) {
					m->status->who = who;
					m->status->ev = ev;
				}
				ok = 0;
				break;
			}
			mkc_backoff();
		}
		stop = !ok;
	}
	__syncthreads();
	return stop;
}

#if MKC_PROFILE
/* stamp k of a task in this step's slot, by thread 0 */
#define MKC_PROF_TASK(task, k, v) \
	(prof[MKC_NSYMS + 2 * MKC_NWORKERS + 4 * (task) + (k)] = (v))
#else
#define MKC_PROF_TASK(task, k, v) ((void)0)
#endif

/*
 * Task descriptors: what a worker needs of a task, in 192 contiguous bytes,
 * one per queue position (worker w's run from mkc_queue_start[w]), built
 * on the device when the model is created (mkc_qdesc_kernel) from the
 * tables. Read from the tables at run time, a task cost four dependent
 * loads (queue, task, box, symbols) before its wait: 1.8 us a task when
 * they hit L1, three times that when the weights had pushed them out. A
 * worker's second warp (the feeder) copies descriptor i + MKC_QD_AHEAD
 * into shared memory while task i runs (mkc_copy16: in the background on
 * CUDA), so a task's descriptor is there before the worker gets to it.
 *
 * A box is held in one of two forms (MKC_QD_FORM). MKC_QD_CONST: its
 * bounds as numbers (LO, HI; rank up to 8). MKC_QD_AFFINE: a box whose
 * bounds move with the step's symbols (a chunk's S, the positions), up to
 * rank 4, dimension d's lower bound, upper bound and the end that cuts
 * both (a block of rows may pass the output's end; INT32_MAX where none) as
 * three terms at MKC_QD_BOX + 9 * d (mkc_qd_term). A box in neither form
 * (more dimensions, larger numbers) is evaluated from the tables
 * (mkc_task_bounds). Before this form a step of several sequences (its
 * plan's boxes move with the step's rows) spent about 12% of its warps'
 * time in mkc_task_bounds's dependent loads (Nsight Compute, the 1B
 * shape, 8 sequences, H100, session 40); with it that step took 2.08 ->
 * 1.95 ms at context 1024, a 128-token prompt's first token 5.39 -> 5.10.
 */
enum {
	MKC_QD_TASK, MKC_QD_NODE, MKC_QD_EV, MKC_QD_THR, MKC_QD_SIG0, MKC_QD_S0, MKC_QD_S1,
	MKC_QD_FORM, MKC_QD_RANK,
	MKC_QD_LO = 14, MKC_QD_HI = 22,
	MKC_QD_BOX = 9,
	MKC_QD_WORDS = 48
};
enum { MKC_QD_CONST, MKC_QD_AFFINE, MKC_QD_TABLES };
/* the largest rank held as MKC_QD_AFFINE (0: every moving box from the
 * tables, tools/gpu_check.sh's check of that path) */
#ifndef MKC_QD_AFFINE_RANK
#define MKC_QD_AFFINE_RANK 4
#endif
static_assert(MKC_QD_AFFINE_RANK <= (MKC_QD_WORDS - MKC_QD_BOX) / 9, "an affine box's words");
#define MKC_QD_SLOTS 8      /* descriptors a worker holds in shared memory */
#define MKC_QD_AHEAD 3      /* how far ahead of the running task they are copied */

/*
 * A dimension c + k[0] * sym[s[0]] + k[1] * sym[s[1]] as three words: c,
 * then each term as k * 256 + s (0: no term). 0 when it does not fit (c
 * past int32, k past 24 bits, a symbol past 255).
 */
static __device__ int
mkc_qd_term(int *w, mkc_rt_dim x)
{
	if (x.c < INT32_MIN || x.c > INT32_MAX)
		return 0;
	w[0] = (int)x.c;
	for (int j = 0; j < 2; j++) {
		w[1 + j] = 0;
		if (x.s[j] < 0 || x.k[j] == 0)
			continue;
		if (x.s[j] > 255 || x.k[j] < -(1 << 23) || x.k[j] >= (1 << 23))
			return 0;
		w[1 + j] = (int)x.k[j] * 256 + x.s[j];
	}
	return 1;
}

/* The value of the three words at w (mkc_qd_term) for the symbols sym. */
static __device__ __forceinline__ int64_t
mkc_qd_dim(const int *w, const int64_t *sym)
{
	int64_t v = w[0];
#pragma unroll
	for (int j = 1; j < 3; j++)
		if (w[j])
			v += (int64_t)(w[j] >> 8) * sym[w[j] & 255];
	return v;
}

/* One thread a queue position: fills out[i * MKC_QD_WORDS ...]. */
static __global__ void
mkc_qdesc_kernel(int *out)
{
	const int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= MKC_NTASKS)
		return;
	int *d = out + (size_t)i * MKC_QD_WORDS;
	const int task = mkc_queue[i], node = mkc_task_node[task], ev = mkc_task_wait[task];
	const int s0 = mkc_task_sig_start[task], s1 = mkc_task_sig_start[task + 1];
	for (int k = 0; k < MKC_QD_WORDS; k++)
		d[k] = 0;
	d[MKC_QD_TASK] = task;
	d[MKC_QD_NODE] = node;
	d[MKC_QD_EV] = ev;
	d[MKC_QD_THR] = ev >= 0 ? mkc_event_threshold[ev] : 0;
	d[MKC_QD_SIG0] = s1 > s0 ? mkc_task_sig[s0] : -1;
	d[MKC_QD_S0] = s0;
	d[MKC_QD_S1] = s1;
	const int b = mkc_task_box_start[task], rank = (mkc_task_box_start[task + 1] - b) / 2;
	const int c = mkc_task_clamp[task];
	d[MKC_QD_RANK] = rank;
	int ok = rank <= 8 && c < 0;   /* a clamped box is cut at run time */
	for (int k = 0; ok && k < 2 * rank; k++) {
		const mkc_rt_dim x = mkc_task_box[b + k];
		ok = x.s[0] < 0 && x.s[1] < 0 && x.c >= 0 && x.c <= 0x7fffffff;
		d[(k & 1 ? MKC_QD_HI : MKC_QD_LO) + k / 2] = (int)x.c;
	}
	if (ok) {
		d[MKC_QD_FORM] = MKC_QD_CONST;
		return;
	}
	ok = rank <= MKC_QD_AFFINE_RANK;
	for (int k = 0; ok && k < rank; k++) {
		int *w = d + MKC_QD_BOX + 9 * k;
		const mkc_rt_dim none = {INT32_MAX, {0, 0}, {-1, -1}};
		ok = mkc_qd_term(w, mkc_task_box[b + 2 * k]) &&
		     mkc_qd_term(w + 3, mkc_task_box[b + 2 * k + 1]) &&
		     mkc_qd_term(w + 6, c >= 0 ? mkc_task_ext[c + k] : none);
	}
	d[MKC_QD_FORM] = ok ? MKC_QD_AFFINE : MKC_QD_TABLES;
}

/*
 * Task descriptor d's box for the step's symbols sym: from the descriptor
 * in shared memory (no load from global memory), or from the tables.
 */
static __device__ __forceinline__ void
mkc_qd_bounds(const struct mkc_model *m, const int *d, int64_t *lo, int64_t *hi)
{
	if (d[MKC_QD_FORM] == MKC_QD_CONST) {
		for (int k = 0; k < d[MKC_QD_RANK]; k++) {
			lo[k] = d[MKC_QD_LO + k];
			hi[k] = d[MKC_QD_HI + k];
		}
	} else if (d[MKC_QD_FORM] == MKC_QD_AFFINE) {
		for (int k = 0; k < d[MKC_QD_RANK]; k++) {
			const int *w = d + MKC_QD_BOX + 9 * k;
			const int64_t e = mkc_qd_dim(w + 6, m->sym), l = mkc_qd_dim(w, m->sym),
				      h = mkc_qd_dim(w + 3, m->sym);
			lo[k] = l < e ? l : e;
			hi[k] = h < e ? h : e;
		}
	} else {
		mkc_task_bounds(m, d[MKC_QD_TASK], lo, hi);
	}
}

/* The feeder warp: descriptor i of this worker's gd into slot i of dq (one group of copies). */
static __device__ __forceinline__ void
mkc_qdesc_fetch(int (*dq)[MKC_QD_WORDS], const int *gd, int i)
{
	const int lane = threadIdx.x % MKC_WARP;
	if (lane < MKC_QD_WORDS / 4)
		mkc_copy16(&dq[i % MKC_QD_SLOTS][4 * lane], gd + (size_t)i * MKC_QD_WORDS + 4 * lane);
	mkc_copy_commit();
}

/*
 * Block w runs its queue of plan plan for one step (events count to threshold * epoch);
 * with --profile it stamps each task into slot slot of the timeline.
 */
static __device__ int
mkc_run_queue(struct mkc_model *m, unsigned long long *counter, int plan, unsigned long long epoch,
	      long long timeout_cycles, int slot)
{
	const int w = blockIdx.x, q = plan * MKC_NWORKERS + w;
#if MKC_PROFILE
	unsigned long long *prof = m->prof + (size_t)slot * MKC_PROF_SLOT_WORDS;
	if (threadIdx.x == 0) {
		prof[MKC_NSYMS + 2 * w] = mkc_prof_now();
		prof[MKC_NSYMS + 2 * w + 1] = mkc_prof_smid();
		for (int s = 0; w == 0 && s < MKC_NSYMS; s++)
			prof[s] = (unsigned long long)m->sym[s];
	}
#else
	(void)slot;
#endif
	/* the descriptors: the first MKC_QD_AHEAD before the first task, then
	 * one a task, MKC_QD_AHEAD ahead */
	__shared__ __align__(16) int dq[MKC_QD_SLOTS][MKC_QD_WORDS];
	const int start = mkc_queue_start[q], n = mkc_queue_start[q + 1] - start;
	const int *gd = m->qdesc + (size_t)start * MKC_QD_WORDS;
	const bool feeder = threadIdx.x / MKC_WARP == 1;
	if (feeder) {
		for (int j = 0; j < MKC_QD_AHEAD && j < n; j++)
			mkc_qdesc_fetch(dq, gd, j);
		mkc_copy_wait();
	}
	__syncthreads();
	for (int i = 0; i < n; i++) {
		const int *d = dq[i % MKC_QD_SLOTS];
		if (feeder) {
			/* the copy of the last task's turn has landed; this one lands
			 * while the task runs (its slot's last reader was task
			 * i + MKC_QD_AHEAD - MKC_QD_SLOTS, long done) */
			mkc_copy_wait();
			if (i + MKC_QD_AHEAD < n)
				mkc_qdesc_fetch(dq, gd, i + MKC_QD_AHEAD);
		}
		const int task = d[MKC_QD_TASK], ev = d[MKC_QD_EV];
		if (threadIdx.x == 0)
			MKC_PROF_TASK(task, 0, mkc_prof_now());
		int64_t lo[MKC_RANK], hi[MKC_RANK];
		mkc_qd_bounds(m, d, lo, hi);
		if (ev >= 0 && mkc_wait(m, &counter[ev], (unsigned long long)d[MKC_QD_THR] * epoch,
					timeout_cycles, task, ev)) {
			if (feeder)
				mkc_copy_wait();
			return 1;
		}
		if (threadIdx.x == 0)
			MKC_PROF_TASK(task, 1, mkc_prof_now());
		mkc_run_node(m, d[MKC_QD_NODE], lo, hi);
		__syncthreads();
		if (threadIdx.x == 0) {
			if (d[MKC_QD_S1] - d[MKC_QD_S0] > 1) {
				/* several events: one fence, then plain counts (sync.cuh) */
				mkc_fence_release();
				for (int k = d[MKC_QD_S0]; k < d[MKC_QD_S1]; k++)
					mkc_red_relaxed(&counter[MKC_RO(&mkc_task_sig[k])]);
			} else if (d[MKC_QD_SIG0] >= 0) {
				mkc_red_release(&counter[d[MKC_QD_SIG0]]);
			}
			MKC_PROF_TASK(task, 2, mkc_prof_now());
			MKC_PROF_TASK(task, 3, (unsigned long long)w);
		}
	}
	return 0;
}

/*
 * The tile view kept in shared memory: tile bodies read m->buf[] and
 * m->sym[] for every task, and from global memory each read is a round trip
 * to L2 before the first load of data. A plan with too many tensors for
 * that keeps the global one.
 */
#if (MKC_NTENSORS + MKC_NSYMS + 4) * 8 <= 24576
#define MKC_MODEL_SHARED 1
#else
#define MKC_MODEL_SHARED 0
#endif

static __device__ struct mkc_model *
mkc_model_view(struct mkc_model *m)
{
#if MKC_MODEL_SHARED
	__shared__ struct mkc_model sh;
	const int n = (int)(sizeof sh / sizeof(unsigned long long));
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		((unsigned long long *)&sh)[i] = ((const volatile unsigned long long *)m)[i];
	__syncthreads();
	return &sh;
#else
	return m;
#endif
}

/*
 * A chunk's tensor-core tiles (mma.cuh) stage their operands in dynamic
 * shared memory: MKC_DYN_SMEM bytes a worker (the emitter's; 0 without them).
 * A launch that runs one plan asks for MKC_PLAN_SMEM(plan), that plan's
 * tiles' own (none for a one-token step): what it leaves, the SM keeps as
 * L1 (the 1B chunked file's decode step 3.5% over the plain file's at
 * context 1024 with the chunk's 150 KB asked for, 1.8% without: H100,
 * bench/RESULTS.md session 39). generate_batch's loop, whose steps take
 * any plan, asks for MKC_DYN_SMEM.
 */
#if MKC_DYN_SMEM
extern __shared__ __align__(128) unsigned char mkc_dyn_smem[];
#endif

#if MKC_PROFILE
#define MKC_PROF_SLOTS MKC_PROFILE_STEPS
#else
#define MKC_PROF_SLOTS 1
#endif

/*
 * Every block arrives; all go on once all have. The counter after the
 * events' counts is never reset either: arrival p of this launch waits for
 * base + p * MKC_NWORKERS.
 */
static __device__ int MKC_UNUSED
mkc_grid_sync(struct mkc_model *m, unsigned long long *bar, unsigned long long target,
	      long long timeout_cycles)
{
	__syncthreads();
	if (threadIdx.x == 0)
		mkc_red_release(bar);
	const int stop = mkc_wait(m, bar, target, timeout_cycles, -1, -1);
	/* the next wait may come at once (a step's first task): its write of
	 * the shared stop flag must not overtake this read */
	__syncthreads();
	return stop;
}

/* Where generate's kernel finds the token, position and logits buffers. */
struct mkc_gen_io {
	int64_t *ids, *pos;          /* pos may be NULL */
	const void *logits;          /* float32, or float16 (MKC_GEN_LOGITS_F16) */
	const int64_t *prompt;       /* device copy */
	int64_t *out;                /* device buffer for the new tokens */
	int n_prompt, steps;         /* steps 0: one step of plan, no token taken (mkc_step) */
	int plan;
	int sym;                     /* the symbol that counts cache positions, or -1 */
	int64_t nnew;
	int prof0;                   /* the timeline's slot of step 0 (the prompt's chunks first) */
	mkc_rt_sampling s;           /* temperature 0: greedy */
	uint64_t ctr0;               /* the position step 0's token takes */
	int64_t pos0;                /* the position step 0 feeds */
	const int64_t *stop;         /* device copy of the n_stop stop tokens */
	int n_stop;
	int *ran;                    /* device: [0] the steps run, [1] 1 after a stop token */
	mkc_rt_draw_acc *acc;        /* device: the draw's sums, zero between draws (a batch:
	                                one a block) */
	mkc_rt_batch *reqs;          /* device: generate_batch's schedule, or NULL */
	int *heard;                  /* mapped host memory: the pairs in reqs->ring */
	struct mkc_batch_ctl *ctl;   /* device: what block 0 tells the grid each step */
};

/* generate_batch's step, as block 0 tells it to the grid. */
struct mkc_batch_ctl {
	unsigned long long epoch[MKC_NPLANS];   /* each plan's steps, from the host's count */
	int plan, nr;                /* the step's plan and rows (0: the batch is done) */
	int steps;                   /* steps run */
};

/* The grid barriers of generate's steps: two a step, and one a phase of
 * the draw after each step that takes a new token (of np phases). */
static MKC_HD unsigned long long MKC_UNUSED
mkc_gen_barriers(int steps, int n_prompt, int np)
{
	const int mine = steps - (n_prompt - 1);
	return 2ULL * (unsigned long long)steps + (unsigned long long)(mine > 0 ? mine : 0) *
							 (unsigned long long)np;
}

/*
 * After generate's step j: the grid meets, draws the next token in phases
 * (below), block 0 writes it, and the grid meets again. Nonzero: stop
 * (a stop token, or a wait past its time).
 */
static __device__ __forceinline__ int
mkc_gen_take(struct mkc_model *m, unsigned long long *counter, unsigned long long bar0,
	     long long timeout_cycles, const struct mkc_gen_io &io, int j)
{
#if MKC_CAN_GENERATE
	unsigned long long *bar = &counter[MKC_NEVENTS];
	__shared__ mkc_rt_sample_scratch sh;
	int kinds[MKC_DRAW_MAX_PHASES];
	const int np = mkc_rt_draw_plan(&io.s, MKC_GEN_VOCAB, kinds);
	unsigned long long nbar = mkc_gen_barriers(j, io.n_prompt, np);   /* the steps' before */
	/* this block's share of the vocabulary */
	const int64_t lo = MKC_GEN_VOCAB * (int64_t)blockIdx.x / MKC_NWORKERS,
		      hi = MKC_GEN_VOCAB * ((int64_t)blockIdx.x + 1) / MKC_NWORKERS;
	if (mkc_grid_sync(m, bar, bar0 + ++nbar * MKC_NWORKERS, timeout_cycles))
		return 1;
	const bool mine = j >= io.n_prompt - 1;   /* a new token, not the prompt's */
	for (int p = 0; mine && p < np; p++) {
		mkc_rt_draw_begin(p, kinds, io.logits, MKC_GEN_LOGITS_F16, &io.s, io.acc, &sh,
				  blockIdx.x == 0);
		mkc_rt_draw_work(kinds[p], io.logits, lo, hi, MKC_GEN_LOGITS_F16, &io.s,
				 io.ctr0 + (uint64_t)j, io.acc, &sh);
		if (mkc_grid_sync(m, bar, bar0 + ++nbar * MKC_NWORKERS, timeout_cycles))
			return 1;
	}
	if (blockIdx.x == 0) {
		const int64_t tok = !mine ? io.prompt[j + 1] : mkc_rt_draw_token(np, io.acc);
		if (mine) {
			__syncthreads();   /* every lane has the token before the sums go */
			mkc_rt_draw_clear(io.acc, kinds, np);
		}
		if (threadIdx.x == 0) {
			bool stop = false;
			if (mine) {
				io.out[j - (io.n_prompt - 1)] = tok;
				for (int k = 0; k < io.n_stop; k++)
					stop = stop || io.stop[k] == tok;
			}
			io.ids[0] = tok;
			if (io.sym >= 0)
				m->sym[io.sym] += io.nnew;
			if (io.pos)
				io.pos[0] = io.sym >= 0 ? m->sym[io.sym] : io.pos0 + j + 1;
#if MKC_MAX_SEQS
			m->pages.pos[0] = io.pos0 + j + 1;   /* sequence 0's next row */
#endif
			mkc_fill_symvals(m);
			io.ran[0] = j + 1;
			io.ran[1] = stop;
		}
	}
	/* the barrier's release publishes block 0's writes above */
	return mkc_grid_sync(m, bar, bar0 + ++nbar * MKC_NWORKERS, timeout_cycles) ||
	       *(volatile int *)&io.ran[1];
#else
	(void)m, (void)counter, (void)bar0, (void)timeout_cycles, (void)io, (void)j;
	return 1;
#endif
}

/* Before generate_batch's step j: block 0 plans it, the grid meets; nonzero: stop. */
static __device__ __forceinline__ int
mkc_batch_plan(struct mkc_model *m, unsigned long long *counter, unsigned long long bar0,
	       long long timeout_cycles, const struct mkc_gen_io &io, int j)
{
#if MKC_MAX_SEQS && MKC_CAN_GENERATE
	struct mkc_batch_ctl *c = io.ctl;
	if (blockIdx.x == 0 && threadIdx.x == 0) {
		mkc_rt_batch *b = io.reqs;
		const int heard = b->heard;
		mkc_rt_batch_take(b);
		if (b->heard != heard) {
			__threadfence_system();   /* the ring's pairs before their count, for the host */
			*(volatile int *)io.heard = b->heard;
		}
		const int nr = b->left > 0 ? mkc_rt_batch_plan(b) : 0;
		if (nr > 0) {
			if (MKC_GEN_CHUNK_SYM >= 0)
				m->sym[MKC_GEN_CHUNK_SYM] = nr;
			mkc_fill_symvals(m);
			c->plan = MKC_STEP_PLAN(m->sym);
			c->epoch[c->plan]++;
			c->steps = j + 1;
		}
		c->nr = nr;
	}
	/* three barriers a step: this one, after the step, after the draws */
	return mkc_grid_sync(m, &counter[MKC_NEVENTS], bar0 + (3ULL * (unsigned long long)j + 1) *
							     MKC_NWORKERS, timeout_cycles) ||
	       *(volatile int *)&c->nr == 0;
#else
	(void)m, (void)counter, (void)bar0, (void)timeout_cycles, (void)io, (void)j;
	return 1;
#endif
}

/* After generate_batch's step j: the grid meets, draws a row a block, and meets again. */
static __device__ __forceinline__ int
mkc_batch_draw(struct mkc_model *m, unsigned long long *counter, unsigned long long bar0,
	       long long timeout_cycles, const struct mkc_gen_io &io, int j)
{
#if MKC_MAX_SEQS && MKC_CAN_GENERATE
	unsigned long long *bar = &counter[MKC_NEVENTS];
	const unsigned long long k = 3ULL * (unsigned long long)j + 1;
	if (mkc_grid_sync(m, bar, bar0 + (k + 1) * MKC_NWORKERS, timeout_cycles))
		return 1;
	__shared__ mkc_rt_sample_scratch sh;
	const mkc_rt_batch *b = io.reqs;
	const int nd = *(const volatile int *)&b->nd;
	const size_t row = (size_t)MKC_GEN_VOCAB * (MKC_GEN_LOGITS_F16 ? 2 : 4);
	for (int r = blockIdx.x; r < nd; r += MKC_NWORKERS) {
		const int64_t t = mkc_rt_sample((const char *)io.logits + (size_t)b->at[r] * row,
						MKC_GEN_VOCAB, MKC_GEN_LOGITS_F16, &b->s[r],
						(uint64_t)b->ctr[r], &sh, &io.acc[blockIdx.x]);
		if (threadIdx.x == 0)
			b->tok[r] = t;
	}
	return mkc_grid_sync(m, bar, bar0 + (k + 2) * MKC_NWORKERS, timeout_cycles);
#else
	(void)m, (void)counter, (void)bar0, (void)timeout_cycles, (void)io, (void)j;
	return 1;
#endif
}

/*
 * Generation in one launch: step j runs every queue with epoch epoch0 + j
 * + 1; at its end all blocks meet. Where the step's logits give a new
 * token, every block takes its share of the vocabulary through each phase
 * of runtime/sample.h's draw (the argmax alone where greedy), the grid
 * meeting after each. Block 0 then takes the next token (the prompt's, or
 * the draw's), writes it and the next position, advances the cache count
 * (and the symbolic values that follow it) and clears the draw's sums, and
 * all meet again; after a stop token all blocks leave there, and *io.ran
 * says how many steps ran.
 *
 * With io.steps 0 it is one step of io.plan with epoch epoch0 + 1 and
 * nothing after it (mkc_step): one kernel for both, so that the step's
 * code is compiled once (each kernel would inline its own copy).
 *
 * With io.reqs it is generate_batch in one launch: before step j block 0
 * takes the last step's tokens and plans this one (runtime/sched.h: the
 * admissions, the rows, their sequences and positions where the bodies
 * read them, the chunk's size and so the plan), and the grid meets; after
 * the step the grid draws the rows that give tokens, a block a row
 * (mkc_batch_plan, mkc_batch_draw). The host hears the tokens from a ring
 * while it runs.
 */
static __global__ void MKC_LAUNCH_BOUNDS
mkc_kernel(struct mkc_model *m, unsigned long long *counter, unsigned long long epoch0,
	   unsigned long long bar0, long long timeout_cycles, struct mkc_gen_io io)
{
	const bool gen = io.steps > 0, many = MKC_MAX_SEQS && MKC_CAN_GENERATE && io.reqs != NULL;
	for (int j = 0; many || j < (gen ? io.steps : 1); j++) {
		if (many && mkc_batch_plan(m, counter, bar0, timeout_cycles, io, j))
			return;
		const int plan = many ? *(volatile int *)&io.ctl->plan
				      : gen ? MKC_DECODE_PLAN : io.plan;
		const unsigned long long epoch = many ? *(volatile unsigned long long *)&io.ctl->epoch[plan]
						      : epoch0 + (unsigned long long)j + 1;
		if (mkc_run_queue(mkc_model_view(m), counter, plan, epoch, timeout_cycles,
				  gen || many ? (io.prof0 + j) % MKC_PROF_SLOTS : io.prof0) ||
		    (many ? mkc_batch_draw(m, counter, bar0, timeout_cycles, io, j)
			   : !gen || mkc_gen_take(m, counter, bar0, timeout_cycles, io, j)))
			return;
	}
}

/*
 * The kernel may take MKC_DYN_SMEM bytes of dynamic shared memory: asked
 * for whatever the size, since the default allowance is 48 KB less the
 * kernel's static shared memory (33 KB of it in a chunked .hip through
 * tests/gpu/hip_on_cuda.h, whose 33 KB tile then found no room).
 */
static int
mkc_allow_dyn_smem(mkc_host *m)
{
#if MKC_DYN_SMEM > 0
	/* by address: HIP declares no overload for a kernel's own type */
	if (MKC_GPU(m, cudaFuncSetAttribute((const void *)mkc_kernel,
					    cudaFuncAttributeMaxDynamicSharedMemorySize, MKC_DYN_SMEM)))
		return -1;
	return 0;
#else
	(void)m;
	return 0;
#endif
}

/*
 * The workers' tables (MKC_DEVICE_TABLES: the file's device arrays) from
 * their host data, NAME_h: an initialised device array costs nvcc and ptxas
 * a quarter of a 1B-sized file's compile, a copy at creation microseconds.
 */
static int
mkc_upload_tables(mkc_host *m)
{
#define MKC_UPLOAD(t) \
	if (MKC_GPU(m, cudaMemcpyToSymbol(t, t##_h, sizeof t##_h))) \
		return -1;
	MKC_DEVICE_TABLES(MKC_UPLOAD)
#undef MKC_UPLOAD
	/* the tables of dimensions (MKC_DEVICE_DIMS) from their indexes into
	 * mkc_dim_set, NAME_ix (emit.c's put_dim_indexes says why) */
	size_t most = 0;
#define MKC_MOST(t) most = sizeof t##_ix > most ? sizeof t##_ix : most;
	MKC_DEVICE_DIMS(MKC_MOST)
#undef MKC_MOST
	mkc_rt_dim *d = (mkc_rt_dim *)malloc(most / sizeof(int) * sizeof *d);
	if (!d) {
		mkc_seterr(m, "out of host memory for the task tables (%zu bytes)",
			   most / sizeof(int) * sizeof *d);
		return -1;
	}
	int rc = 0;
#define MKC_UPLOAD_DIMS(t) \
	if (!rc) { \
		for (size_t i = 0; i < sizeof t##_ix / sizeof(int); i++) \
			d[i] = mkc_dim_set[t##_ix[i]]; \
		rc = MKC_GPU(m, cudaMemcpyToSymbol(t, d, sizeof t)) ? -1 : 0; \
	}
	MKC_DEVICE_DIMS(MKC_UPLOAD_DIMS)
#undef MKC_UPLOAD_DIMS
	free(d);
	return rc;
}

/*
 * The TMA tiles' tensor maps (backends/cuda/tma.h): on an sm_90 device
 * whose driver has the encoder, a map for every tensor a tile may read
 * through one, a bf16 matrix [rows, k] with k a multiple of 64 (an
 * activation or a weight; an input's pointer changes each step, so a
 * product reading one is emitted without maps), made before the first
 * launch and again for a weight bound since (its pointer changed). A map
 * that will not encode turns TMA off for the model: the tiles then load
 * by cp.async, as where there is none.
 */
static int
mkc_tma_create(mkc_host *m, int dev)
{
#if MKC_TMA
	m->tma_enc = mkc_tma_find_encoder(dev);
	if (!m->tma_enc)
		return 0;
	const size_t bytes = MKC_NTENSORS * sizeof *m->tmap;
	m->tmap_h = (struct mkc_tmap *)aligned_alloc(alignof(struct mkc_tmap), bytes);
	if (!m->tmap_h) {
		mkc_seterr(m, "out of host memory for the tensor maps (%zu bytes)", bytes);
		return -1;
	}
	memset(m->tmap_h, 0, bytes);
	return MKC_GPU(m, cudaMalloc((void **)&m->tmap, bytes));
#else
	(void)m, (void)dev;
	return 0;
#endif
}

static int
mkc_tmaps(mkc_host *m)
{
#if MKC_TMA
	if (!m->tma_enc)
		return 0;
	int made = 0;
	for (int t = 0; t < MKC_NTENSORS; t++) {
		const mkc_rt_tensor_info *ti = &mkc_tensors[t];
		const mkc_rt_dim *k = &ti->dims[1];
		if ((ti->kind != MKC_RT_ACT && ti->kind != MKC_RT_WEIGHT) || ti->dtype != 16 ||
		    ti->esize != 2 || ti->rank != 2 || k->s[0] >= 0 || k->s[1] >= 0 || k->c % 64 ||
		    !m->buf[t] || m->tmap_of[t] == m->buf[t])
			continue;
		const int64_t rows = mkc_numel(m, t, 1) / k->c;
		if (rows < 1 || mkc_tma_map(m->tma_enc, &m->tmap_h[t], m->buf[t], rows, k->c,
					    ti->kind == MKC_RT_WEIGHT ? MKC_TMA_WROWS : MKC_MM_TM)) {
			m->tma_enc = NULL;   /* every tile by cp.async */
			return 0;
		}
		m->tmap_of[t] = m->buf[t];
		made = 1;
	}
	return made ? MKC_GPU(m, mkc_copy(m->stream, m->tmap, m->tmap_h,
					  MKC_NTENSORS * sizeof *m->tmap_h, cudaMemcpyHostToDevice))
		    : 0;
#else
	(void)m;
	return 0;
#endif
}

static int
mkc_model_create(mkc_host **out, int nthreads, unsigned shuffle_seed, double timeout_s)
{
	(void)nthreads;
	mkc_host *m = (mkc_host *)calloc(1, sizeof *m);
	*out = m;
	if (!m)
		return -1;
	if (shuffle_seed) {
		mkc_seterr(m, "the shuffled queue is a test mode of the C target only");
		return -1;
	}
	m->timeout_s = timeout_s > 0 ? timeout_s : 10.0;
	int dev, sms, per_sm, khz, warp;
	if (MKC_GPU(m, cudaGetDevice(&dev)) ||
	    MKC_GPU(m, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
	    MKC_GPU(m, cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev)) ||
	    MKC_GPU(m, cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, dev)) ||
	    mkc_allow_dyn_smem(m) ||
	    MKC_GPU(m, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, mkc_kernel, MKC_THREADS,
								      MKC_DYN_SMEM)))
		return -1;
	if (warp != MKC_WARP) {
		mkc_seterr(m, "this file was compiled for %d-wide warps but the device runs %d", MKC_WARP,
			   warp);
		return -1;
	}
	if ((long long)per_sm * sms < MKC_NWORKERS) {
		mkc_seterr(m, "the plan needs %d co-resident blocks but this GPU holds %d (%d SMs x %d); "
			   "compile with --workers %d or fewer", MKC_NWORKERS, per_sm * sms, sms, per_sm,
			   per_sm * sms);
		return -1;
	}
	m->timeout_cycles = (long long)(m->timeout_s * (double)khz * 1000.0);
	if (MKC_GPU(m, cudaMalloc(&m->arena, MKC_ARENA_BYTES ? MKC_ARENA_BYTES : 1)) ||
	    mkc_place_tensors(m, m->arena))
		return -1;
	if (MKC_GPU(m, cudaMalloc((void **)&m->counter, (MKC_NEVENTS + 1) * sizeof *m->counter)) ||
	    MKC_GPU(m, mkc_set(m->stream, m->counter, 0, (MKC_NEVENTS + 1) * sizeof *m->counter)) ||
	    MKC_GPU(m, cudaMalloc((void **)&m->status, sizeof *m->status)) ||
	    MKC_GPU(m, mkc_set(m->stream, m->status, 0, sizeof *m->status)) ||
	    MKC_GPU(m, cudaMalloc((void **)&m->dev, sizeof *m->dev)) ||
	    MKC_GPU(m, cudaMalloc((void **)&m->qdesc, (size_t)MKC_NTASKS * MKC_QD_WORDS * sizeof(int))) ||
	    mkc_upload_tables(m))
		return -1;
	mkc_qdesc_kernel<<<(MKC_NTASKS + 255) / 256, 256, 0, m->stream>>>(m->qdesc);
	if (MKC_GPU(m, cudaGetLastError()) || MKC_GPU(m, cudaStreamSynchronize(m->stream)) ||
	    mkc_tma_create(m, dev))
		return -1;
#if MKC_PROFILE
	if (MKC_GPU(m, cudaMalloc((void **)&m->prof, MKC_PROF_WORDS * sizeof *m->prof)))
		return -1;
#endif
	return 0;
}

static void
mkc_model_destroy(mkc_host *m)
{
	if (!m)
		return;
	mkc_free_tensors(m);
	mkc_gpu_free(m->arena);
	mkc_gpu_free(m->counter);
	mkc_gpu_free(m->status);
	mkc_gpu_free(m->dev);
	mkc_gpu_free(m->qdesc);
#if MKC_TMA
	mkc_gpu_free(m->tmap);
	free(m->tmap_h);
#endif
#if MKC_PROFILE
	mkc_gpu_free(m->prof);
#endif
	free(m);
}

/* After a launch: waits for it, and turns a failure into a sentence. */
static int
mkc_finish(mkc_host *m)
{
	if (MKC_GPU(m, cudaGetLastError()) || MKC_GPU(m, cudaStreamSynchronize(m->stream)))
		return -1;
	struct mkc_status st;
	if (MKC_GPU(m, mkc_copy(m->stream, &st, m->status, sizeof st, cudaMemcpyDeviceToHost)))
		return -1;
	if (st.state == 0)
		return 0;
	if (st.state == 1 && st.who < 0)
		mkc_seterr(m, "watchdog: a block waited %.1f s at generate's barrier between steps",
			   m->timeout_s);
	else if (st.state == 1)
		mkc_seterr(m, "watchdog: task %d (%s) waited %.1f s on event %d", st.who,
			   mkc_task_name[st.who], m->timeout_s, st.ev);
	else
		mkc_rt_index_sentence(m->err, sizeof m->err, mkc_node_desc[st.who], &st.bad);
	/* start afresh: counters are out of step with the epoch (a failure
	 * here leaves the first error in err) */
	(void)mkc_set(m->stream, m->counter, 0, (MKC_NEVENTS + 1) * sizeof *m->counter);
	(void)mkc_set(m->stream, m->status, 0, sizeof *m->status);
	memset(m->epoch, 0, sizeof m->epoch);
	m->bars = 0;
	return -1;
}

static int mkc_stage(mkc_host *m, void *dst, const void *src, size_t n);

/* The tile view of the model, copied to the device before a launch. */
static int
mkc_upload_view(mkc_host *m)
{
	struct mkc_model &view = m->view;
	if (mkc_tmaps(m))
		return -1;
#if MKC_TMA
	view.tmap = m->tma_enc ? m->tmap : NULL;
#endif
	memcpy(view.buf, m->buf, sizeof view.buf);
	memcpy(view.sym, m->sym, sizeof view.sym);
	view.status = m->status;
	view.qdesc = m->qdesc;
#if MKC_PROFILE
	view.prof = m->prof;
#endif
#if MKC_MAX_SEQS
	view.pages = m->pages;
#endif
	return mkc_stage(m, m->dev, &view, sizeof view);
}

static int
mkc_set_stream(mkc_host *m, void *stream)
{
	m->stream = (cudaStream_t)stream;
	return 0;
}

/* inputs and outputs are device pointers; the step is finished on return. */
static int
mkc_step(mkc_host *m, const void *const *inputs, void *const *outputs, const int64_t *dims)
{
	if (mkc_begin_step(m, inputs, outputs, dims) || mkc_upload_view(m))
		return -1;
	const int plan = MKC_STEP_PLAN(m->sym);
	m->epoch[plan]++;
	int slot = 0;
#if MKC_PROFILE
	/* the call's next slot (a prompt's chunks in generate take one each);
	 * unrun tasks stay 0, and the trace leaves them out */
	slot = (int)(m->prof_count++ % MKC_PROF_SLOTS);
	if (MKC_GPU(m, mkc_set(m->stream, m->prof + (size_t)slot * MKC_PROF_SLOT_WORDS, 0,
				  MKC_PROF_SLOT_WORDS * sizeof *m->prof)))
		return -1;
#endif
	struct mkc_gen_io io;   /* steps 0: this one step, no token taken */
	memset(&io, 0, sizeof io);
	io.plan = plan;
	io.prof0 = slot;
	mkc_symvals_kernel<<<1, 1, 0, m->stream>>>(m->dev);
	mkc_kernel<<<MKC_NWORKERS, MKC_THREADS, MKC_PLAN_SMEM(plan), m->stream>>>(
		m->dev, m->counter, m->epoch[plan] - 1, m->bars, m->timeout_cycles, io);
	return mkc_finish(m);
}

static int mkc_generate_check(mkc_host *m, const mkc_rt_gen *g, int *steps);
#if MKC_MAX_SEQS
static void mkc_seq_reserve(mkc_host *m, int64_t n);
static void mkc_seq_grown(mkc_host *m, int64_t n);
#endif

/* mkc_begin_step for generate's launch of steps one-token steps: with
 * sequences (--max-seqs), sequence 0 gets pages for all of them at once */
static int MKC_UNUSED
mkc_gen_begin(mkc_host *m, const void *const *in, void *const *outs, const int64_t *dims,
	      int steps)
{
#if MKC_MAX_SEQS
	mkc_seq_reserve(m, steps - 1);
	const int rc = mkc_begin_step(m, in, outs, dims);
	mkc_seq_reserve(m, 0);
	return rc;
#else
	(void)steps;
	return mkc_begin_step(m, in, outs, dims);
#endif
}
static int64_t mkc_next_position(const mkc_host *m);
static void mkc_gen_dims(int64_t *dims, int64_t s);
static int mkc_gen_mask(mkc_host *m, void **buf);
static int mkc_gen_prefill(mkc_host *m, const mkc_rt_gen *g, const int64_t **prompt, int *n_prompt,
			   int *steps, int64_t *first, int *done);

/*
 * Generation: a prompt of three tokens or more in chunks, a launch each (a model
 * compiled with --max-chunk), the first new token drawn from the last
 * one's logits; then every one-token step in one launch (mkc_kernel with
 * io.steps > 0). The model's own device buffers take the inputs and
 * outputs; out is host memory.
 */
static int
mkc_generate(mkc_host *m, const mkc_rt_gen *g)
{
	int steps;
#if !MKC_CAN_GENERATE
	return mkc_generate_check(m, g, &steps);   /* says why not */
#else
	int rc = -1;
	if (mkc_generate_check(m, g, &steps))
		return -1;
	const int64_t *prompt = g->prompt;
	int n_prompt = g->n_prompt, ran[2] = {0, 0}, done = 0;   /* done: tokens out before the loop */
	int64_t tok0 = -1;
	if (mkc_gen_prefill(m, g, &prompt, &n_prompt, &steps, &tok0, &done))
		return -1;
	if (steps == 0)
		return 0;
	const int n_new = g->n_new - done;
	int64_t dims[MKC_NSYMS + 1];
	mkc_gen_dims(dims, 1);
	void *in[MKC_NINPUTS + 1] = {0}, *outs[MKC_NOUTPUTS + 1] = {0};
	int64_t *dprompt = NULL, *dout = NULL, *dstop = NULL, first[2] = {prompt[0], mkc_next_position(m)};
	int *dran = NULL, kinds[MKC_DRAW_MAX_PHASES];
	mkc_rt_draw_acc *dacc = NULL;
	struct mkc_gen_io io;
	memset(&io, 0, sizeof io);
	for (int i = 0; i < MKC_NINPUTS; i++)
		if (i == MKC_GEN_MASK ? mkc_gen_mask(m, &in[i])
				      : MKC_GPU(m, cudaMalloc(&in[i], sizeof(int64_t))) ||
					MKC_GPU(m, mkc_copy(m->stream, in[i], &first[i == MKC_GEN_IDS ? 0 : 1],
							       sizeof(int64_t), cudaMemcpyHostToDevice)))
			goto out;
	for (int o = 0; o < MKC_NOUTPUTS; o++) {
		size_t bytes = (size_t)mkc_numel(m, mkc_outputs[o], 1) *
			       (size_t)mkc_tensors[mkc_outputs[o]].esize;
		if (MKC_GPU(m, cudaMalloc(&outs[o], bytes ? bytes : 1)))
			goto out;
	}
	if (MKC_GPU(m, cudaMalloc((void **)&dprompt, (size_t)n_prompt * sizeof *dprompt)) ||
	    MKC_GPU(m, cudaMalloc((void **)&dout, (size_t)n_new * sizeof *dout)) ||
	    MKC_GPU(m, mkc_copy(m->stream, dprompt, prompt, (size_t)n_prompt * sizeof *dprompt,
				   cudaMemcpyHostToDevice)) ||
	    MKC_GPU(m, cudaMalloc((void **)&dran, sizeof ran)) ||
	    MKC_GPU(m, mkc_copy(m->stream, dran, ran, sizeof ran, cudaMemcpyHostToDevice)) ||
	    MKC_GPU(m, cudaMalloc((void **)&dacc, sizeof *dacc)) ||
	    MKC_GPU(m, mkc_set(m->stream, dacc, 0, sizeof *dacc)) ||
	    (g->n_stop &&
	     (MKC_GPU(m, cudaMalloc((void **)&dstop, (size_t)g->n_stop * sizeof *dstop)) ||
	      MKC_GPU(m, mkc_copy(m->stream, dstop, g->stop, (size_t)g->n_stop * sizeof *dstop,
				    cudaMemcpyHostToDevice)))) ||
	    mkc_gen_begin(m, (const void *const *)in, outs, dims, steps) || mkc_upload_view(m))
		goto out;
	io.ids = (int64_t *)in[MKC_GEN_IDS];
	io.pos = MKC_GEN_POS >= 0 ? (int64_t *)in[MKC_GEN_POS] : NULL;
	io.logits = outs[MKC_GEN_LOGITS];
	io.prompt = dprompt;
	io.out = dout;
	io.n_prompt = n_prompt;
	io.steps = steps;
	/* a step of generate feeds one token; sequence 0's rows count themselves in pages */
	io.sym = MKC_NCACHES && !MKC_MAX_SEQS ? mkc_caches[0].sym : -1;
	io.nnew = MKC_NCACHES && !MKC_MAX_SEQS ? 1 : 0;
	io.pos0 = first[1];
	io.s = g->s;
	io.ctr0 = (uint64_t)first[1] + 1;
	io.stop = dstop;
	io.n_stop = g->n_stop;
	io.ran = dran;
	io.acc = dacc;
#if MKC_PROFILE
	/* the slots after the prompt's chunks' (a ring: the last steps stay) */
	io.prof0 = (int)(m->prof_count % MKC_PROF_SLOTS);
	for (int j = 0; j < steps && j < MKC_PROF_SLOTS; j++)
		if (MKC_GPU(m, mkc_set(m->stream, m->prof + (size_t)((io.prof0 + j) % MKC_PROF_SLOTS) *
					  MKC_PROF_SLOT_WORDS, 0, MKC_PROF_SLOT_WORDS * sizeof *m->prof)))
			goto out;
	m->prof_count += steps;
#endif
	mkc_symvals_kernel<<<1, 1, 0, m->stream>>>(m->dev);
	mkc_kernel<<<MKC_NWORKERS, MKC_THREADS, MKC_PLAN_SMEM(MKC_DECODE_PLAN), m->stream>>>(
		m->dev, m->counter, m->epoch[MKC_DECODE_PLAN], m->bars, m->timeout_cycles, io);
	if (mkc_finish(m) ||
	    MKC_GPU(m, mkc_copy(m->stream, ran, dran, sizeof ran, cudaMemcpyDeviceToHost)))
		goto out;
	/* the steps that ran: all, or up to a stop token's */
	m->epoch[MKC_DECODE_PLAN] += (unsigned long long)ran[0];
	m->bars += mkc_gen_barriers(ran[0], n_prompt, mkc_rt_draw_plan(&g->s, MKC_GEN_VOCAB, kinds)) *
		   MKC_NWORKERS;
#if MKC_PROFILE
	m->prof_count -= steps - ran[0];
#endif
	if (io.sym >= 0)
		m->sym[io.sym] += (int64_t)ran[0] * io.nnew;
#if MKC_MAX_SEQS
	mkc_seq_grown(m, ran[0]);
#endif
	{
		const int written = ran[0] - (n_prompt - 1);
		rc = MKC_GPU(m, mkc_copy(m->stream, g->out + done, dout, (size_t)written * sizeof *dout,
					   cudaMemcpyDeviceToHost));
		if (rc == 0 && g->n_out)
			*g->n_out = done + written;
	}
out:
	for (int i = 0; i < MKC_NINPUTS; i++)
		mkc_gpu_free(in[i]);
	for (int o = 0; o < MKC_NOUTPUTS; o++)
		mkc_gpu_free(outs[o]);
	mkc_gpu_free(dprompt);
	mkc_gpu_free(dout);
	mkc_gpu_free(dstop);
	mkc_gpu_free(dran);
	mkc_gpu_free(dacc);
	return rc;
#endif
}

#if MKC_MAX_SEQS && MKC_CAN_GENERATE
#ifndef MKC_BATCH_IN_KERNEL   /* 0: the loop on the host, a launch a step (to compare) */
#define MKC_BATCH_IN_KERNEL 1
#endif

static int mkc_store(mkc_host *m, void *dst, const void *src, size_t n);

/* n bytes of device memory into host memory; 0, or -1 with err set */
static int
mkc_fetch(mkc_host *m, void *dst, const void *src, size_t n)
{
	return MKC_GPU(m, mkc_copy(m->stream, dst, src, n, cudaMemcpyDeviceToHost));
}

/* at bytes into a block carved by mkc_carve: the next place, 256-byte aligned */
static size_t MKC_UNUSED
mkc_carve(size_t *end, size_t bytes)
{
	const size_t at = *end;
	*end = (at + bytes + 255) & ~(size_t)255;
	return at;
}

/*
 * generate_batch's loop in one launch (runtime/batch.h): b and its requests
 * (host memory) go to the device with the prompts, the stop tokens and room
 * for the tokens, the pool's flags and free stack; the step's rows go where
 * the bodies read them (m->pages), its tokens into the model's ids input.
 * The tokens come back through a ring in pinned host memory (unified
 * addressing maps it into the device), which the host reads while the
 * kernel runs, calling cb for each; then the requests,
 * the pool and the table come back into b. 0, or -1 with err set (b then
 * holds what the device's copy held, so the caller can close what is open).
 */
static int MKC_UNUSED
mkc_batch_kernel(mkc_host *m, mkc_rt_batch *b, mkc_rt_on_token cb, void *user)
{
	const int n = b->n, ns = b->nseqs;
	const int64_t rows = b->rows, nt = (int64_t)ns * b->per_seq;
	const size_t lrow = (size_t)MKC_GEN_VOCAB * (MKC_GEN_LOGITS_F16 ? 2 : 4);
	int64_t words = 0, total = 0;
	for (int i = 0; i < n; i++) {
		words += b->req[i].n_prompt + b->req[i].n_stop + b->req[i].max_new;
		total += b->req[i].max_new;
	}
	size_t end = 0;
	const size_t o_b = mkc_carve(&end, sizeof(mkc_rt_batch)),
		     o_ctl = mkc_carve(&end, sizeof(struct mkc_batch_ctl)),
		     o_req = mkc_carve(&end, (size_t)n * sizeof(mkc_rt_request)),
		     o_words = mkc_carve(&end, (size_t)words * 8),
		     o_open = mkc_carve(&end, (size_t)ns),
		     o_refs = mkc_carve(&end, (size_t)MKC_NPAGES * 4),
		     o_free = mkc_carve(&end, (size_t)MKC_NPAGES * 4),
		     o_owner = mkc_carve(&end, (size_t)rows * sizeof(int)),
		     o_ids = mkc_carve(&end, (size_t)rows * 8),
		     o_ready = mkc_carve(&end, (size_t)ns * sizeof(int)),
		     o_at = mkc_carve(&end, (size_t)ns * 8), o_ctr = mkc_carve(&end, (size_t)ns * 8),
		     o_tok = mkc_carve(&end, (size_t)ns * 8),
		     o_s = mkc_carve(&end, (size_t)ns * sizeof(mkc_rt_sampling)),
		     o_acc = mkc_carve(&end, (size_t)MKC_NWORKERS * sizeof(mkc_rt_draw_acc)),
		     o_logits = mkc_carve(&end, (size_t)rows * lrow);
	char *d = NULL;
	int64_t *ring = NULL, *dring = NULL;
	mkc_rt_request *hreq = (mkc_rt_request *)malloc((size_t)n * sizeof *hreq);
	int64_t *hwords = (int64_t *)malloc((size_t)(words ? words : 1) * 8);
	if (!hreq || !hwords) {
		free(hreq), free(hwords);
		mkc_seterr(m, "out of memory for a batch of %d requests", n);
		return -1;
	}
	/* the requests as the device sees them: their words in one array (offsets
	 * into it until the array has its place) */
	int64_t w = 0;
	for (int i = 0; i < n; i++) {
		const mkc_rt_request *r = &b->req[i];
		hreq[i] = *r;
		memcpy(hwords + w, r->prompt, (size_t)r->n_prompt * 8);
		hreq[i].prompt = (const int64_t *)(uintptr_t)(w * 8), w += r->n_prompt;
		if (r->n_stop)
			memcpy(hwords + w, r->stop, (size_t)r->n_stop * 8);
		hreq[i].stop = (const int64_t *)(uintptr_t)(w * 8), w += r->n_stop;
		hreq[i].out = (int64_t *)(uintptr_t)(w * 8), w += r->max_new;
	}
	int rc = MKC_GPU(m, cudaMalloc((void **)&d, end)) ||
		 MKC_GPU(m, cudaHostAlloc((void **)&ring, (size_t)(2 * total + 2) * 8, 0)) ||
		 MKC_GPU(m, cudaHostGetDevicePointer((void **)&dring, ring, 0));
	mkc_rt_batch db = *b;
	struct mkc_batch_ctl ctl;
	memset(&ctl, 0, sizeof ctl);
	memcpy(ctl.epoch, m->epoch, sizeof ctl.epoch);
	if (rc == 0) {
		const uintptr_t base = (uintptr_t)(d + o_words);
		for (int i = 0; i < n; i++) {
			hreq[i].prompt = (const int64_t *)(base + (uintptr_t)hreq[i].prompt);
			hreq[i].stop = (const int64_t *)(base + (uintptr_t)hreq[i].stop);
			hreq[i].out = (int64_t *)(base + (uintptr_t)hreq[i].out);
		}
		ring[2 * total] = 0;   /* the count, an int, in the last word */
		db.req = (mkc_rt_request *)(d + o_req);
		db.open = (unsigned char *)(d + o_open), db.dirty = NULL, db.len = NULL;
		db.table = m->pages.table;
		db.refs = (int32_t *)(d + o_refs), db.free_pages = (int32_t *)(d + o_free);
		db.owner = (int *)(d + o_owner), db.seq = m->pages.seq;
		db.ids = (int64_t *)(d + o_ids), db.pos = m->pages.pos;
		db.ready = (int *)(d + o_ready), db.at = (int64_t *)(d + o_at);
		db.ctr = (int64_t *)(d + o_ctr), db.tok = (int64_t *)(d + o_tok);
		db.s = (mkc_rt_sampling *)(d + o_s);
		db.ring = dring, db.heard = 0;
		db.nd = 0;
		rc = mkc_store(m, d + o_b, &db, sizeof db) || mkc_store(m, d + o_ctl, &ctl, sizeof ctl) ||
		     mkc_store(m, d + o_req, hreq, (size_t)n * sizeof *hreq) ||
		     (words && mkc_store(m, d + o_words, hwords, (size_t)words * 8)) ||
		     mkc_store(m, d + o_open, b->open, (size_t)ns) ||
		     mkc_store(m, d + o_refs, b->refs, (size_t)MKC_NPAGES * 4) ||
		     mkc_store(m, d + o_free, b->free_pages, (size_t)MKC_NPAGES * 4);
	}
	const int sent = rc == 0;   /* the device's copy is b's: from here on, it is the truth */
	/* the step's buffers: ids, the positions (the rows' own), the logits */
	for (int i = 0; rc == 0 && i < MKC_NINPUTS; i++)
		m->buf[mkc_inputs[i]] = i == MKC_GEN_IDS ? (void *)(d + o_ids) : (void *)m->pages.pos;
	for (int o = 0; rc == 0 && o < MKC_NOUTPUTS; o++)
		m->buf[mkc_outputs[o]] = o == MKC_GEN_LOGITS ? (void *)(d + o_logits) : NULL;
	struct mkc_gen_io io;
	memset(&io, 0, sizeof io);
	io.logits = d + o_logits;
	io.acc = (mkc_rt_draw_acc *)(d + o_acc);
	io.reqs = (mkc_rt_batch *)(d + o_b);
	io.heard = (int *)(dring + 2 * total);
	io.ctl = (struct mkc_batch_ctl *)(d + o_ctl);
#if MKC_PROFILE
	io.prof0 = (int)(m->prof_count % MKC_PROF_SLOTS);
	rc = rc || MKC_GPU(m, mkc_set(m->stream, m->prof, 0, MKC_PROF_WORDS * sizeof *m->prof));
#endif
	rc = rc || mkc_upload_view(m);
	if (rc == 0) {
		mkc_kernel<<<MKC_NWORKERS, MKC_THREADS, MKC_DYN_SMEM, m->stream>>>(
			m->dev, m->counter, 0, m->bars, m->timeout_cycles, io);
		/* the tokens as they come, until the kernel ends; then the rest */
		const int *count = (const int *)(ring + 2 * total);
		for (int heard = 0, running = 1; running;) {
			running = cudaStreamQuery(m->stream) == cudaErrorNotReady;
			const int got = __atomic_load_n(count, __ATOMIC_ACQUIRE);
			for (; heard < got; heard++)
				if (cb)
					cb(user, (int)ring[2 * heard], ring[2 * heard + 1]);
		}
		rc = mkc_finish(m);
	}
	/* back into b: what the device's copy holds, after an error too */
	int got_back = 0;
	if (sent) {
		got_back = !mkc_fetch(m, &db, d + o_b, sizeof db) &&
			   !mkc_fetch(m, &ctl, d + o_ctl, sizeof ctl) &&
			   !mkc_fetch(m, hreq, d + o_req, (size_t)n * sizeof *hreq) &&
			   (!words || !mkc_fetch(m, hwords, d + o_words, (size_t)words * 8)) &&
			   !mkc_fetch(m, b->open, d + o_open, (size_t)ns) &&
			   !mkc_fetch(m, b->refs, d + o_refs, (size_t)MKC_NPAGES * 4) &&
			   !mkc_fetch(m, b->free_pages, d + o_free, (size_t)MKC_NPAGES * 4) &&
			   !mkc_fetch(m, b->table, m->pages.table, (size_t)nt * 4);
		rc = rc || !got_back;
	}
	if (got_back) {
		const uintptr_t base = (uintptr_t)(d + o_words);
		for (int i = 0; i < n; i++) {
			mkc_rt_request *r = &b->req[i];
			r->n_out = hreq[i].n_out, r->seq = hreq[i].seq, r->fed = hreq[i].fed;
			r->done = hreq[i].done;
			memcpy(r->out, hwords + ((uintptr_t)hreq[i].out - base) / 8, (size_t)r->n_out * 8);
		}
		b->next = db.next, b->left = db.left, b->nfree = db.nfree;
		for (int q = 0; q < ns; q++)
			b->dirty[q] = 1;
	} else if (sent) {   /* nothing came back: every page free, every sequence closed */
		for (int q = 0; q < ns; q++)
			b->open[q] = 0, b->dirty[q] = 1;
		for (int64_t i = 0; i < nt; i++)
			b->table[i] = -1;
		for (int64_t i = 0; i < MKC_NPAGES; i++)
			b->refs[i] = 0, b->free_pages[i] = (int32_t)i;
		b->nfree = MKC_NPAGES;
		for (int i = 0; i < n; i++)
			b->req[i].seq = -1;
	}
	if (rc == 0) {
		memcpy(m->epoch, ctl.epoch, sizeof ctl.epoch);
		m->bars += (3ULL * (unsigned long long)ctl.steps + 1) * MKC_NWORKERS;
#if MKC_PROFILE
		m->prof_count += ctl.steps;
#endif
	}
	for (int i = 0; i < MKC_NINPUTS; i++)
		m->buf[mkc_inputs[i]] = NULL;
	for (int o = 0; o < MKC_NOUTPUTS; o++)
		m->buf[mkc_outputs[o]] = NULL;
	mkc_gpu_free(d);
	if (ring)
		(void)cudaFreeHost(ring);
	free(hreq), free(hwords);
	return rc ? -1 : 0;
}
#endif

/*
 * Phase p of the draws from rows rows of logits (row which[r], or r), nb
 * blocks a row: block b of row r passes over its share of the row, as
 * s[r] says for the position pos[r], its sums into acc[r] (zero before
 * phase 0). A row whose draw has fewer phases waits out the rest.
 */
static __global__ void
mkc_sample_phase(int p, int nb, const void *logits, const mkc_rt_sampling *s, const int64_t *pos,
		 const int64_t *which, mkc_rt_draw_acc *acc)
{
	__shared__ mkc_rt_sample_scratch sh;
	const int64_t r = blockIdx.x / nb, b = blockIdx.x % nb;
	int kinds[MKC_DRAW_MAX_PHASES];
	const int np = mkc_rt_draw_plan(&s[r], MKC_GEN_VOCAB, kinds);
	if (p >= np)
		return;
	const void *x = (const char *)logits + (size_t)(which ? which[r] : r) *
						       (size_t)MKC_GEN_VOCAB * (MKC_GEN_LOGITS_F16 ? 2 : 4);
	mkc_rt_draw_begin(p, kinds, x, MKC_GEN_LOGITS_F16, &s[r], &acc[r], &sh, b == 0);
	mkc_rt_draw_work(kinds[p], x, MKC_GEN_VOCAB * b / nb, MKC_GEN_VOCAB * (b + 1) / nb,
			 MKC_GEN_LOGITS_F16, &s[r], (uint64_t)pos[r], &acc[r], &sh);
}

/* Thread r: row r's token, after every phase, into out[r]. */
static __global__ void
mkc_sample_token(int64_t rows, const mkc_rt_sampling *s, const mkc_rt_draw_acc *acc,
		 int64_t *out)
{
	const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= rows)
		return;
	int kinds[MKC_DRAW_MAX_PHASES];
	out[r] = mkc_rt_draw_token(mkc_rt_draw_plan(&s[r], MKC_GEN_VOCAB, kinds), &acc[r]);
}

/*
 * rows rows of logits (device memory), row which[r] (NULL: r), drawn on
 * the device as s[r] says for the position pos[r]; the tokens into out
 * (host memory). Each phase of the draw (runtime/sample.h) is a launch
 * over every row, several blocks a row (about two blocks an SM in all).
 * The settings and tokens cross in a small copy each way.
 */
static int
mkc_sample_rows(mkc_host *m, const void *logits, int64_t rows, const mkc_rt_sampling *s,
		const int64_t *pos, int64_t *out, const int64_t *which)
{
	const size_t ns = (size_t)rows * sizeof *s, np8 = (size_t)rows * sizeof *pos,
		     na = (size_t)rows * sizeof(mkc_rt_draw_acc);
	int kinds[MKC_DRAW_MAX_PHASES], phases = 0;
	for (int64_t r = 0; r < rows; r++) {
		const int np = mkc_rt_draw_plan(&s[r], MKC_GEN_VOCAB, kinds);
		phases = np > phases ? np : phases;
	}
	int nb = (int)((264 + rows - 1) / rows);
	nb = nb < 1 ? 1 : nb > 64 ? 64 : nb;
	char *d = NULL;
	int rc = MKC_GPU(m, cudaMalloc((void **)&d, na + ns + 3 * np8)) ||
		 MKC_GPU(m, mkc_set(m->stream, d, 0, na)) ||
		 MKC_GPU(m, mkc_copy(m->stream, d + na, s, ns, cudaMemcpyHostToDevice)) ||
		 MKC_GPU(m, mkc_copy(m->stream, d + na + ns, pos, np8, cudaMemcpyHostToDevice)) ||
		 (which && MKC_GPU(m, mkc_copy(m->stream, d + na + ns + 2 * np8, which, np8,
						  cudaMemcpyHostToDevice)));
	mkc_rt_draw_acc *acc = (mkc_rt_draw_acc *)d;
	const mkc_rt_sampling *ds = (const mkc_rt_sampling *)(d + na);
	int64_t *dpos = (int64_t *)(d + na + ns), *dout = (int64_t *)(d + na + ns + np8);
	const int64_t *dwhich = which ? (const int64_t *)(d + na + ns + 2 * np8) : NULL;
	for (int p = 0; rc == 0 && p < phases; p++) {
		mkc_sample_phase<<<(unsigned)(rows * nb), MKC_THREADS, 0, m->stream>>>(p, nb, logits, ds, dpos,
									 dwhich, acc);
		rc = MKC_GPU(m, cudaGetLastError());
	}
	if (rc == 0) {
		mkc_sample_token<<<(unsigned)((rows + 127) / 128), 128, 0, m->stream>>>(rows, ds, acc, dout);
		rc = MKC_GPU(m, cudaGetLastError()) ||
		     MKC_GPU(m, mkc_copy(m->stream, out, dout, np8, cudaMemcpyDeviceToHost));
	}
	mkc_gpu_free(d);
	return rc ? -1 : 0;
}

/* Hooks for runtime/host.h: buffers and weights in device memory. */
static int
mkc_alloc_buf(mkc_host *m, size_t n, void **p)
{
	return MKC_GPU(m, cudaMalloc(p, n));
}

static int
mkc_store(mkc_host *m, void *dst, const void *src, size_t n)
{
	return MKC_GPU(m, mkc_copy(m->stream, dst, src, n, cudaMemcpyHostToDevice));
}

/*
 * A copy the next launch reads, not waited for: the launch follows it on
 * the stream, and src (the model's own host memory, written again only in
 * a later step, after this one's mkc_finish) outlives it. Each waited-for
 * copy before a launch cost a round trip to the device: a step of a
 * --max-seqs file made four (its rows, positions, page table and the
 * view) where a plain file's made one.
 */
static int
mkc_stage(mkc_host *m, void *dst, const void *src, size_t n)
{
	return MKC_GPU(m, cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, m->stream));
}

/* rows rows of width bytes, pitch bytes apart; either side may be host
 * or device memory (unified addressing tells which) */
static int
mkc_copy_rows(mkc_host *m, void *dst, size_t dpitch, const void *src, size_t spitch,
	      size_t width, size_t rows)
{
	return MKC_GPU(m, mkc_copy2d(m->stream, dst, dpitch, src, spitch, width, rows));
}

static void
mkc_free_buf(void *p)
{
	mkc_gpu_free(p);
}

#if MKC_PROFILE
/* The timeline, its clock ticks made nanoseconds (0, an unrun task, stays 0). */
static int
mkc_prof_fetch(mkc_host *m, uint64_t *dst)
{
	if (MKC_GPU(m, mkc_copy(m->stream, dst, m->prof, MKC_PROF_WORDS * sizeof *dst,
				cudaMemcpyDeviceToHost)))
		return -1;
	for (size_t s = 0; MKC_PROF_TICK_NS != 1 && s < (size_t)MKC_PROFILE_STEPS; s++) {
		uint64_t *p = dst + s * MKC_PROF_SLOT_WORDS;
		for (int w = 0; w < MKC_NWORKERS; w++)
			p[MKC_NSYMS + 2 * w] *= MKC_PROF_TICK_NS;
		for (int t = 0; t < MKC_NTASKS; t++)
			for (int k = 0; k < 3; k++)
				p[MKC_NSYMS + 2 * MKC_NWORKERS + 4 * t + k] *= MKC_PROF_TICK_NS;
	}
	return 0;
}
#endif

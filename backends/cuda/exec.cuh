/*
 * exec.cuh - the CUDA target's runtime, embedded after the tables of an
 * emitted .cu file: the persistent kernel, the event protocol on the GPU,
 * and the host object that owns device memory.
 *
 * One launch per step. Block w is worker w and runs queue w; the grid has
 * exactly MKC_NWORKERS blocks, and create refuses a GPU on which that many
 * blocks cannot be resident at once (a block spinning on an event whose
 * producer never got an SM would hang the step).
 *
 * Event protocol, per task:
 *   wait:   thread 0 polls the 64-bit counter with ld.acquire.gpu until it
 *           reaches threshold * epoch; __syncthreads() hands the result
 *           (and what the acquire made visible) to the block;
 *   run:    all threads of the block share the tile's loops;
 *   signal: __syncthreads() (the block's writes are done), thread 0
 *           red.release.gpu (add 1) on the counter of each event.
 * (The barrier-then-release and acquire-then-barrier pairs are the PTX
 * memory model's way for a block to publish and to consume; a full fence
 * per task, as before, cost more.)
 * What a task is (its node, box, event, signals) comes from its descriptor,
 * built on the device at create time and copied into shared memory three
 * tasks ahead (mkc_qdesc_kernel). Before a task's wait, thread 0 may also
 * ask for the weight rows of the next matvec (the weight ring, ring.cuh;
 * compiled in only with -DMKC_RING_ON, as it measured slower).
 * Counters are never reset; the epoch grows by one a step. A watchdog in
 * the wait (clock64) gives up after timeout_s and reports task and event;
 * every block then leaves. A tile that finds bad data (a Gather index out
 * of range) reports it the same way.
 *
 * Symbolic-valued tensors (past_len + 1) are written by a one-thread
 * kernel launched just before the persistent one, on the same stream.
 */

#define MKC_THREADS 256

struct mkc_model {              /* what tile functions see, in device memory */
	void *buf[MKC_NTENSORS];
	int64_t sym[MKC_NSYMS + 1];
	int *status;                /* [0] 0 ok, 1 watchdog, 2 bad data; [1] task; [2] event or line */
	const int *qdesc;           /* the task descriptors (mkc_qdesc_kernel) */
#if MKC_PROFILE
	unsigned long long *prof;   /* the timeline (runtime/profile.h) */
#endif
};

static __device__ void MKC_UNUSED
mkc_dev_fail(struct mkc_model *m, int line)
{
	if (atomicCAS(&m->status[0], 0, 2) == 0)
		m->status[2] = line;
}

#define MKC_FAIL(m, ...) mkc_dev_fail(m, __LINE__)

struct mkc_cuda_host {
	void *buf[MKC_NTENSORS];    /* device pointers */
	unsigned char owned[MKC_NTENSORS];
	int64_t sym[MKC_NSYMS + 1];
	struct mkc_model *dev;      /* the device copy of the tile view */
	void *arena;                /* the intermediates, placed by the memory pass */
	unsigned long long *counter;
	int *status;
	int *qdesc;                 /* device memory */
	unsigned long long epoch;
	unsigned long long bars;    /* arrivals at generate's barrier so far */
	double timeout_s;
	long long timeout_cycles;
	char err[512];
#if MKC_PROFILE
	unsigned long long *prof;   /* device memory */
	long long prof_count;       /* steps recorded since the last call began */
#endif
};

typedef struct mkc_cuda_host mkc_host;

static void
mkc_seterr(mkc_host *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int64_t mkc_numel(const mkc_host *m, int t, int use_max);
static int mkc_begin_step(mkc_host *m, const void *const *inputs, void *const *outputs,
			  const int64_t *dims);

static int
mkc_cuda_check(mkc_host *m, cudaError_t e, const char *what, int line)
{
	if (e == cudaSuccess)
		return 0;
	mkc_seterr(m, "%s failed (line %d of the runtime): %s", what, line, cudaGetErrorString(e));
	return -1;
}

/* Every CUDA call goes through this: it names the call and the line. */
#define MKC_CUDA(m, call) mkc_cuda_check(m, (call), #call, __LINE__)

static __global__ void
mkc_symvals_kernel(struct mkc_model *m)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		mkc_fill_symvals(m);
}

static __device__ __forceinline__ unsigned long long
mkc_ld_acquire(const unsigned long long *p)
{
	unsigned long long v;
	asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

static __device__ __forceinline__ void
mkc_red_release(unsigned long long *p)
{
	asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(p) : "memory");
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
			if (*(volatile int *)&m->status[0]) {
				ok = 0;
				break;
			}
			if (clock64() - start > timeout_cycles) {
				if (atomicCAS(&m->status[0], 0, 1) == 0) {
					m->status[1] = who;
					m->status[2] = ev;
				}
				ok = 0;
				break;
			}
			__nanosleep(64);
		}
		stop = !ok;
	}
	__syncthreads();
	return stop;
}

#if MKC_PROFILE
/* Nanoseconds on the clock every SM shares. */
static __device__ __forceinline__ unsigned long long
mkc_prof_now(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

static __device__ __forceinline__ unsigned
mkc_prof_smid(void)
{
	unsigned s;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
	return s;
}

/* stamp k of a task in this step's slot, by thread 0 */
#define MKC_PROF_TASK(task, k, v) \
	(prof[MKC_NSYMS + 2 * MKC_NWORKERS + 4 * (task) + (k)] = (v))
#else
#define MKC_PROF_TASK(task, k, v) ((void)0)
#endif

/*
 * Task descriptors: what a worker needs of a task, in 128 contiguous bytes,
 * one per queue position (worker w's run from mkc_queue_start[w]), built
 * on the device when the model is created (mkc_qdesc_kernel) from the
 * tables. Read from the tables at run time, a task cost four dependent
 * loads (queue, task, box, symbols) before its wait: 1.8 us a task when
 * they hit L1, three times that when the weights had pushed them out. A
 * worker's warp 1 copies descriptor i + MKC_QD_AHEAD into shared memory
 * while task i runs (cp.async), so a task's descriptor is there before the
 * worker gets to it.
 */
enum {
	MKC_QD_TASK, MKC_QD_NODE, MKC_QD_EV, MKC_QD_THR, MKC_QD_SIG0, MKC_QD_S0, MKC_QD_S1,
	MKC_QD_RANK,        /* -1: symbolic bounds, evaluated at run time (mkc_task_bounds) */
	MKC_QD_ROWS,        /* the weight the matvec reads through the ring, or -1 */
	MKC_QD_ROW_BYTES, MKC_QD_ROWS_BYTES,
	MKC_QD_ROWS_OFF = 12,   /* int64: the tile's first row, bytes into the weight */
	MKC_QD_LO = 14, MKC_QD_HI = 22,
	MKC_QD_WORDS = 32
};
#define MKC_QD_SLOTS 8      /* descriptors a worker holds in shared memory */
#define MKC_QD_AHEAD 3      /* how far ahead of the running task they are copied */

/* emitted after the tile functions: a node's weight rows (ring.cuh), or NULL */
static __device__ const int *mkc_node_rows_of(int node);

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
	int ok = rank <= 8;
	for (int k = 0; ok && k < 2 * rank; k++) {
		const mkc_rt_dim x = mkc_task_box[b + k];
		ok = (x.s < 0 || x.k == 0) && x.c >= 0 && x.c <= 0x7fffffff;
		d[(k & 1 ? MKC_QD_HI : MKC_QD_LO) + k / 2] = (int)x.c;
	}
	d[MKC_QD_RANK] = ok ? rank : -1;
	const int *r = mkc_node_rows_of(node);
	d[MKC_QD_ROWS] = -1;
	if (r && ok && (MKC_RING ? r[3] && MKC_RING_ROWS_FIT(r[2]) : r[2] % 16 == 0) &&
	    (long long)(d[MKC_QD_HI + r[1]] - d[MKC_QD_LO + r[1]]) * r[2] <= 0x7fffffff) {
		const long long lo = d[MKC_QD_LO + r[1]], hi = d[MKC_QD_HI + r[1]];
		d[MKC_QD_ROWS] = r[0];
		d[MKC_QD_ROW_BYTES] = r[2];
		d[MKC_QD_ROWS_BYTES] = (int)((hi - lo) * r[2]);
		*(long long *)&d[MKC_QD_ROWS_OFF] = lo * r[2];
	}
}

/* Warp 1: descriptor i of this worker's gd into slot i of dq, asynchronously. */
static __device__ __forceinline__ void
mkc_qdesc_fetch(int (*dq)[MKC_QD_WORDS], const int *gd, int i)
{
	const int lane = threadIdx.x & 31;
	if (lane < MKC_QD_WORDS / 4) {
		int *dst = &dq[i % MKC_QD_SLOTS][4 * lane];
		const int *src = gd + (size_t)i * MKC_QD_WORDS + 4 * lane;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
		asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(mkc_smem_addr(dst)),
			     "l"(src)
			     : "memory");
#else
		*(int4 *)dst = *(const int4 *)src;
#endif
	}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

/* Warp 1: all but the last n copies have landed (the next barrier shows them to the block). */
template <int N>
static __device__ __forceinline__ void
mkc_qdesc_landed(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/*
 * With MKC_L2_AHEAD > 0 (and no ring), the weight rows of the matvec
 * MKC_L2_AHEAD tasks ahead are asked into L2 (one cp.async.bulk.prefetch,
 * sm_90) by the feeder warp as task i starts: a weight does not depend on
 * the step, so the memory could stream a task's rows while the worker is
 * busy with the task before or waits for its activations. At most
 * MKC_QD_AHEAD - 1 (the descriptors that have landed). Off: measured on an
 * H200 (Llama-3.2-1B shape, bench/RESULTS.md, 2026-12-01) the step took
 * 1.64 ms (1 ahead) and 1.66 ms (2 ahead) against 1.48 ms without at
 * context 1024; every stage got slower, the hand-offs too (0.59 to 1.06 us).
 */
#ifndef MKC_L2_AHEAD
#define MKC_L2_AHEAD 0
#endif
static_assert(MKC_L2_AHEAD >= 0 && MKC_L2_AHEAD < MKC_QD_AHEAD, "MKC_L2_AHEAD: 0 to MKC_QD_AHEAD - 1");

/* The first most bytes of the rows descriptor d's matvec reads go into L2. */
static __device__ __forceinline__ void
mkc_l2_prefetch(const struct mkc_model *m, const int *d, int most)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	if (d[MKC_QD_ROWS] < 0)
		return;
	const char *p = (const char *)m->buf[d[MKC_QD_ROWS]] + *(const long long *)&d[MKC_QD_ROWS_OFF];
	const unsigned bytes = (unsigned)(d[MKC_QD_ROWS_BYTES] < most ? d[MKC_QD_ROWS_BYTES] : most);
	if (((uintptr_t)p & 15) == 0 && bytes > 0)
		asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#else
	(void)m;
	(void)d;
	(void)most;
#endif
}

/*
 * With MKC_L2_HEAD > 0 (and no ring), thread 0 asks the first MKC_L2_HEAD
 * bytes of a matvec task's weight rows into L2 just before it waits for
 * the task's event: the weights do not depend on the step, and the tile's
 * first loads then find L2 instead of starting the stream from HBM after
 * the wait (the ramp every stage pays). Unlike MKC_L2_AHEAD it asks for a
 * head only, when the worker has nothing else in flight. Measured on an
 * H200 (Llama-3.2-1B shape, nvcc variants of one file, bench/RESULTS.md
 * session 8): 32 KB took 1.302 / 1.373 / 1.437 ms a step at contexts
 * 1 / 1024 / 4096 against 1.316 / 1.389 / 1.458 without (mean of two runs
 * each); 16 KB and 64 KB gained less. Since the matvec's loads are PTX
 * that no move waits on (session 10), it costs: 1.155 / 1.203 / 1.275 ms
 * with 32 KB against 1.144 / 1.194 / 1.259 without (session 11, two
 * rounds each), so it is off (0) by default.
 */
#ifndef MKC_L2_HEAD
#define MKC_L2_HEAD 0
#endif
static_assert(MKC_L2_HEAD % 16 == 0, "MKC_L2_HEAD: whole 16-byte chunks");

/* 1: a task's weight rows are asked for before the wait of the task before it */
#ifndef MKC_RING_AHEAD
#define MKC_RING_AHEAD 1
#endif

/* Thread 0: the weight rows of descriptor d join the ring, to stream in while it waits. */
static __device__ __forceinline__ void
mkc_task_prefetch(const struct mkc_model *m, const int *d)
{
	if (d[MKC_QD_ROWS] >= 0)
		mkc_ring_push((const char *)m->buf[d[MKC_QD_ROWS]] + *(const long long *)&d[MKC_QD_ROWS_OFF],
			      d[MKC_QD_ROWS_BYTES], d[MKC_QD_ROW_BYTES]);
}

/*
 * Block w runs queue w for one step (events count to threshold * epoch);
 * with --profile it stamps each task into slot slot of the timeline.
 */
static __device__ int
mkc_run_queue(struct mkc_model *m, unsigned long long *counter, unsigned long long epoch,
	      long long timeout_cycles, int slot)
{
	const int w = blockIdx.x;
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
	 * one a task, MKC_QD_AHEAD ahead; and the weight rows of the task and
	 * of the one after it are asked for before the task's wait (ring.cuh) */
	__shared__ __align__(16) int dq[MKC_QD_SLOTS][MKC_QD_WORDS];
	const int start = mkc_queue_start[w], n = mkc_queue_start[w + 1] - start;
	const int *gd = m->qdesc + (size_t)start * MKC_QD_WORDS;
	const bool feeder = threadIdx.x >> 5 == 1;
	if (feeder) {
		for (int j = 0; j < MKC_QD_AHEAD && j < n; j++)
			mkc_qdesc_fetch(dq, gd, j);
		mkc_qdesc_landed<0>();
		__syncwarp();
		for (int j = 0; !MKC_RING && threadIdx.x == 32 && j < MKC_L2_AHEAD && j < n; j++)
			mkc_l2_prefetch(m, dq[j], 0x7fffffff);
	}
	__syncthreads();
	if (MKC_RING_AHEAD && threadIdx.x == 0 && n > 0)
		mkc_task_prefetch(m, dq[0]);
	for (int i = 0; i < n; i++) {
		const int *d = dq[i % MKC_QD_SLOTS];
		if (feeder) {
			/* the copy of the last task's turn has landed; this one lands
			 * while the task runs (its slot's last reader was task
			 * i + MKC_QD_AHEAD - MKC_QD_SLOTS, long done) */
			mkc_qdesc_landed<0>();
			/* every lane's part of descriptor i + MKC_L2_AHEAD is there */
			__syncwarp();
			if (!MKC_RING && MKC_L2_AHEAD && threadIdx.x == 32 && i + MKC_L2_AHEAD < n)
				mkc_l2_prefetch(m, dq[(i + MKC_L2_AHEAD) % MKC_QD_SLOTS], 0x7fffffff);
			if (i + MKC_QD_AHEAD < n)
				mkc_qdesc_fetch(dq, gd, i + MKC_QD_AHEAD);
		}
		if (threadIdx.x == 0 && (!MKC_RING_AHEAD || i + 1 < n))
			mkc_task_prefetch(m, MKC_RING_AHEAD ? dq[(i + 1) % MKC_QD_SLOTS] : d);
		const int task = d[MKC_QD_TASK], ev = d[MKC_QD_EV];
		if (threadIdx.x == 0)
			MKC_PROF_TASK(task, 0, mkc_prof_now());
		int64_t lo[MKC_RANK], hi[MKC_RANK];
		if (d[MKC_QD_RANK] >= 0)
			for (int k = 0; k < d[MKC_QD_RANK]; k++) {
				lo[k] = d[MKC_QD_LO + k];
				hi[k] = d[MKC_QD_HI + k];
			}
		else
			mkc_task_bounds(m, task, lo, hi);
		if (!MKC_RING && MKC_L2_HEAD && threadIdx.x == 0 && ev >= 0)
			mkc_l2_prefetch(m, d, MKC_L2_HEAD);
		if (ev >= 0 && mkc_wait(m, &counter[ev], (unsigned long long)d[MKC_QD_THR] * epoch,
					timeout_cycles, task, ev)) {
			if (threadIdx.x == 0)
				mkc_ring_drain();
			if (feeder)
				mkc_qdesc_landed<0>();
			return 1;
		}
		if (threadIdx.x == 0)
			MKC_PROF_TASK(task, 1, mkc_prof_now());
		mkc_run_node(m, d[MKC_QD_NODE], lo, hi);
		__syncthreads();
		if (threadIdx.x == 0) {
			if (d[MKC_QD_SIG0] >= 0)
				mkc_red_release(&counter[d[MKC_QD_SIG0]]);
			for (int k = d[MKC_QD_S0] + 1; k < d[MKC_QD_S1]; k++)
				mkc_red_release(&counter[mkc_task_sig[k]]);
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

static __global__ void __launch_bounds__(MKC_THREADS, 1)
mkc_kernel(struct mkc_model *m, unsigned long long *counter, unsigned long long epoch,
	   long long timeout_cycles)
{
	mkc_ring_init();
	mkc_run_queue(mkc_model_view(m), counter, epoch, timeout_cycles, 0);
}

#if MKC_PROFILE
#define MKC_PROF_SLOTS MKC_PROFILE_STEPS
#else
#define MKC_PROF_SLOTS 1
#endif

#if MKC_CAN_GENERATE
/*
 * Every block arrives; all go on once all have. The counter after the
 * events' counts is never reset either: arrival p of this launch waits for
 * base + p * MKC_NWORKERS.
 */
static __device__ int
mkc_grid_sync(struct mkc_model *m, unsigned long long *bar, unsigned long long target,
	      long long timeout_cycles)
{
	__syncthreads();
	if (threadIdx.x == 0) {
		__threadfence();
		atomicAdd(bar, 1ULL);
	}
	const int stop = mkc_wait(m, bar, target, timeout_cycles, -1, -1);
	/* the next wait may come at once (a step's first task): its write of
	 * the shared stop flag must not overtake this read */
	__syncthreads();
	return stop;
}

/* Block-wide argmax of the logits (the first of equals, as torch.argmax). */
static __device__ int64_t
mkc_block_argmax(const float *x, int64_t n)
{
	__shared__ float bv[MKC_THREADS];
	__shared__ int64_t bi[MKC_THREADS];
	float v = -INFINITY;
	int64_t at = -1;
	for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
		if (at < 0 || x[i] > v) {   /* each thread walks upwards: ties keep the first */
			v = x[i];
			at = i;
		}
	bv[threadIdx.x] = v;
	bi[threadIdx.x] = at;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s /= 2) {
		const int t = threadIdx.x;
		if (t < s) {
			const float o = bv[t + s];
			const int64_t oi = bi[t + s];
			if (oi >= 0 && (bi[t] < 0 || o > bv[t] || (o == bv[t] && oi < bi[t]))) {
				bv[t] = o;
				bi[t] = oi;
			}
		}
		__syncthreads();
	}
	const int64_t r = bi[0];
	__syncthreads();
	return r < 0 ? 0 : r;
}

/* Where generate's kernel finds the token, position and logits buffers. */
struct mkc_gen_io {
	int64_t *ids, *pos;          /* pos may be NULL */
	const float *logits;
	const int64_t *prompt;       /* device copy */
	int64_t *out;                /* device buffer for the new tokens */
	int n_prompt, steps;
	int sym;                     /* the symbol that counts cache positions, or -1 */
	int64_t nnew;
};

/*
 * Greedy decoding in one launch: step j runs every queue with epoch
 * epoch0 + j + 1; at its end all blocks meet, block 0 takes the argmax of
 * the logits, writes the next token and position and advances the cache
 * count (and the symbolic values that follow it), and all meet again.
 */
static __global__ void __launch_bounds__(MKC_THREADS, 1)
mkc_generate_kernel(struct mkc_model *m, unsigned long long *counter, unsigned long long epoch0,
		    unsigned long long bar0, long long timeout_cycles, struct mkc_gen_io io)
{
	unsigned long long *bar = &counter[MKC_NEVENTS];
	mkc_ring_init();
	for (int j = 0; j < io.steps; j++) {
		const unsigned long long arrivals = 2ULL * (unsigned long long)j;
		/* again every step: block 0 advanced the symbols at the last one */
		if (mkc_run_queue(mkc_model_view(m), counter, epoch0 + (unsigned long long)j + 1,
				  timeout_cycles,
				  j % MKC_PROF_SLOTS) ||
		    mkc_grid_sync(m, bar, bar0 + (arrivals + 1) * MKC_NWORKERS, timeout_cycles))
			return;
		if (blockIdx.x == 0) {
			const int64_t tok = mkc_block_argmax(io.logits, MKC_GEN_VOCAB);
			if (threadIdx.x == 0) {
				if (j >= io.n_prompt - 1)
					io.out[j - (io.n_prompt - 1)] = tok;
				io.ids[0] = j + 1 < io.n_prompt ? io.prompt[j + 1] : tok;
				if (io.sym >= 0)
					m->sym[io.sym] += io.nnew;
				if (io.pos)
					io.pos[0] = io.sym >= 0 ? m->sym[io.sym] : j + 1;
				mkc_fill_symvals(m);
				__threadfence();
			}
		}
		if (mkc_grid_sync(m, bar, bar0 + (arrivals + 2) * MKC_NWORKERS, timeout_cycles))
			return;
	}
}
#endif

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
	int dev, sms, per_sm, khz;
	if (MKC_CUDA(m, cudaGetDevice(&dev)) ||
	    MKC_CUDA(m, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
	    MKC_CUDA(m, cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev)) ||
	    MKC_CUDA(m, cudaFuncSetAttribute(mkc_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
					     MKC_RING_BYTES)) ||
#if MKC_CAN_GENERATE
	    MKC_CUDA(m, cudaFuncSetAttribute(mkc_generate_kernel,
					     cudaFuncAttributeMaxDynamicSharedMemorySize, MKC_RING_BYTES)) ||
#endif
	    MKC_CUDA(m, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, mkc_kernel, MKC_THREADS,
								      MKC_RING_BYTES)))
		return -1;
	if ((long long)per_sm * sms < MKC_NWORKERS) {
		mkc_seterr(m, "the plan needs %d co-resident blocks but this GPU holds %d (%d SMs x %d); "
			   "compile with --workers %d or fewer", MKC_NWORKERS, per_sm * sms, sms, per_sm,
			   per_sm * sms);
		return -1;
	}
	m->timeout_cycles = (long long)(m->timeout_s * (double)khz * 1000.0);
	if (MKC_CUDA(m, cudaMalloc(&m->arena, MKC_ARENA_BYTES ? MKC_ARENA_BYTES : 1)))
		return -1;
	for (int t = 0; t < MKC_NTENSORS; t++) {
		const mkc_rt_tensor_info *ti = &mkc_tensors[t];
		if (ti->kind == MKC_RT_INPUT || ti->kind == MKC_RT_OUTPUT)
			continue;   /* the caller's device buffers, given at each step */
		if (ti->arena_off >= 0) {
			m->buf[t] = (char *)m->arena + ti->arena_off;
			continue;
		}
		size_t bytes = (size_t)mkc_numel(m, t, 1) * (size_t)ti->esize;
		if (MKC_CUDA(m, cudaMalloc(&m->buf[t], bytes ? bytes : 1)))
			return -1;
		m->owned[t] = 1;
		if (ti->data && MKC_CUDA(m, cudaMemcpy(m->buf[t], ti->data, bytes, cudaMemcpyHostToDevice)))
			return -1;
	}
	if (MKC_CUDA(m, cudaMalloc((void **)&m->counter, (MKC_NEVENTS + 1) * sizeof *m->counter)) ||
	    MKC_CUDA(m, cudaMemset(m->counter, 0, (MKC_NEVENTS + 1) * sizeof *m->counter)) ||
	    MKC_CUDA(m, cudaMalloc((void **)&m->status, 4 * sizeof *m->status)) ||
	    MKC_CUDA(m, cudaMemset(m->status, 0, 4 * sizeof *m->status)) ||
	    MKC_CUDA(m, cudaMalloc((void **)&m->dev, sizeof *m->dev)) ||
	    MKC_CUDA(m, cudaMalloc((void **)&m->qdesc, (size_t)MKC_NTASKS * MKC_QD_WORDS * sizeof(int))))
		return -1;
	mkc_qdesc_kernel<<<(MKC_NTASKS + 255) / 256, 256>>>(m->qdesc);
	if (MKC_CUDA(m, cudaGetLastError()) || MKC_CUDA(m, cudaDeviceSynchronize()))
		return -1;
#if MKC_PROFILE
	if (MKC_CUDA(m, cudaMalloc((void **)&m->prof, MKC_PROF_WORDS * sizeof *m->prof)))
		return -1;
#endif
	return 0;
}

static void
mkc_model_destroy(mkc_host *m)
{
	if (!m)
		return;
	for (int t = 0; t < MKC_NTENSORS; t++)
		if (m->owned[t])
			cudaFree(m->buf[t]);
	cudaFree(m->arena);
	cudaFree(m->counter);
	cudaFree(m->status);
	cudaFree(m->dev);
	cudaFree(m->qdesc);
#if MKC_PROFILE
	cudaFree(m->prof);
#endif
	free(m);
}

/* After a launch: waits for it, and turns a failure into a sentence. */
static int
mkc_finish(mkc_host *m)
{
	if (MKC_CUDA(m, cudaGetLastError()) || MKC_CUDA(m, cudaDeviceSynchronize()))
		return -1;
	int st[4];
	if (MKC_CUDA(m, cudaMemcpy(st, m->status, sizeof st, cudaMemcpyDeviceToHost)))
		return -1;
	if (st[0] == 0)
		return 0;
	if (st[0] == 1 && st[1] < 0)
		mkc_seterr(m, "watchdog: a block waited %.1f s at generate's barrier between steps",
			   m->timeout_s);
	else if (st[0] == 1)
		mkc_seterr(m, "watchdog: task %d (%s) waited %.1f s on event %d", st[1],
			   mkc_task_name[st[1]], m->timeout_s, st[2]);
	else
		mkc_seterr(m, "a tile found bad data (line %d of the generated file)", st[2]);
	/* start afresh: counters are out of step with the epoch */
	cudaMemset(m->counter, 0, (MKC_NEVENTS + 1) * sizeof *m->counter);
	cudaMemset(m->status, 0, 4 * sizeof *m->status);
	m->epoch = 0;
	m->bars = 0;
	return -1;
}

/* The tile view of the model, copied to the device before a launch. */
static int
mkc_upload_view(mkc_host *m)
{
	struct mkc_model view;
	memcpy(view.buf, m->buf, sizeof view.buf);
	memcpy(view.sym, m->sym, sizeof view.sym);
	view.status = m->status;
	view.qdesc = m->qdesc;
#if MKC_PROFILE
	view.prof = m->prof;
#endif
	return MKC_CUDA(m, cudaMemcpy(m->dev, &view, sizeof view, cudaMemcpyHostToDevice));
}

/* inputs and outputs are device pointers; the step is finished on return. */
static int
mkc_step(mkc_host *m, const void *const *inputs, void *const *outputs, const int64_t *dims)
{
	if (mkc_begin_step(m, inputs, outputs, dims) || mkc_upload_view(m))
		return -1;
	m->epoch++;
#if MKC_PROFILE
	/* unrun tasks stay 0; the trace leaves them out */
	if (MKC_CUDA(m, cudaMemset(m->prof, 0, MKC_PROF_SLOT_WORDS * sizeof *m->prof)))
		return -1;
	m->prof_count = 1;
#endif
	mkc_symvals_kernel<<<1, 1>>>(m->dev);
	mkc_kernel<<<MKC_NWORKERS, MKC_THREADS, MKC_RING_BYTES>>>(m->dev, m->counter, m->epoch, m->timeout_cycles);
	return mkc_finish(m);
}

static int mkc_generate_check(mkc_host *m, const int64_t *prompt, int n_prompt, int n_new,
			      const int64_t *out, int *steps);
static int64_t mkc_next_position(const mkc_host *m);

/*
 * Greedy decoding, every step in one launch (mkc_generate_kernel). The
 * model's own device buffers take the inputs and outputs; out is host
 * memory.
 */
static int
mkc_generate(mkc_host *m, const int64_t *prompt, int n_prompt, int n_new, int64_t *out)
{
	int steps;
#if !MKC_CAN_GENERATE
	return mkc_generate_check(m, prompt, n_prompt, n_new, out, &steps);   /* says why not */
#else
	int rc = -1;
	if (mkc_generate_check(m, prompt, n_prompt, n_new, out, &steps))
		return -1;
	void *in[MKC_NINPUTS + 1] = {0}, *outs[MKC_NOUTPUTS + 1] = {0};
	int64_t *dprompt = NULL, *dout = NULL, first[2] = {prompt[0], mkc_next_position(m)};
	struct mkc_gen_io io;
	memset(&io, 0, sizeof io);
	for (int i = 0; i < MKC_NINPUTS; i++)
		if (MKC_CUDA(m, cudaMalloc(&in[i], sizeof(int64_t))) ||
		    MKC_CUDA(m, cudaMemcpy(in[i], &first[i == MKC_GEN_IDS ? 0 : 1], sizeof(int64_t),
					   cudaMemcpyHostToDevice)))
			goto out;
	for (int o = 0; o < MKC_NOUTPUTS; o++) {
		size_t bytes = (size_t)mkc_numel(m, mkc_outputs[o], 1) *
			       (size_t)mkc_tensors[mkc_outputs[o]].esize;
		if (MKC_CUDA(m, cudaMalloc(&outs[o], bytes ? bytes : 1)))
			goto out;
	}
	if (MKC_CUDA(m, cudaMalloc((void **)&dprompt, (size_t)n_prompt * sizeof *dprompt)) ||
	    MKC_CUDA(m, cudaMalloc((void **)&dout, (size_t)n_new * sizeof *dout)) ||
	    MKC_CUDA(m, cudaMemcpy(dprompt, prompt, (size_t)n_prompt * sizeof *dprompt,
				   cudaMemcpyHostToDevice)) ||
	    mkc_begin_step(m, (const void *const *)in, outs, NULL) || mkc_upload_view(m))
		goto out;
	io.ids = (int64_t *)in[MKC_GEN_IDS];
	io.pos = MKC_GEN_POS >= 0 ? (int64_t *)in[MKC_GEN_POS] : NULL;
	io.logits = (const float *)outs[MKC_GEN_LOGITS];
	io.prompt = dprompt;
	io.out = dout;
	io.n_prompt = n_prompt;
	io.steps = steps;
	io.sym = MKC_NCACHES ? mkc_caches[0].sym : -1;
	io.nnew = MKC_NCACHES ? mkc_caches[0].nnew : 0;
#if MKC_PROFILE
	if (MKC_CUDA(m, cudaMemset(m->prof, 0, MKC_PROF_WORDS * sizeof *m->prof)))
		goto out;
	m->prof_count = steps;
#endif
	mkc_symvals_kernel<<<1, 1>>>(m->dev);
	mkc_generate_kernel<<<MKC_NWORKERS, MKC_THREADS, MKC_RING_BYTES>>>(
		m->dev, m->counter, m->epoch, m->bars, m->timeout_cycles, io);
	if (mkc_finish(m))
		goto out;
	m->epoch += (unsigned long long)steps;
	m->bars += 2ULL * (unsigned long long)steps * MKC_NWORKERS;
	if (io.sym >= 0)
		m->sym[io.sym] += (int64_t)steps * io.nnew;
	rc = MKC_CUDA(m, cudaMemcpy(out, dout, (size_t)n_new * sizeof *dout, cudaMemcpyDeviceToHost));
out:
	for (int i = 0; i < MKC_NINPUTS; i++)
		cudaFree(in[i]);
	for (int o = 0; o < MKC_NOUTPUTS; o++)
		cudaFree(outs[o]);
	cudaFree(dprompt);
	cudaFree(dout);
	return rc;
#endif
}

/* Hooks for runtime/host.h: weights go to device memory. */
static int
mkc_store(mkc_host *m, void *dst, const void *src, size_t n)
{
	return MKC_CUDA(m, cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
}

/* rows rows of width bytes, pitch bytes apart; either side may be host
 * or device memory (unified addressing tells which) */
static int
mkc_copy_rows(mkc_host *m, void *dst, size_t dpitch, const void *src, size_t spitch,
	      size_t width, size_t rows)
{
	return MKC_CUDA(m, cudaMemcpy2D(dst, dpitch, src, spitch, width, rows, cudaMemcpyDefault));
}

static void
mkc_free_buf(void *p)
{
	cudaFree(p);
}

#if MKC_PROFILE
#define MKC_PROF_TARGET "cuda"

static int
mkc_prof_fetch(mkc_host *m, uint64_t *dst)
{
	return MKC_CUDA(m, cudaMemcpy(dst, m->prof, MKC_PROF_WORDS * sizeof *dst,
				      cudaMemcpyDeviceToHost));
}
#endif

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
 *   wait:   thread 0 polls the 64-bit counter with volatile loads until it
 *           reaches threshold * epoch, then __threadfence(); __syncthreads()
 *           hands the result to the block;
 *   run:    all threads of the block share the tile's loops;
 *   signal: __syncthreads() (the block's writes are done), thread 0
 *           __threadfence() and atomicAdd(counter, 1) for each event.
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
	unsigned long long epoch;
	double timeout_s;
	long long timeout_cycles;
	char err[512];
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

static __global__ void __launch_bounds__(MKC_THREADS, 1)
mkc_kernel(struct mkc_model *m, unsigned long long *counter, unsigned long long epoch,
	   long long timeout_cycles)
{
	__shared__ int stop;
	const int w = blockIdx.x;
	for (int i = mkc_queue_start[w]; i < mkc_queue_start[w + 1]; i++) {
		const int task = mkc_queue[i];
		const int ev = mkc_task_wait[task];
		if (ev >= 0) {
			if (threadIdx.x == 0) {
				const unsigned long long target =
					(unsigned long long)mkc_event_threshold[ev] * epoch;
				const long long start = clock64();
				int ok = 1;
				while (*(volatile unsigned long long *)&counter[ev] < target) {
					if (*(volatile int *)&m->status[0]) {
						ok = 0;
						break;
					}
					if (clock64() - start > timeout_cycles) {
						if (atomicCAS(&m->status[0], 0, 1) == 0) {
							m->status[1] = task;
							m->status[2] = ev;
						}
						ok = 0;
						break;
					}
					__nanosleep(64);
				}
				__threadfence();
				stop = !ok;
			}
			__syncthreads();
			if (stop)
				return;
		}
		mkc_run_task(m, task);
		__syncthreads();
		if (threadIdx.x == 0) {
			__threadfence();
			for (int k = mkc_task_sig_start[task]; k < mkc_task_sig_start[task + 1]; k++)
				atomicAdd(&counter[mkc_task_sig[k]], 1ULL);
		}
	}
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
	int dev, sms, per_sm, khz;
	if (MKC_CUDA(m, cudaGetDevice(&dev)) ||
	    MKC_CUDA(m, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
	    MKC_CUDA(m, cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev)) ||
	    MKC_CUDA(m, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, mkc_kernel, MKC_THREADS, 0)))
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
	    MKC_CUDA(m, cudaMalloc((void **)&m->dev, sizeof *m->dev)))
		return -1;
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
	free(m);
}

/* inputs and outputs are device pointers; the step is finished on return. */
static int
mkc_step(mkc_host *m, const void *const *inputs, void *const *outputs, const int64_t *dims)
{
	if (mkc_begin_step(m, inputs, outputs, dims))
		return -1;
	struct mkc_model view;
	memcpy(view.buf, m->buf, sizeof view.buf);
	memcpy(view.sym, m->sym, sizeof view.sym);
	view.status = m->status;
	m->epoch++;
	if (MKC_CUDA(m, cudaMemcpy(m->dev, &view, sizeof view, cudaMemcpyHostToDevice)))
		return -1;
	mkc_symvals_kernel<<<1, 1>>>(m->dev);
	mkc_kernel<<<MKC_NWORKERS, MKC_THREADS>>>(m->dev, m->counter, m->epoch, m->timeout_cycles);
	if (MKC_CUDA(m, cudaGetLastError()) || MKC_CUDA(m, cudaDeviceSynchronize()))
		return -1;
	int st[4];
	if (MKC_CUDA(m, cudaMemcpy(st, m->status, sizeof st, cudaMemcpyDeviceToHost)))
		return -1;
	if (st[0] == 0)
		return 0;
	if (st[0] == 1)
		mkc_seterr(m, "watchdog: task %d (%s) waited %.1f s on event %d", st[1],
			   mkc_task_name[st[1]], m->timeout_s, st[2]);
	else
		mkc_seterr(m, "a tile found bad data (line %d of the generated file)", st[2]);
	/* start afresh: counters are out of step with the epoch */
	cudaMemset(m->counter, 0, (MKC_NEVENTS + 1) * sizeof *m->counter);
	cudaMemset(m->status, 0, 4 * sizeof *m->status);
	m->epoch = 0;
	return -1;
}

/* Hooks for runtime/host.h: weights go to device memory. */
static int
mkc_store(mkc_host *m, void *dst, const void *src, size_t n)
{
	return MKC_CUDA(m, cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
}

static void
mkc_free_buf(void *p)
{
	cudaFree(p);
}

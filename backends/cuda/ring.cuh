/*
 * ring.cuh - the weight ring: a block's shared-memory queue of weight
 * bytes, filled by the copy engine (cp.async.bulk, sm_90) and emptied by
 * the matvec body (matvec.cuh).
 *
 * A decode step reads every weight once, and a weight does not depend on
 * anything the step computes. So a worker asks for the weight rows of its
 * next matvec tasks before it waits for their activations: while the
 * event is pending (the hand-off between two layers' stages, when the
 * memory would otherwise idle) the rows stream into shared memory, and
 * the body finds them there. The ring is MKC_RING_SLOTS slots of
 * MKC_RING_SLOT bytes; a slot holds one stage: whole rows of one task.
 *
 * The ring is a FIFO of byte ranges (one a matvec task). Thread 0 pushes
 * ranges (mkc_ring_push) and issues stages while slots are free
 * (mkc_ring_issue); the body consumes its range's stages in order
 * (mkc_ring_take). Each slot has an mbarrier; stage u of the ring's life
 * goes to slot u % MKC_RING_SLOTS and completes that barrier's phase
 * u / MKC_RING_SLOTS, so the parity a waiter needs follows from u alone.
 * A consumer that finds at the head of the FIFO a range other than its
 * own traps: the emitter's table and the bodies disagree, and a wrong
 * answer or a hang would be worse.
 *
 * Where the copy engine or the weights' layout does not allow it (before
 * sm_90, rows longer than a slot) the matvec loads from global memory as
 * before, and mkc_ring_push is not called for it.
 *
 * The ring is OFF unless the emitted file is compiled with -DMKC_RING_ON:
 * measured on an H200 (Llama-3.2-1B shape, bench/RESULTS.md, 2026-12-01),
 * it made the step slower (1.66 ms against 1.56 ms at context 1024 with
 * task descriptors; 2.47 against 2.02 ms before them). Its 128 KB of
 * shared memory come out of L1, and thread 0 issuing each 16 KB stage
 * holds up the block at every stage. It stays, tested (tests/gpu/bodies.cu),
 * for the next try: a producer warp of its own, larger stages.
 */

#ifndef MKC_RING_SLOTS
#define MKC_RING_SLOTS 8
#endif
#define MKC_RING_SLOT 16384
#define MKC_RING_RANGES 4

/* off unless the emitted file is compiled with -DMKC_RING_ON (see above) */
#ifdef MKC_RING_ON
#define MKC_RING_BYTES (MKC_RING_SLOTS * MKC_RING_SLOT)
#else
#define MKC_RING_BYTES 0
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(MKC_RING_ON)
#define MKC_RING 1
#else
#define MKC_RING 0
#endif

/* Whether a matvec with rows of this many bytes goes through the ring. */
#define MKC_RING_ROWS_FIT(row_bytes) ((row_bytes) % 16 == 0 && (row_bytes) <= MKC_RING_SLOT)

/* Rows a stage: as many as a slot holds, at most 16 (a thread holds a
 * stage's chunks in registers). */
#define MKC_RING_STAGE_ROWS(row_bytes) \
	(MKC_RING_SLOT / (row_bytes) < 16 ? MKC_RING_SLOT / (row_bytes) : 16)

struct mkc_ring {
	unsigned long long bar[MKC_RING_SLOTS];
	const char *src[MKC_RING_RANGES];   /* the ranges pushed and not yet consumed */
	long long bytes[MKC_RING_RANGES];
	int stage[MKC_RING_RANGES];         /* bytes a stage: whole rows */
	unsigned pushed, issuing, taken;    /* ranges, ever */
	long long off;                      /* bytes of range `issuing` issued */
	unsigned issued, used;              /* stages, ever */
};

static __shared__ struct mkc_ring mkc_ring_st;
extern __shared__ __align__(128) uint4 mkc_ring_data[];

static __device__ __forceinline__ unsigned MKC_UNUSED
mkc_smem_addr(const void *p)
{
	return (unsigned)__cvta_generic_to_shared(p);
}

/* Every block, once, before its first task; ends with the block in step. */
static __device__ void MKC_UNUSED
mkc_ring_init(void)
{
#if MKC_RING
	if (threadIdx.x == 0) {
		for (int s = 0; s < MKC_RING_SLOTS; s++)
			asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(
					     mkc_smem_addr(&mkc_ring_st.bar[s]))
				     : "memory");
		mkc_ring_st.pushed = mkc_ring_st.issuing = mkc_ring_st.taken = 0;
		mkc_ring_st.issued = mkc_ring_st.used = 0;
		mkc_ring_st.off = 0;
	}
	__syncthreads();
#endif
}

/* Thread 0: issues stages while slots are free and ranges remain. */
static __device__ void MKC_UNUSED
mkc_ring_issue(void)
{
#if MKC_RING
	struct mkc_ring *r = &mkc_ring_st;
	while (r->issued - r->used < MKC_RING_SLOTS && r->issuing != r->pushed) {
		const int q = r->issuing % MKC_RING_RANGES;
		const long long left = r->bytes[q] - r->off;
		const unsigned n = (unsigned)(left < r->stage[q] ? left : r->stage[q]);
		const int s = r->issued % MKC_RING_SLOTS;
		const unsigned bar = mkc_smem_addr(&r->bar[s]);
		const unsigned dst = mkc_smem_addr(mkc_ring_data + (size_t)s * (MKC_RING_SLOT / 16));
		asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(n)
			     : "memory");
		asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
			     "[%0], [%1], %2, [%3];" ::"r"(dst),
			     "l"(r->src[q] + r->off), "r"(n), "r"(bar)
			     : "memory");
		r->issued++;
		r->off += n;
		if (r->off == r->bytes[q]) {
			r->issuing++;
			r->off = 0;
		}
	}
#endif
}

/*
 * Thread 0: queues bytes bytes of weights from src (16-byte aligned), in
 * stages of whole rows of row_bytes, behind the ranges already queued.
 */
static __device__ void MKC_UNUSED
mkc_ring_push(const void *src, long long bytes, int row_bytes)
{
#if MKC_RING
	struct mkc_ring *r = &mkc_ring_st;
	if (bytes <= 0)
		return;
	if (r->pushed - r->taken >= MKC_RING_RANGES)
		__trap();   /* more tasks ahead than the queue holds: a runtime bug */
	const int q = r->pushed % MKC_RING_RANGES;
	r->src[q] = (const char *)src;
	r->bytes[q] = bytes;
	r->stage[q] = MKC_RING_STAGE_ROWS(row_bytes) * row_bytes;
	r->pushed++;
	mkc_ring_issue();
#endif
}

/* Waits until stage u of the ring's life has landed in its slot. */
static __device__ __forceinline__ void MKC_UNUSED
mkc_ring_wait(unsigned u)
{
#if MKC_RING
	const unsigned bar = mkc_smem_addr(&mkc_ring_st.bar[u % MKC_RING_SLOTS]);
	const unsigned parity = (u / MKC_RING_SLOTS) & 1;
	unsigned done;
	do
		asm volatile("{\n\t.reg .pred p;\n\t"
			     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
			     "selp.u32 %0, 1, 0, p;\n\t}"
			     : "=r"(done)
			     : "r"(bar), "r"(parity)
			     : "memory");
	while (!done);
#endif
}

/*
 * Every thread, at the start of a body: the first stage of its range, which
 * must be (src, bytes) at the head of the queue.
 */
static __device__ __forceinline__ unsigned MKC_UNUSED
mkc_ring_begin(const void *src, long long bytes)
{
	struct mkc_ring *r = &mkc_ring_st;
	const int q = r->taken % MKC_RING_RANGES;
	if (r->taken == r->pushed || r->src[q] != (const char *)src || r->bytes[q] != bytes)
		__trap();
	return r->used;
}

/*
 * Every thread, after it is done with stage u: the block meets, and
 * thread 0 frees the slot and issues into it.
 */
static __device__ __forceinline__ void MKC_UNUSED
mkc_ring_release(unsigned u, bool last)
{
	__syncthreads();
	if (threadIdx.x == 0) {
		mkc_ring_st.used = u + 1;
		if (last)
			mkc_ring_st.taken++;
		mkc_ring_issue();
	}
}

/* Thread 0, when a block leaves early: no copy may land after it is gone. */
static __device__ void MKC_UNUSED
mkc_ring_drain(void)
{
	for (unsigned u = mkc_ring_st.used; u != mkc_ring_st.issued; u++)
		mkc_ring_wait(u);
}

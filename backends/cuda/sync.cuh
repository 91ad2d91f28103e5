/*
 * sync.cuh - CUDA's lane and memory primitives: everything in the GPU
 * runtime (exec.cuh) and the GPU bodies (matvec.cuh, attention.cuh,
 * runtime/common.h's sums) that is PTX or a CUDA-only intrinsic. The HIP
 * target gives the same names in backends/hip/sync.h; the runtime and the
 * bodies are one source for both (as llama.cpp's ggml-cuda serves HIP
 * through vendors/hip.h).
 *
 * Embedded right after the target's headers, before runtime/common.h;
 * MKC_WARP (the lanes of a warp, 32 here) is defined before it.
 *
 * The event protocol's ordering, reviewed here once:
 *   publish: __syncthreads() (the block's writes are done), then thread 0
 *            mkc_red_release() on the counter: PTX's red.release.gpu. The
 *            barrier makes the block's writes visible to thread 0 in the
 *            PTX memory model's order (bar.sync is morally strong at CTA
 *            scope), and the release is cumulative over what thread 0 saw;
 *            a task with several events fences once (fence.acq_rel.gpu)
 *            and counts each with red.relaxed.gpu: in PTX's model a fence
 *            followed by a strong write is a release pattern too;
 *   consume: thread 0 mkc_ld_acquire() until the count is reached, then
 *            __syncthreads(): what the acquire made visible to thread 0 the
 *            barrier passes to the block.
 * (A full fence per task, as before, cost more: bench/RESULTS.md.)
 */

/* also runtime/common.h's: the prelude comes before it */
#define MKC_UNUSED __attribute__((unused))

#if MKC_WARP != 32
#error "CUDA warps are 32 lanes"
#endif

/* the runtime calls' names begin so (exec.cuh's messages) */
#define MKC_GPU_API "cuda"

/* the persistent kernels: MKC_THREADS a block, one block an SM */
#define MKC_LAUNCH_BOUNDS __launch_bounds__(MKC_THREADS, 1)

static __device__ __forceinline__ unsigned long long MKC_UNUSED
mkc_ld_acquire(const unsigned long long *p)
{
	unsigned long long v;
	asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_red_release(unsigned long long *p)
{
	asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(p) : "memory");
}

/*
 * A task that signals several events: one release fence, then a plain
 * (relaxed, strong) count on each counter, which PTX's memory model makes
 * a release pattern with the fence before it. A release on each instead
 * waited for the one before it to reach L2: a 1024-token chunk's cache
 * append signals about 40 attention events and took 50 us a tile, empty
 * ones too (H100, session 26).
 */
static __device__ __forceinline__ void MKC_UNUSED
mkc_fence_release(void)
{
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_red_relaxed(unsigned long long *p)
{
	asm volatile("red.relaxed.gpu.global.add.u64 [%0], 1;" ::"l"(p) : "memory");
}

/* a flag another block may set (the status word): read anew each time */
static __device__ __forceinline__ int MKC_UNUSED
mkc_ld_flag(const int *p)
{
	return *(const volatile int *)p;
}

/* a pause between polls, so that a spinning warp leaves the memory system to the producers */
static __device__ __forceinline__ void MKC_UNUSED
mkc_backoff(void)
{
	__nanosleep(64);
}

/* the timeline's clock: nanoseconds on the clock every SM shares */
#define MKC_PROF_TICK_NS 1ULL

static __device__ __forceinline__ unsigned long long MKC_UNUSED
mkc_prof_now(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

static __device__ __forceinline__ unsigned MKC_UNUSED
mkc_prof_smid(void)
{
	unsigned s;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
	return s;
}

/* v of the lane o lanes away (lane ^ o); every lane of the warp calls it */
static __device__ __forceinline__ float MKC_UNUSED
mkc_shfl_xor(float v, int o)
{
	return __shfl_xor_sync(0xffffffffu, v, o);
}

/* v of lane src; every lane of the warp calls it */
static __device__ __forceinline__ float MKC_UNUSED
mkc_shfl(float v, int src)
{
	return __shfl_sync(0xffffffffu, v, src);
}

/*
 * Predicated loads: the registers they return are the load's own, zeros
 * when !on. Written as a select (on ? *p : 0), the compiler loads into
 * other registers and moves them, and the move waits for the load right
 * there (Nsight Compute on the 1B step, 2026-12-02: those moves held 15%
 * of the kernel's warp samples). Nothing is kept in L1 (but with
 * MKC_LD_L1): a worker reads a weight once, and a cache row once a task.
 * With NC the data does not change while the kernel runs (weights:
 * ld.global.nc); without it the
 * data was written earlier in the same launch (KV caches, ordered by the
 * event wait). MKC_PTX_LOADS 0 gives the plain C forms, to compare.
 */
#ifndef MKC_PTX_LOADS
#define MKC_PTX_LOADS 1
#endif

/* "@p ld" of the registers given, p set from operand `on` */
#define MKC_PRED_LD(on, ld) \
	"{\n\t.reg .pred p;\n\tsetp.ne.b32 p, " on ", 0;\n\t@p " ld ";\n\t}"

/* "@p ld" of 16 bytes into v, op the load with its qualifiers */
#define MKC_LD16(op, v, p, on)                                                        \
	asm volatile(MKC_PRED_LD("%5", op " {%0, %1, %2, %3}, [%4]")                   \
		     : "+r"((v).x), "+r"((v).y), "+r"((v).z), "+r"((v).w)                \
		     : "l"(__cvta_generic_to_global(p)), "r"((int)(on)))

/*
 * NC MKC_LD_L1 (2): data that other warps of the block read too (a
 * few-token tile's x, written earlier in the launch, and a norm's scale),
 * kept in L1: the event wait's ld.acquire.gpu invalidates L1 (CCTL.IVALL),
 * so a load after the wait sees what the producers wrote. H100, session
 * 41: the 64-sequence step 2-3% shorter than with L1 left out, 8
 * sequences 0.5%.
 */
enum { MKC_LD_L1 = 2 };

template <int NC>
static __device__ __forceinline__ uint4 MKC_UNUSED
mkc_ld16(const void *p, bool on)
{
	uint4 v = make_uint4(0, 0, 0, 0);
#if MKC_PTX_LOADS
	if (NC == MKC_LD_L1)
		MKC_LD16("ld.global.v4.u32", v, p, on);
	else if (NC)
		MKC_LD16("ld.global.nc.L1::no_allocate.v4.u32", v, p, on);
	else
		MKC_LD16("ld.global.L1::no_allocate.v4.u32", v, p, on);
#else
	if (on)
		v = *(const uint4 *)p;
#endif
	return v;
}

/* 4 bytes, or 2 (in the low half) when TWO, of data written in this launch */
template <bool TWO>
static __device__ __forceinline__ uint32_t MKC_UNUSED
mkc_ld_small(const void *p, bool on)
{
	uint32_t v = 0;
#if MKC_PTX_LOADS
	if (TWO)
		asm volatile(MKC_PRED_LD("%2", "ld.global.L1::no_allocate.u16 %0, [%1]")
			     : "+r"(v) : "l"(__cvta_generic_to_global(p)), "r"((int)on));
	else
		asm volatile(MKC_PRED_LD("%2", "ld.global.L1::no_allocate.b32 %0, [%1]")
			     : "+r"(v) : "l"(__cvta_generic_to_global(p)), "r"((int)on));
#else
	if (on)
		v = TWO ? *(const uint16_t *)p : *(const uint32_t *)p;
#endif
	return v;
}

/*
 * 16 bytes from global memory into shared memory, in the background where
 * the GPU can (cp.async, sm_80 on); mkc_copy_commit closes a group of such
 * copies, and mkc_copy_wait() returns once all of this thread's groups
 * have landed (a barrier then shows them to the block).
 */
static __device__ __forceinline__ void MKC_UNUSED
mkc_copy16(void *dst, const void *src)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
		     ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src)
		     : "memory");
#else
	*(int4 *)dst = *(const int4 *)src;
#endif
}

/* the same, or 16 zero bytes where !ok (src is then not read, but must be a valid address) */
static __device__ __forceinline__ void MKC_UNUSED
mkc_copy16_or_zero(void *dst, const void *src, bool ok)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
		     ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "r"(ok ? 16 : 0)
		     : "memory");
#else
	*(int4 *)dst = ok ? *(const int4 *)src : make_int4(0, 0, 0, 0);
#endif
}

/* The lanes of a warp see each other's shared-memory writes from before it. */
static __device__ __forceinline__ void MKC_UNUSED
mkc_warp_sync(void)
{
	__syncwarp();
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_copy_commit(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_copy_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
}

/* ...or once all but this thread's N most recent groups have (a ring of copies in flight) */
template <int N>
static __device__ __forceinline__ void MKC_UNUSED
mkc_copy_wait_but(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

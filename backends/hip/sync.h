/*
 * sync.h - HIP's lane and memory primitives, by the names of
 * backends/cuda/sync.cuh, which says what each is for: the GPU runtime and
 * bodies (backends/cuda/exec.cuh, matvec.cuh, attention.cuh) are one
 * source for both vendors, and this file and names.h are what differs.
 *
 * NEVER RUN on AMD hardware: compiled in the tests (hipcc for gfx90a,
 * clang-19 for gfx942), run 32 wide on an NVIDIA GPU only (test-only
 * tests/gpu/hip_on_cuda.h).
 *
 * The event protocol in Clang's scoped atomics instead of PTX, so that the
 * ordering is the compiler's to honour on every gfx: an acquire load and
 * a release add at agent (whole GPU) scope. Agent scope makes the
 * write-back of the producer's L2 lines (one L2 an XCD on gfx942) part of
 * the release and the invalidate part of the acquire; a narrower scope
 * would be wrong across XCDs.
 */

/* also runtime/common.h's: the prelude comes before it */
#define MKC_UNUSED __attribute__((unused))

/* the matrix-core tile (backends/hip/mfma.h) keeps one K step in LDS, not
 * mma.cuh's ring of three: runtime/limits.h's MKC_MM_SMEM is then 33 KB
 * of an MI300's 64 a workgroup */
#define MKC_MM_STAGES 1

/* HIP's second bound is not CUDA's blocks an SM: MKC_THREADS alone */
#define MKC_LAUNCH_BOUNDS __launch_bounds__(MKC_THREADS)

static __device__ __forceinline__ unsigned long long MKC_UNUSED
mkc_ld_acquire(unsigned long long *p)
{
	return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_red_release(unsigned long long *p)
{
	__hip_atomic_fetch_add(p, 1ULL, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
}

/* several signals: one agent-scope fence (__threadfence), then relaxed adds */
static __device__ __forceinline__ void MKC_UNUSED
mkc_fence_release(void)
{
	__threadfence();
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_red_relaxed(unsigned long long *p)
{
	__hip_atomic_fetch_add(p, 1ULL, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

static __device__ __forceinline__ int MKC_UNUSED
mkc_ld_flag(int *p)
{
	return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

/* s_sleep 1: about 64 clocks, as CUDA's __nanosleep(64); the host pass only parses it */
static __device__ __forceinline__ void MKC_UNUSED
mkc_backoff(void)
{
#if defined(__HIP_DEVICE_COMPILE__)
	__builtin_amdgcn_s_sleep(1);
#endif
}

/* The lanes of a wavefront see each other's shared-memory (LDS) writes from
 * before it: they run in lockstep; the fences order LDS around the barrier.
 * (Not under tests/gpu/hip_on_cuda.h, whose device pass is not HIP's; no
 * body that needs it is emitted for this target yet.) */
static __device__ __forceinline__ void MKC_UNUSED
mkc_warp_sync(void)
{
#if defined(__HIP_DEVICE_COMPILE__)
	__builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
	__builtin_amdgcn_wave_barrier();
	__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#endif
}

/* The timeline's clock: s_memrealtime, 100 MHz on gfx90a and gfx942, shared
 * by every compute unit (HIP 5.2 declares wall_clock64 for the device pass only) */
#define MKC_PROF_TICK_NS 10ULL

static __device__ __forceinline__ unsigned long long MKC_UNUSED
mkc_prof_now(void)
{
#if defined(__HIP_DEVICE_COMPILE__)
	return (unsigned long long)__builtin_amdgcn_s_memrealtime();
#else
	return 0;
#endif
}

static __device__ __forceinline__ unsigned MKC_UNUSED
mkc_prof_smid(void)
{
	return __smid();
}

static __device__ __forceinline__ float MKC_UNUSED
mkc_shfl_xor(float v, int o)
{
	return __shfl_xor(v, o, MKC_WARP);
}

static __device__ __forceinline__ float MKC_UNUSED
mkc_shfl(float v, int src)
{
	return __shfl(v, src, MKC_WARP);
}

/* plain loads (CUDA's are PTX); what AMD's compiler makes of them is
 * unmeasured; NC as CUDA's (MKC_LD_L1: data other warps read too) */
enum { MKC_LD_L1 = 2 };

template <int NC>
static __device__ __forceinline__ uint4 MKC_UNUSED
mkc_ld16(const void *p, bool on)
{
	return on ? *(const uint4 *)p : make_uint4(0, 0, 0, 0);
}

template <bool TWO>
static __device__ __forceinline__ uint32_t MKC_UNUSED
mkc_ld_small(const void *p, bool on)
{
	return !on ? 0u : TWO ? (uint32_t) * (const uint16_t *)p : *(const uint32_t *)p;
}

/* no asynchronous copy into LDS: a plain one, landed when it returns */
static __device__ __forceinline__ void MKC_UNUSED
mkc_copy16(void *dst, const void *src)
{
	*(int4 *)dst = *(const int4 *)src;
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_copy16_or_zero(void *dst, const void *src, bool ok)
{
	*(int4 *)dst = ok ? *(const int4 *)src : make_int4(0, 0, 0, 0);
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_copy_commit(void)
{
}

static __device__ __forceinline__ void MKC_UNUSED
mkc_copy_wait(void)
{
}

template <int N>
static __device__ __forceinline__ void MKC_UNUSED
mkc_copy_wait_but(void)
{
}

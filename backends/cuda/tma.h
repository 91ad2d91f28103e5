/*
 * tma.h - the tensor maps that name a TMA tile's operands (mma.cuh's
 * mkc_tma_tile), made on the host: CUDA's alone (the HIP target has no
 * TMA; exec.cuh's MKC_TMA is 0 there). The encoder is the driver's
 * cuTensorMapEncodeTiled, found through the runtime, so an emitted file
 * links against nothing more than before; its types are written here
 * with the driver's values (cuda.h, CUDA 12 and 13) rather than taken
 * from cuda.h, whose thousands of names an emitted file would then have
 * to keep clear of (backends/core/emit.c's reserved names).
 *
 * A map names a bf16 [rows, k] row-major operand in boxes of 64 columns
 * (128 bytes) by MKC_MM_TM rows for an activation or MKC_TMA_WROWS rows
 * for a weight, with the 128-byte swizzle the tile's wgmma descriptors
 * read; rows past the operand's arrive as zeros.
 */
#define MKC_TMA 1

/* a weight's box: its rows (an activation's is MKC_MM_TM) */
#define MKC_TMA_WROWS 64

/* CUtensorMap: 128 opaque bytes, 128-byte aligned (64 is what the device needs) */
struct alignas(128) mkc_tmap {
	unsigned long long opaque[16];
};

/* cuTensorMapEncodeTiled; its enums are ints and 0 is CUDA_SUCCESS */
typedef int (*mkc_tma_encoder)(struct mkc_tmap *map, int dtype, unsigned rank, void *addr,
			       const unsigned long long *dims, const unsigned long long *strides,
			       const unsigned *box, const unsigned *elem_strides, int interleave,
			       int swizzle, int l2_promotion, int oob_fill);

/* the driver's encoder where device dev is sm_90 and the driver has one, else NULL */
static mkc_tma_encoder MKC_UNUSED
mkc_tma_find_encoder(int dev)
{
	int major = 0;
	if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
	    major != 9)
		return NULL;
	void *fn = NULL;
	cudaDriverEntryPointQueryResult q;
#if CUDART_VERSION >= 12050
	cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
							 cudaEnableDefault, &q);
#else
	cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &q);
#endif
	return e == cudaSuccess && q == cudaDriverEntryPointSuccess ? (mkc_tma_encoder)fn : NULL;
}

/* the map of a bf16 [rows, k] operand at p (k a multiple of 64), box rows a box: 0 or -1 */
static int MKC_UNUSED
mkc_tma_map(mkc_tma_encoder enc, struct mkc_tmap *t, void *p, int64_t rows, int64_t k, int box)
{
	enum { BFLOAT16 = 9, INTERLEAVE_NONE = 0, SWIZZLE_128B = 3, L2_256B = 3, OOB_ZEROS = 0 };
	const unsigned long long dims[2] = {(unsigned long long)k, (unsigned long long)rows};
	const unsigned long long strides[1] = {(unsigned long long)k * 2};
	const unsigned boxd[2] = {64, (unsigned)box}, es[2] = {1, 1};
	return enc(t, BFLOAT16, 2, p, dims, strides, boxd, es, INTERLEAVE_NONE, SWIZZLE_128B, L2_256B,
		   OOB_ZEROS) == 0
		       ? 0
		       : -1;
}

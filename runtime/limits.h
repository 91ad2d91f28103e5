/*
 * limits.h - what the GPU tile bodies (backends/cuda/) can take, in one
 * place: the emitter (backends/core/emit_ops.c) calls a body only where
 * these hold and takes the portable one otherwise, the passes size their
 * plans by them (passes/split_attn.c), and the bodies assert them.
 * Embedded in every emitted file before runtime/common.h; included by the
 * compiler.
 */

/* the most axes a tensor has (ir/graph.h's MKC_MAX_RANK: the emitter checks) */
#define MKC_RANK 8

/* the threads of a worker (a GPU block); bench/gemv.cu tries others */
#ifndef MKC_THREADS
#define MKC_THREADS 256
#endif

/* the dot products a matvec tile computes (matvec.cuh): its rows, or
 * NormGlu's and HeadProj's rows of both weights together */
#define MKC_GEMV_ROWS 128

/* the tensor-core tile (mma.cuh) of a chunk's products: tokens by features,
 * a K step, the stages of its ring, and the shared memory it takes. The
 * stages may be set when a file is compiled; 3 measured best in the 1B
 * chunked file (H100, session 27): 4 the same, 6 made prompts 5-8% and
 * the decode step 3% slower (the shared memory is taken from L1, which
 * every worker's other loads go through), though the tile alone was 3-5%
 * faster with 6 */
#define MKC_MM_TM 128
#define MKC_MM_TN 128
#define MKC_MM_TK 64
#ifndef MKC_MM_STAGES
#define MKC_MM_STAGES 3
#endif
/* a tile's shared memory for TN weight rows and ST stages
 * (backends/cuda/mma.cuh): the ring, 1 KB to start it on 1024 bytes, as
 * wgmma's swizzle needs, and two 8-byte barriers a stage for the TMA tile */
#define MKC_MM_RING_SMEM(TN, ST) ((ST) * (MKC_MM_TM + (TN)) * MKC_MM_TK * 2 + 1024 + 16 * (ST))
#define MKC_MM_SMEM MKC_MM_RING_SMEM(MKC_MM_TN, MKC_MM_STAGES)
/* a file whose Glu tiles past a chunk's first block take MKC_MM_TN rows of
 * each weight (passes/tile.c's wide_glu; 145 KB at 3 stages) */
#define MKC_MM_WIDE_SMEM MKC_MM_RING_SMEM(2 * MKC_MM_TN, MKC_MM_STAGES)

/* a step of few tokens (2 to MKC_FEW_ROWS) has a plan of its own
 * (compiler/driver.c), whose products stream their weights as a decode
 * step's do (mma.cuh's mkc_mm_few_tile): the tokens a tile, and its
 * shared memory, each of its 8 warps' sums of its 32 rows by every token
 * (a row padded to MKC_FEW_ROWS + 1 floats, off the banks of the next) */
#define MKC_FEW_ROWS 64
#define MKC_FEW_SMEM (8 * 32 * (MKC_FEW_ROWS + 1) * 4 + MKC_FEW_NORM_SMEM)
/* and, a norm in it (passes/fuse_norm.c), each split's sums of squares of every token */
#define MKC_FEW_NORM_SMEM (8 * MKC_FEW_ROWS * 4)

/* a product's norm (NormGemm, NormGlu) on a GPU: none, or its scale's type
 * (backends/cuda/matvec.cuh's mkc_gemv_tile, mma.cuh's mkc_mm_few_tile) */
enum { MKC_NORM_NONE, MKC_NORM_F32, MKC_NORM_BF16 };

/* the decode attention bodies (attention.cuh): the head size, a multiple
 * of the warp, at most this */
#define MKC_ATTN_MAX_D 256

/* query heads that share a key head in one AttnPart tile, at most */
#define MKC_ATTN_MAX_GROUP 8

/* the chunks of positions a key head's attention is split into
 * (passes/split_attn.c), at most: the one-trip merge holds them all */
#define MKC_ATTN_MAX_CHUNKS 64


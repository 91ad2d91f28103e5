/*
 * common.h - runtime code embedded into every file mkc emits, whatever
 * the target: dimension evaluation, helpers the tile functions call, and a
 * reader that finds initializers in an ONNX file by name (weights are loaded
 * from the model itself, so the emitted file needs no protobuf library).
 *
 * Everything here is static: an emitted file is one translation unit and
 * must compile without warnings under -Wall -Wextra -Werror, so unused
 * helpers are static inline or marked unused.
 */

#ifndef MKC_UNUSED   /* a GPU target's prelude defines it first */
#define MKC_UNUSED __attribute__((unused))
#endif

/*
 * On a GPU target the tile helpers run on the device too, and a task's
 * loops are shared by the threads of a block: lane MKC_LANE of MKC_NLANES
 * takes every MKC_NLANES-th element. On the C target one thread does all.
 */
#if defined(__CUDACC__) || defined(__HIPCC__)
#define MKC_HD __host__ __device__
#define MKC_BODY __device__          /* a tile body (backends/c/): device code only */
#define MKC_LANE ((int64_t)threadIdx.x)
#define MKC_NLANES ((int64_t)blockDim.x)
#define MKC_LANES_SYNC() __syncthreads()   /* a tile reads what its own lanes wrote */
#define MKC_RESTRICT __restrict__   /* a node never writes memory it reads (memory.c) */
#else
#define MKC_HD
#define MKC_BODY
#define MKC_LANE 0
#define MKC_NLANES 1
#define MKC_LANES_SYNC() ((void)0)
#define MKC_RESTRICT
#define mkc_rt_block_sum(v) (v)   /* one lane: its own sum */
#define mkc_rt_block_sum_u64(v) (v)
#define mkc_rt_warp_sum(v) (v)
#define mkc_rt_dot8_bf16 mkc_rt_dot8_bf16_c
#define mkc_rt_dot4 mkc_rt_dot4_c
#endif

/*
 * The caches of a file compiled with --max-seqs are pages of `page`
 * positions (passes/state.c): page k holds cache positions k * page ..
 * (k + 1) * page - 1. Row r of a step is a token of sequence seq[r] at
 * position pos[r], and position p of sequence q is in page table[q *
 * per_seq + p / page]. runtime/host.h fills these arrays, in the target's
 * memory, before every step.
 */
typedef struct {
	int32_t *seq;      /* a step's rows: their sequences */
	int64_t *pos;      /* and positions */
	int32_t *table;    /* MKC_MAX_SEQS * per_seq pages (-1: none yet) */
	int64_t page, per_seq;
} mkc_rt_pages;

/* The cache position that holds position p of sequence q. */
static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_page_at(const mkc_rt_pages *pg, int64_t q, int64_t p)
{
	return (int64_t)pg->table[q * pg->per_seq + p / pg->page] * pg->page + p % pg->page;
}

/*
 * Where chunk c of C begins among a query row's n positions, in the split
 * attention's parts over caches in pages (passes/split_attn.c): c * n / C
 * rounded down to a multiple of 32, so that a GPU part's rounds of a few
 * positions never cross a page (backends/cuda/attention.cuh); chunk C
 * begins at n.
 */
static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_part_lo(int64_t c, int64_t C, int64_t n)
{
	return c >= C ? n : (c * n / C) & ~(int64_t)31;   /* down to a multiple of 32 */
}

/*
 * The chunk of query row s's positions that part tile c takes, in the
 * split attention over caches in pages: the rows' chunks turned by s,
 * chunk (c + s) % C (mkc_rt_part_lo .. of the next). At a short context
 * only a few of the C chunks hold positions (whole rounds of 32): at 129
 * positions in 16 chunks, chunks 3, 7, 11 and 15. Unturned, a step of
 * many sequences gave those chunks' tiles every sequence's positions and
 * the others none (the 1B shape, 64 sequences at context 128, H100: the
 * parts' tiles 22 us median, 78 us the longest); turned, each tile holds
 * about the same share of the rows.
 */
static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_part_chunk(int64_t c, int64_t C, int64_t s)
{
	return (c + s) % C;
}

/* A dimension c + k[0] * sym[s[0]] + k[1] * sym[s[1]] (s[i] < 0: no term). */
typedef struct {
	int64_t c, k[2];
	int s[2];
} mkc_rt_dim;

static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_dimv(mkc_rt_dim d, const int64_t *sym)
{
	return d.c + (d.s[0] >= 0 ? d.k[0] * sym[d.s[0]] : 0) + (d.s[1] >= 0 ? d.k[1] * sym[d.s[1]] : 0);
}

/* A load from a table no launch writes: on a GPU by the read-only path
 * (the tables are plain device arrays, filled at creation: emit.c). In
 * device code only (MKC_BODY). */
#if defined(__CUDACC__) || defined(__HIPCC__)
#define MKC_RO(p) __ldg(p)
#else
#define MKC_RO(p) (*(p))
#endif

/* mkc_rt_dimv of the table entry *d, by the read-only path. */
static inline MKC_BODY int64_t MKC_UNUSED
mkc_rt_dimv_ro(const mkc_rt_dim *d, const int64_t *sym)
{
	const int s0 = MKC_RO(&d->s[0]), s1 = MKC_RO(&d->s[1]);
	return MKC_RO(&d->c) + (s0 >= 0 ? MKC_RO(&d->k[0]) * sym[s0] : 0) +
	       (s1 >= 0 ? MKC_RO(&d->k[1]) * sym[s1] : 0);
}

/*
 * Element types, numbered as ONNX's (ir/dtypes.def), and their C types.
 * MKC_T_FLOAT16 has none: float16 (uint16_t, runtime/bf16.h) is only what
 * a Cast at a float16 model's boundary reads or writes (passes/half.c),
 * so it is not among the typed bodies' cases below.
 */
enum {
	MKC_T_FLOAT = 1, MKC_T_UINT8 = 2, MKC_T_INT8 = 3, MKC_T_UINT16 = 4, MKC_T_INT16 = 5,
	MKC_T_INT32 = 6, MKC_T_INT64 = 7, MKC_T_BOOL = 9, MKC_T_FLOAT16 = 10, MKC_T_DOUBLE = 11,
	MKC_T_UINT32 = 12, MKC_T_UINT64 = 13
};

/* X(code, C type) for each of them: the typed bodies' cases */
#define MKC_T_EACH(X) \
	X(MKC_T_FLOAT, float) X(MKC_T_UINT8, uint8_t) X(MKC_T_INT8, int8_t) \
	X(MKC_T_UINT16, uint16_t) X(MKC_T_INT16, int16_t) X(MKC_T_INT32, int32_t) \
	X(MKC_T_INT64, int64_t) X(MKC_T_BOOL, uint8_t) X(MKC_T_DOUBLE, double) \
	X(MKC_T_UINT32, uint32_t) X(MKC_T_UINT64, uint64_t)

/* The bytes an element of type t takes (0 for a code not above). */
#define MKC_T_SIZE(code, T) case code: return (int)sizeof(T);
static inline MKC_HD int MKC_UNUSED
mkc_t_size(int t)
{
	switch (t) {
	MKC_T_EACH(MKC_T_SIZE)
	case MKC_T_FLOAT16: return 2;
	default: return 0;
	}
}

/*
 * A tensor as a tile body sees it, a view: where element 0 is, each axis's
 * extent d and stride s in elements (0 past the rank, so that a walk over
 * rank + 1 entries needs no bound), the rank, the element type (an MKC_T_
 * code), and whether the elements are stored as bf16 (uint16_t, widened by
 * mkc_rt_bf16: a weight or a KV cache kept so) rather than in that type.
 * A tile function names its inputs x0, x1, ... and its outputs y, y1, ...
 * as views, one line each (backends/core/emit_ops.c), and a body takes the
 * views it reads and writes, then its own options. A node never writes
 * memory it reads (passes/memory.c), so a body may take its views'
 * pointers as restrict.
 */
typedef struct {
	void *p;
	int64_t d[MKC_RANK + 1], s[MKC_RANK + 1];
	int rank, type, bf16;
} mkc_view;

/* The bytes an element of v takes as stored (a bf16 one's 2). */
static inline MKC_HD int MKC_UNUSED
mkc_view_es(const mkc_view *v)
{
	return v->bf16 ? 2 : mkc_t_size(v->type);
}

/*
 * Indices from the caller. A position, a length, a token id or a Gather
 * index is data the caller gives at run time, not a shape the compiler
 * checked, so whatever takes one checks it with mkc_rt_check_index before
 * using it: one check and one sentence (mkc_rt_index_sentence) for every
 * such index on every target, e.g. "node 'rope' (RotaryEmbedding):
 * position 40 (element 2 of the positions) is outside 0..31, the rows of
 * the cos/sin caches".
 *
 * A body checks every index it will use before its loops (once a row or a
 * tile, never in an inner loop), in every lane alike, so that the lanes
 * agree and none reads past a table before another finds the index bad.
 * On an index outside its range it returns nonzero, what it found in *bad:
 * the lane's own mkc_rt_bad, a local of the tile function, which no other
 * lane writes. The tile function hands it to MKC_FAIL_INDEX (the exec's),
 * which keeps the step's first failure (taken atomically: many lanes and
 * tiles may fail at once) and makes the step return -1 with the sentence.
 */
enum {
	MKC_IX_INDEX = 1,   /* Gather's indices */
	MKC_IX_POSITION,    /* position_ids: a row of the cos/sin caches */
	MKC_IX_NEW_POSITION,   /* GroupQueryAttention's new tokens' rows, from seqlens_k */
	MKC_IX_SEQLEN,      /* GroupQueryAttention's seqlens_k */
	MKC_IX_TOTAL,       /* GroupQueryAttention's total_sequence_length */
	MKC_IX_TOKEN        /* a token id given to generate */
};

typedef struct {
	int what;               /* MKC_IX_..., 0 while nothing was found */
	int64_t at;             /* which element of the input holds it (flat) */
	int64_t value, lo, hi;  /* the value, and the range lo..hi it must lie in */
} mkc_rt_bad;

/* 0 when lo <= v <= hi; else 1, with what was found in *bad. */
static inline MKC_HD int MKC_UNUSED
mkc_rt_check_index(int64_t v, int64_t lo, int64_t hi, int what, int64_t at, mkc_rt_bad *bad)
{
	if (v >= lo && v <= hi)
		return 0;
	bad->what = what;
	bad->at = at;
	bad->value = v;
	bad->lo = lo;
	bad->hi = hi;
	return 1;
}

/* The sentence for bad, found by who ("node 'g' (Gather)", "generate"), into buf. */
static void MKC_UNUSED
mkc_rt_index_sentence(char *buf, size_t n, const char *who, const mkc_rt_bad *b)
{
	const long long v = (long long)b->value, at = (long long)b->at;
	const long long lo = (long long)b->lo, hi = (long long)b->hi;
	switch (b->what) {
	case MKC_IX_INDEX:
		snprintf(buf, n, "%s: index %lld (element %lld of the indices) is outside %lld..%lld",
			 who, v, at, lo, hi);
		break;
	case MKC_IX_POSITION:
		snprintf(buf, n, "%s: position %lld (for element %lld of the positions) is outside "
			 "%lld..%lld, the rows of the cos/sin caches", who, v, at, lo, hi);
		break;
	case MKC_IX_NEW_POSITION:
		snprintf(buf, n, "%s: position %lld (of a new token of batch entry %lld: seqlens_k + 1 - "
			 "the new positions + its place) is outside %lld..%lld, the rows of the cos/sin "
			 "caches", who, v, at, lo, hi);
		break;
	case MKC_IX_SEQLEN:
		snprintf(buf, n, "%s: seqlens_k[%lld] is %lld, not %lld (the past it is given and the "
			 "new positions, less one: mkc reads a past that holds exactly the positions "
			 "in use, not a padded or shared one)", who, at, v, lo);
		break;
	case MKC_IX_TOTAL:
		snprintf(buf, n, "%s: total_sequence_length is %lld, not %lld (the past it is given "
			 "and the new positions)", who, v, lo);
		break;
	case MKC_IX_TOKEN:
		snprintf(buf, n, "%s: token %lld (element %lld of the prompt) is outside %lld..%lld, "
			 "the vocabulary", who, v, at, lo, hi);
		break;
	default:
		snprintf(buf, n, "%s: an index from the caller is out of range", who);
		break;
	}
}

/* Slice bounds with ONNX's clamping; returns the first index (passes/infer.c's
 * mkc_slice_first computes the same at compile time). */
static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_slice_start(int64_t start, int64_t step, int64_t dim)
{
	if (start < 0)
		start += dim;
	if (step > 0)
		return start < 0 ? 0 : start > dim ? dim : start;
	return start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;   /* ONNX: [0, dim - 1] */
}

/*
 * The ONNX wire format, just enough to find a named initializer: a
 * ModelProto's graph (field 7) holds TensorProtos in field 5, each with
 * name (8), raw_data (9), external_data (13: key 1, value 2) and
 * data_location (14), and typed data in float_data (4), int32_data (5),
 * int64_data (7), double_data (10), uint64_data (11: uint32 and uint64).
 */
typedef struct {
	const uint8_t *p, *end;
} mkc_rt_pb;

static int
mkc_rt_varint(mkc_rt_pb *b, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && b->p < b->end; shift += 7) {
		uint8_t c = *b->p++;
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -1;
}

/* Next field: its number, wire type, and for length-delimited ones the bytes. */
static int
mkc_rt_field(mkc_rt_pb *b, int *field, int *wire, mkc_rt_pb *sub, uint64_t *val)
{
	uint64_t key;
	if (mkc_rt_varint(b, &key))
		return -1;
	*field = (int)(key >> 3);
	*wire = (int)(key & 7);
	switch (*wire) {
	case 0:
		return mkc_rt_varint(b, val);
	case 1:
		if (b->end - b->p < 8)
			return -1;
		b->p += 8;
		return 0;
	case 5:
		if (b->end - b->p < 4)
			return -1;
		b->p += 4;
		return 0;
	case 2:
		if (mkc_rt_varint(b, val) || *val > (uint64_t)(b->end - b->p))
			return -1;
		sub->p = b->p;
		sub->end = b->p + *val;
		b->p += *val;
		return 0;
	default:
		return -1;
	}
}

typedef struct {
	mkc_rt_pb name, raw, location, typed;
	int typed_field;
	int64_t offset, length;
	int external;
} mkc_rt_tensor;

static int64_t
mkc_rt_atoll(mkc_rt_pb s)
{
	int64_t v = 0;
	for (const uint8_t *p = s.p; p < s.end && *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_MAX - 9) / 10)
			return INT64_MAX;   /* past any file: the reader says it is too short */
		v = v * 10 + (*p - '0');
	}
	return v;
}

static int
mkc_rt_parse_tensor(mkc_rt_pb b, mkc_rt_tensor *t)
{
	memset(t, 0, sizeof *t);
	t->length = -1;
	int f, w;
	mkc_rt_pb sub;
	uint64_t v;
	while (b.p < b.end) {
		if (mkc_rt_field(&b, &f, &w, &sub, &v))
			return -1;
		if (f == 8 && w == 2)
			t->name = sub;
		else if (f == 9 && w == 2)
			t->raw = sub;
		else if (f == 14 && w == 0)
			t->external = v == 1;
		else if ((f == 4 || f == 5 || f == 7 || f == 10 || f == 11) && w == 2) {
			t->typed = sub;
			t->typed_field = f;
		} else if (f == 13 && w == 2) {
			mkc_rt_pb key = {NULL, NULL}, val = {NULL, NULL}, e = sub, s2;
			int f2, w2;
			uint64_t v2;
			while (e.p < e.end) {
				if (mkc_rt_field(&e, &f2, &w2, &s2, &v2))
					return -1;
				if (f2 == 1 && w2 == 2)
					key = s2;
				else if (f2 == 2 && w2 == 2)
					val = s2;
			}
			size_t kl = (size_t)(key.end - key.p);
			if (kl == 8 && !memcmp(key.p, "location", 8))
				t->location = val;
			else if (kl == 6 && !memcmp(key.p, "offset", 6))
				t->offset = mkc_rt_atoll(val);
			else if (kl == 6 && !memcmp(key.p, "length", 6))
				t->length = mkc_rt_atoll(val);
		}
	}
	return 0;
}

static int
mkc_rt_name_is(mkc_rt_pb n, const char *s)
{
	size_t l = strlen(s);
	return (size_t)(n.end - n.p) == l && !memcmp(n.p, s, l);
}

/* Unpacks a packed typed field (float_data and friends) into bytes of elem size. */
static int
mkc_rt_unpack_typed(const mkc_rt_tensor *t, void *dst, int64_t count, int elem)
{
	mkc_rt_pb b = t->typed;
	int64_t i = 0;
	if (t->typed_field == 4 || t->typed_field == 10) {
		int64_t w = t->typed_field == 4 ? 4 : 8;
		if ((b.end - b.p) != count * w || w != elem)
			return -1;
		memcpy(dst, b.p, (size_t)(count * w));
		return 0;
	}
	for (; b.p < b.end && i < count; i++) {
		uint64_t v;
		if (mkc_rt_varint(&b, &v))
			return -1;
		if (elem == 8)
			((int64_t *)dst)[i] = (int64_t)v;
		else if (elem == 4)
			((int32_t *)dst)[i] = (int32_t)v;
		else if (elem == 2)
			((uint16_t *)dst)[i] = (uint16_t)v;
		else
			((uint8_t *)dst)[i] = (uint8_t)v;
	}
	return i == count && b.p == b.end ? 0 : -1;
}

/* What the emitted tensor table says about each tensor. */
enum { MKC_RT_ACT, MKC_RT_INPUT, MKC_RT_OUTPUT, MKC_RT_WEIGHT, MKC_RT_SYMVAL, MKC_RT_STATE };

typedef struct {
	const char *name;
	int dtype, esize, rank, kind;   /* dtype and esize as stored (ONNX numbering) */
	mkc_rt_dim dims[8];
	const void *data;   /* embedded bytes, or NULL */
	int fdtype;         /* the type of the bytes in the model's files */
	const char *file;   /* a file of its own below the model's folder, or NULL */
	int64_t offset;     /* where its bytes start in that file */
	int64_t arena_off;  /* an intermediate's place in the shared arena, or -1 */
	int cap_axis;       /* a KV cache: its memory holds cap positions along */
	int64_t cap;        /* cap_axis (cap 0: dense as the dims say) */
	int safetensors;    /* file is a safetensors file (runtime/files.h checks its header) */
	int check;          /* embedded bytes of an initializer: compared with the file's at load */
	/* stored transposed (passes/layout.c): the file holds [xk, xn] at offset, and this
	 * weight [rows, xk] is the transpose of its columns xc0 .. xc0 + rows - 1; xk 0: not */
	int64_t xk, xn, xc0;
} mkc_rt_tensor_info;

/* A KV cache the model keeps (passes/state.c). */
typedef struct {
	int tensor;         /* index into mkc_tensors */
	const char *past;   /* the past input it replaced */
	int sym;            /* the symbol that counts its positions */
	mkc_rt_dim nnew;    /* positions each step appends: a constant, or the chunk's S */
} mkc_rt_cache;

/*
 * --profile (runtime/profile.h): each step's slot of the timeline holds
 * the symbols, two words a worker and four a task; and the tables that
 * name what each task did.
 */
#define MKC_PROF_SLOT_WORDS (MKC_NSYMS + 2 * MKC_NWORKERS + 4 * MKC_NTASKS)
#define MKC_PROF_WORDS ((size_t)MKC_PROFILE_STEPS * MKC_PROF_SLOT_WORDS)

typedef struct {
	int node, tile, ntiles;
	int wait;           /* the event it waits on, or -1 */
	int region;         /* its first region in mkc_prof_region */
} mkc_rt_prof_task;

typedef struct {
	int tensor, write;
	int dim;            /* lo and hi of each axis from here in mkc_prof_dim */
} mkc_rt_prof_region;

#if defined(__CUDACC__) || defined(__HIPCC__)
/*
 * The sum of v over the MKC_WARP lanes of a warp, in every lane: a
 * butterfly from offset MKC_WARP / 2 down, so every lane ends with the
 * same sum, added in the same order. Every lane of the warp calls it.
 */
static __device__ inline float MKC_UNUSED
mkc_rt_warp_sum(float v)
{
	for (int o = MKC_WARP / 2; o > 0; o >>= 1)
		v += mkc_shfl_xor(v, o);
	return v;
}

/*
 * The sum of every lane's v over the block, in every lane; every lane of
 * the block must call it (the partial sums are added in one order, so all
 * lanes get the same value). A block has at most 1024 lanes.
 */
static __device__ inline float MKC_UNUSED
mkc_rt_block_sum(float v)
{
	__shared__ float part[1024 / MKC_WARP];
	v = mkc_rt_warp_sum(v);
	__syncthreads();   /* the last call's partials have been read */
	if (threadIdx.x % MKC_WARP == 0)
		part[threadIdx.x / MKC_WARP] = v;
	__syncthreads();
	float s = 0;
	for (int w = 0; w < (int)(blockDim.x + MKC_WARP - 1) / MKC_WARP; w++)
		s += part[w];
	return s;
}

/*
 * The wrapping sum of every lane's v over the block, in every lane; every
 * lane of the block must call it. Integers add in any order alike, so an
 * atomic add on one shared word does.
 */
static __device__ inline uint64_t MKC_UNUSED
mkc_rt_block_sum_u64(uint64_t v)
{
	__shared__ unsigned long long total;
	__syncthreads();   /* the last call's total has been read */
	if (threadIdx.x == 0)
		total = 0;
	__syncthreads();
	atomicAdd(&total, (unsigned long long)v);
	__syncthreads();
	return (uint64_t)total;
}

/*
 * acc + a[0..4) . b[0..4) . w, w 16 bytes of 8 bf16 (element 2i in the low
 * half of word i): the one place packed bf16 pairs are widened. The
 * products are added to acc one by one, in order (the GPU bodies' sums
 * depend on that order, and the C bodies' on theirs).
 */
static __device__ __forceinline__ float MKC_UNUSED
mkc_rt_fma8_bf16(float acc, float4 a, float4 b, uint4 w)
{
	acc += a.x * __uint_as_float(w.x << 16);
	acc += a.y * __uint_as_float(w.x & 0xffff0000u);
	acc += a.z * __uint_as_float(w.y << 16);
	acc += a.w * __uint_as_float(w.y & 0xffff0000u);
	acc += b.x * __uint_as_float(w.z << 16);
	acc += b.y * __uint_as_float(w.z & 0xffff0000u);
	acc += b.z * __uint_as_float(w.w << 16);
	acc += b.w * __uint_as_float(w.w & 0xffff0000u);
	return acc;
}

/* acc + a[0..4) . w, w 16 bytes of 4 float32, in order */
static __device__ __forceinline__ float MKC_UNUSED
mkc_rt_fma4(float acc, float4 a, uint4 w)
{
	acc += a.x * __uint_as_float(w.x);
	acc += a.y * __uint_as_float(w.y);
	acc += a.z * __uint_as_float(w.z);
	acc += a.w * __uint_as_float(w.w);
	return acc;
}

/* x[0..8) . w[0..8), w in bf16; one 16-byte load of w, two of x. */
static __device__ inline float MKC_UNUSED
mkc_rt_dot8_bf16(const float *x, const uint16_t *w)
{
	return mkc_rt_fma8_bf16(0.0f, ((const float4 *)x)[0], ((const float4 *)x)[1],
				*(const uint4 *)w);
}

/* x[0..4) . w[0..4) in float32, 16-byte loads. */
static __device__ inline float MKC_UNUSED
mkc_rt_dot4(const float *x, const float *w)
{
	return mkc_rt_fma4(0.0f, *(const float4 *)x, *(const uint4 *)w);
}
#endif

/*
 * x[0..8) . w[0..8), w in bf16, and x[0..4) . w[0..4) in float32, in plain
 * C: the products added one by one from 0, in order, as the GPU's 16-byte
 * forms above add them (mkc_rt_fma8_bf16, mkc_rt_fma4). What the host
 * calls under those forms' names.
 */
static inline MKC_HD float MKC_UNUSED
mkc_rt_dot8_bf16_c(const float *x, const uint16_t *w)
{
	float acc = 0;
	for (int i = 0; i < 8; i++) {
		uint32_t u = (uint32_t)w[i] << 16;
		float f;
		memcpy(&f, &u, sizeof f);
		acc += x[i] * f;
	}
	return acc;
}

static inline MKC_HD float MKC_UNUSED
mkc_rt_dot4_c(const float *x, const float *w)
{
	float acc = 0;
	for (int i = 0; i < 4; i++)
		acc += x[i] * w[i];
	return acc;
}

/* Row-major strides of dims d[0..r); s[r] = 0. */
static inline MKC_HD void MKC_UNUSED
mkc_rt_strides(const int64_t *d, int r, int64_t *s)
{
	int64_t k = 1;
	for (int i = r - 1; i >= 0; i--) {
		s[i] = k;
		k *= d[i];
	}
	s[r] = 0;
}

static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_dot(const int64_t *idx, const int64_t *s, int r)
{
	int64_t o = 0;
	for (int i = 0; i < r; i++)
		o += idx[i] * s[i];
	return o;
}

/* Splits flat index f of a box lo..hi (extents ext) into idx; returns nothing. */
static inline MKC_HD void MKC_UNUSED
mkc_rt_unflat(int64_t f, const int64_t *lo, const int64_t *ext, int r, int64_t *idx)
{
	for (int d = r - 1; d >= 0; d--) {
		idx[d] = lo[d] + f % ext[d];
		f /= ext[d];
	}
}

static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_extents(const int64_t *lo, const int64_t *hi, int r, int64_t *ext)
{
	int64_t n = 1;
	for (int d = 0; d < r; d++) {
		ext[d] = hi[d] - lo[d];
		n *= ext[d];
	}
	return n;
}

/* The elements of dims d[0..r). */
static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_count(const int64_t *d, int r)
{
	int64_t n = 1;
	for (int i = 0; i < r; i++)
		n *= d[i];
	return n;
}

/* Strides (given) of a tensor of rank xr broadcast into rank r: 0 on broadcast axes. */
static inline MKC_HD void MKC_UNUSED
mkc_rt_bmap(const int64_t *d, const int64_t *s, int xr, int r, int64_t *out)
{
	for (int i = 0; i < r; i++) {
		int j = i - (r - xr);
		out[i] = j >= 0 && d[j] != 1 ? s[j] : 0;
	}
	out[r] = 0;
}

static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_imax(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_imin(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

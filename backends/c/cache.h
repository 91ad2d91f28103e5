/*
 * cache.h - RotaryEmbedding and the KV cache append, tile bodies in plain
 * C over the lanes of a tile (runtime/common.h: MKC_LANE of MKC_NLANES,
 * MKC_BODY), so the C, CUDA and HIP targets all embed them and call them the
 * same way. Both rotate pairs of a row the way RotaryEmbedding does:
 * halves (i, i + R/2) of the first R dimensions, or pairs (2i, 2i + 1)
 * when interleaved, by cos[i] and sin[i] of the row's position.
 *
 * The emitter (backends/core/emit_ops.c) calls mkc_rotary for every
 * RotaryEmbedding, and mkc_cache_append for a CacheAppend whose cache keeps
 * its positions on axis 2 of four; other layouts move the box with data.h's
 * mkc_strided.
 */

/* Pair (i1, i2) of row px rotated by (cs, sn) into py[o1] and py[o2]. */
static inline MKC_BODY void MKC_UNUSED
mkc_rope_pair(float *py, const float *px, int64_t i1, int64_t i2, int64_t o1, int64_t o2,
	      float cs, float sn)
{
	const float a = px[i1], c = px[i2];
	py[o1] = a * cs - c * sn;
	py[o2] = c * cs + a * sn;
}

/* RotaryEmbedding's options: the ONNX attributes as lower.c resolved them. */
typedef struct {
	int64_t heads;   /* x 3-D [B, S, heads * D]: its heads; 0: x is 4-D [B, H, S, D] */
	int64_t rot;     /* the dimensions rotated, the first of each row (0: all) */
	int inter;       /* pairs (2i, 2i + 1) rather than halves (i, i + R/2) */
	/* the box of y a tile computes, by batch, head and position of a 4-D x
	 * (the head axis whole for a 3-D one); NULL: all of y */
	const int64_t *lo, *hi;
} mkc_rotary_opt;

/*
 * RotaryEmbedding of x into y, each by its own strides (the dimension's 1:
 * x may be a Transpose's view, passes/views.c).
 * The cos/sin row of (b, s): without positions (pos NULL), row (b, s) of
 * cos [B, S, R/2]; with pos [B, S] (ONNX's position_ids), row pos[b, s]
 * of cos [positions, R/2]; with pos of one element (onnxruntime's first
 * position of every sequence), row pos[0] + s. Positions come from the
 * caller: each row's is checked against the caches' rows before any pair
 * is rotated; one outside returns 1 with it in *bad (runtime/common.h's
 * mkc_rt_check_index; the caller says which node), else 0. Without
 * positions nothing is checked, and bad may be NULL.
 */
static inline MKC_BODY int MKC_UNUSED
mkc_rotary(const mkc_view *y, const mkc_view *x, const mkc_view *cos, const mkc_view *sin,
	   const mkc_view *pos, const mkc_rotary_opt *o, mkc_rt_bad *bad)
{
	const int three = o->heads > 0;
	const int64_t B = x->d[0], H = three ? o->heads : x->d[1], S = x->d[three ? 1 : 2];
	const int64_t D = three ? x->d[2] / H : x->d[3], R = o->rot ? o->rot : D;
	const int64_t sb = x->s[0], sh = three ? D : x->s[1], ss = x->s[three ? 1 : 2];
	const int64_t yb = y->s[0], yh = three ? D : y->s[1], ys = y->s[three ? 1 : 2];
	const int64_t cb = cos->s[0], cs = pos ? 0 : cos->s[1];
	const int64_t pb = pos && pos->rank == 2 ? pos->s[0] : 0;
	const int64_t ps = pos && pos->rank == 2 ? pos->s[1] : 0;
	const int64_t padd = pos && pos->rank != 2;
	const int64_t *pp = pos ? (const int64_t *)pos->p : NULL;
	const int64_t rows = pos ? mkc_rt_imin(cos->d[0], sin->d[0]) : 0;
	for (int64_t q = 0; pp && q < B * S; q++) {   /* a row each, every lane alike */
		const int64_t b = q / S, s = q % S, at = pos->rank == 2 ? q : 0;
		if (mkc_rt_check_index(pp[b * pb + s * ps] + padd * s, 0, rows - 1, MKC_IX_POSITION, at,
				       bad))
			return 1;
	}
	const float *pc = (const float *)cos->p, *pn = (const float *)sin->p;
	const float *MKC_RESTRICT px0 = (const float *)x->p;
	float *MKC_RESTRICT py0 = (float *)y->p;
	const int64_t half = R / 2, W = D - half;   /* lanes a row: pairs, then the rest */
	const int64_t b0 = o->lo ? o->lo[0] : 0, nb = o->lo ? o->hi[0] - b0 : B;
	const int64_t h0 = o->lo && !three ? o->lo[1] : 0, nh = o->lo && !three ? o->hi[1] - h0 : H;
	const int64_t s0 = o->lo ? o->lo[three ? 1 : 2] : 0;
	const int64_t ns = o->lo ? o->hi[three ? 1 : 2] - s0 : S;
	for (int64_t p = MKC_LANE; p < nb * nh * ns * W; p += MKC_NLANES) {
		const int64_t q = p / W, i = p % W;
		const int64_t b = b0 + q / (nh * ns), h = h0 + q / ns % nh, s = s0 + q % ns;
		const float *px = px0 + b * sb + h * sh + s * ss;
		float *py = py0 + b * yb + h * yh + s * ys;
		if (i >= half) {
			py[i + half] = px[i + half];
			continue;
		}
		const int64_t c = pp ? (pp[b * pb + s * ps] + padd * s) * cb : b * cb + s * cs;
		const int64_t i1 = o->inter ? 2 * i : i, i2 = o->inter ? 2 * i + 1 : i + half;
		mkc_rope_pair(py, px, i1, i2, i1, i2, pc[c + i], pn[c + i]);
	}
	return 0;
}

/* Element o of a cache kept in float32 or bf16 (passes/kv.c: rounded to nearest even). */
static inline MKC_BODY void MKC_UNUSED
mkc_cache_put(const mkc_view *y, int64_t o, float v)
{
	if (y->bf16)
		((uint16_t *)y->p)[o] = mkc_rt_to_bf16(v);
	else
		((float *)y->p)[o] = v;
}

/*
 * New positions of x [B, H, S, D] into the cache y [B, H, positions, D],
 * x's position s at pos + s, or with caches in pages (pg, mkc --max-seqs:
 * pos 0) at the cache position of row s's sequence and position: the box lo..hi of y (heads lo[1]..hi[1],
 * positions lo[2]..hi[2], within pos .. pos + S; a prompt chunk's append
 * is cut by heads and blocks of its rows, passes/tile.c). With cos and sin
 * (rows of R / 2 values, [B, S, R/2]; NULL: none) the first R dimensions
 * of every row are rotated on the way, as RotaryEmbedding does: halves (i,
 * i + R/2), or pairs (2i, 2i + 1) when inter; the others are copied. A
 * lane takes a pair (or one copied value), so that a decode step's few
 * rows still keep every lane busy; the float operations are
 * RotaryEmbedding's body's, in its order. A box holds far fewer than 2^32
 * values: the lanes split their index in 32 bits.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_cache_append_box(const mkc_view *y, const mkc_view *x, const mkc_view *cos,
		     const mkc_view *sin, int64_t rot, int inter, int64_t pos, const int64_t *lo,
		     const int64_t *hi, const mkc_rt_pages *pg)
{
	const int64_t D = x->d[3];
	const int64_t R = rot ? rot : D, half = cos ? R / 2 : 0, W = D - half;   /* lanes a row */
	const uint32_t nh = (uint32_t)(hi[1] - lo[1]), ns = (uint32_t)(hi[2] - lo[2]);
	const uint32_t w = (uint32_t)W;
	const int64_t n = (hi[0] - lo[0]) * (int64_t)nh * (int64_t)ns * W;
	const float *MKC_RESTRICT px0 = (const float *)x->p;
	for (int64_t p = MKC_LANE; p < n; p += MKC_NLANES) {
		const uint32_t row = (uint32_t)p / w, i = (uint32_t)p % w;
		const int64_t b = lo[0] + row / ns / nh, h = lo[1] + row / ns % nh;
		const int64_t s = lo[2] - pos + row % ns;
		const float *px = px0 + b * x->s[0] + h * x->s[1] + s * x->s[2];
		const int64_t t = pg ? mkc_rt_page_at(pg, pg->seq[s], pg->pos[s]) : pos + s;
		const int64_t at = b * y->s[0] + h * y->s[1] + t * y->s[2];
		if (i >= half) {
			mkc_cache_put(y, at + i + half, px[i + half]);
			continue;
		}
		const int64_t c = b * cos->s[0] + s * cos->s[1];
		const int64_t i1 = inter ? 2 * i : i, i2 = inter ? 2 * i + 1 : i + half;
		float r[2];
		mkc_rope_pair(r, px, i1, i2, 0, 1, ((const float *)cos->p)[c + i],
			      ((const float *)sin->p)[c + i]);
		mkc_cache_put(y, at + i1, r[0]);
		mkc_cache_put(y, at + i2, r[1]);
	}
}

/* All S new positions of x at pos .. pos + S - 1. */
static inline MKC_BODY void MKC_UNUSED
mkc_cache_append(const mkc_view *y, const mkc_view *x, const mkc_view *cos, const mkc_view *sin,
		 int64_t rot, int inter, int64_t pos)
{
	const int64_t lo[4] = {0, 0, pos, 0};
	const int64_t hi[4] = {x->d[0], x->d[1], pos + x->d[2], x->d[3]};
	mkc_cache_append_box(y, x, cos, sin, rot, inter, pos, lo, hi, NULL);
}

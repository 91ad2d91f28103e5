/*
 * sample.h - drawing the next token from the logits, on every target:
 * temperature, top-k and top-p, from a seed. Embedded in every emitted file
 * after runtime/bf16.h; generate (backends/<t>/exec.*) calls mkc_rt_sample.
 *
 * How: the Gumbel-max trick. With g_i = -log(-log(u_i)), u_i uniform in
 * (0, 1), the index of the largest l_i / T + g_i is distributed as
 * softmax(l / T), and each term depends on its own logit and its own
 * random number only, so no sum over the vocabulary decides the draw:
 * the block's lanes take the argmax in any order and get what one thread
 * gets. u_i is a hash of (seed, the position the new token takes, i), so
 * a seed repeats its tokens whatever the chunking of the prompt.
 *
 * Top-k and top-p cut the vocabulary at a logit: keep every token whose
 * logit is at least the k-th largest (ties with it all kept), and of those
 * the fewest likeliest whose probability holds a share top_p of theirs (all
 * tokens as likely as the last one taken kept too). Both thresholds are
 * found by a radix select over the logits' bits, a byte at a time from the
 * top: a histogram of counts (top-k) or of probability masses (top-p) over
 * the next byte, among the logits that share the bytes chosen so far. The
 * masses are integers (exp((l - max) / T) in units of 2^-32, a token below
 * that counting nothing), so their sums are exact in any order.
 *
 * Same logits, same seed: the same token on the C target and on a GPU's
 * block. Everything here is integer arithmetic or one correctly rounded
 * float operation at a time: exp and log are written out with fmaf (no
 * libm, whose last bits differ between glibc and the GPUs), each product
 * that meets a sum does so inside an fmaf (so no compiler contracts one),
 * and the one division is IEEE's (nvcc's and hipcc's default; not with
 * --use_fast_math). The logits themselves do differ between targets in
 * their last bits, so two targets' tokens are equal where their logits are.
 *
 * Lanes: on a GPU every thread of the block calls mkc_rt_sample with the
 * same arguments and a scratch in shared memory; on the C target one
 * thread does it all.
 */

typedef struct {
	float temperature;   /* > 0 (0 is greedy: the caller takes the argmax) */
	int top_k;           /* > 0: the k likeliest tokens only; 0: all */
	float top_p;         /* in (0, 1): the likeliest holding this share; else all */
	uint64_t seed;
} mkc_rt_sampling;

/* What generate is asked (host memory). */
typedef struct {
	const int64_t *prompt;
	int n_prompt, n_new;         /* n_new: the most tokens it writes */
	mkc_rt_sampling s;           /* temperature 0: greedy, the argmax */
	const int64_t *stop;         /* n_stop tokens that end it (the last written) */
	int n_stop;
	int64_t *out;
	int *n_out;                  /* the count written (NULL: not wanted) */
} mkc_rt_gen;

/* what the lanes share: a histogram of one byte, and the results */
typedef struct {
	unsigned long long hist[256];
	unsigned long long best;   /* the running argmax, packed (mkc_rt_pack) */
	uint32_t pick;             /* the threshold the radix select has so far */
	unsigned long long above;  /* count or mass above the byte in hand */
} mkc_rt_sample_scratch;

/* the lanes' shared scratch: atomics on a GPU, plain on the C target's one lane
 * (tests/gpu/sample.cu defines the latter for its host copy) */
#ifndef MKC_SMP_ADD
#if defined(__CUDACC__) || defined(__HIPCC__)
#define MKC_SMP_ADD(p, v) atomicAdd((unsigned long long *)(p), (unsigned long long)(v))
#define MKC_SMP_MAX(p, v) atomicMax((unsigned long long *)(p), (unsigned long long)(v))
#else
#define MKC_SMP_ADD(p, v) (*(p) += (unsigned long long)(v))
#define MKC_SMP_MAX(p, v) (*(p) = *(p) > (unsigned long long)(v) ? *(p) : (unsigned long long)(v))
#endif
#endif

/* A key whose unsigned order is the floats' order; NaN below everything. */
static inline MKC_BODY uint32_t MKC_UNUSED
mkc_rt_fkey(float x)
{
	uint32_t b;
	memcpy(&b, &x, sizeof b);
	if (x != x)
		return 0;
	return b & 0x80000000u ? ~b : b | 0x80000000u;
}

static inline MKC_BODY float MKC_UNUSED
mkc_rt_unkey(uint32_t k)
{
	uint32_t b = k & 0x80000000u ? k & 0x7fffffffu : ~k;
	float x;
	memcpy(&x, &b, sizeof x);
	return x;
}

/* A value and its index in one word whose largest is the largest value,
 * the first index of equals (as torch.argmax). */
static inline MKC_BODY unsigned long long MKC_UNUSED
mkc_rt_pack(float v, int64_t i)
{
	return (unsigned long long)mkc_rt_fkey(v) << 32 | (0xffffffffu - (uint32_t)i);
}

/* splitmix64's finaliser: every bit of z reaches every bit of the result */
static inline MKC_BODY uint64_t MKC_UNUSED
mkc_rt_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* u in (0, 1), 24 random bits, for token i of the draw ctr under seed */
static inline MKC_BODY float MKC_UNUSED
mkc_rt_uniform(uint64_t seed, uint64_t ctr, int64_t i)
{
	uint64_t z = mkc_rt_mix64(seed + 0x9e3779b97f4a7c15ULL * (ctr + 1));
	z = mkc_rt_mix64(z ^ (0xd1b54a32d192ed03ULL * ((uint64_t)i + 1)));
	return ((float)(uint32_t)(z >> 40) + 0.5f) * 0x1p-24f;
}

/*
 * e^x for x <= 0, within 2 ulp; 0 below -30 (e^-30 is under the 2^-32
 * that a mass counts). x = n ln 2 + r, |r| <= ln 2 / 2, e^r by its series.
 */
static inline MKC_BODY float MKC_UNUSED
mkc_rt_exp_neg(float x)
{
	if (!(x > -30.0f))
		return 0.0f;
	const float n = rintf(x * 1.44269504f);
	float r = fmaf(-n, 0.693145752f, x);   /* ln 2 in two parts: n r is exact */
	r = fmaf(-n, 1.42860677e-06f, r);
	float p = 1.0f / 5040;
	p = fmaf(p, r, 1.0f / 720);
	p = fmaf(p, r, 1.0f / 120);
	p = fmaf(p, r, 1.0f / 24);
	p = fmaf(p, r, 1.0f / 6);
	p = fmaf(p, r, 0.5f);
	p = fmaf(p, r, 1.0f);
	p = fmaf(p, r, 1.0f);
	uint32_t b = (uint32_t)(127 + (int)n) << 23;   /* 2^n, n in [-44, 0] */
	float s;
	memcpy(&s, &b, sizeof s);
	return p * s;
}

/*
 * log x for a normal x > 0, within 2 ulp: x = 2^e m, m in [sqrt(1/2),
 * sqrt(2)), log m = 2 atanh(s) with s = (m - 1) / (m + 1), |s| < 0.172.
 */
static inline MKC_BODY float MKC_UNUSED
mkc_rt_log_pos(float x)
{
	uint32_t b;
	memcpy(&b, &x, sizeof b);
	int e = (int)(b >> 23) - 127;
	b = (b & 0x007fffffu) | 0x3f800000u;
	float m;
	memcpy(&m, &b, sizeof m);
	if (m > 1.41421356f) {
		m *= 0.5f;
		e++;
	}
	const float f = m - 1.0f;   /* exact: m is within a factor 2 of 1 */
	const float s = f / (2.0f + f), z = s * s;
	float p = 1.0f / 11;
	p = fmaf(p, z, 1.0f / 9);
	p = fmaf(p, z, 1.0f / 7);
	p = fmaf(p, z, 1.0f / 5);
	p = fmaf(p, z, 1.0f / 3);
	p = fmaf(p, z, 1.0f);
	return fmaf((float)e, 0.693147182f, (s + s) * p);
}

/* The Gumbel key of logit l (times 1/T) for token i. */
static inline MKC_BODY float MKC_UNUSED
mkc_rt_gumbel_key(float l, float inv_t, uint64_t seed, uint64_t ctr, int64_t i)
{
	const float g = -mkc_rt_log_pos(-mkc_rt_log_pos(mkc_rt_uniform(seed, ctr, i)));
	return fmaf(l, inv_t, g);
}

/* A token's probability mass in units of 2^-32, relative to the largest
 * logit's (2^32). */
static inline MKC_BODY unsigned long long MKC_UNUSED
mkc_rt_mass(float l, float top, float inv_t)
{
	return (unsigned long long)(mkc_rt_exp_neg((l - top) * inv_t) * 0x1p32f);
}

/*
 * The largest key t such that the logits of key >= t, among those of key
 * >= floor, count (mass 0) or weigh (mass 1) at least need: a byte of t
 * a round, each round a histogram of the next byte. Every lane calls it.
 */
static MKC_BODY uint32_t MKC_UNUSED
mkc_rt_radix_select(const void *x, int64_t n, int half, uint32_t floor, int mass, float top,
		    float inv_t, unsigned long long need, mkc_rt_sample_scratch *sh)
{
	if (MKC_LANE == 0) {
		sh->pick = 0;
		sh->above = 0;
	}
	for (int shift = 24; shift >= 0; shift -= 8) {
		const uint32_t hi = shift == 24 ? 0 : ~0u << (shift + 8);
		for (int64_t b = MKC_LANE; b < 256; b += MKC_NLANES)
			sh->hist[b] = 0;
		MKC_LANES_SYNC();
		const uint32_t pick = sh->pick;
		for (int64_t i = MKC_LANE; i < n; i += MKC_NLANES) {
			const float l = mkc_rt_logit(x, i, half);
			const uint32_t k = mkc_rt_fkey(l);
			if (k >= floor && (k & hi) == pick)
				MKC_SMP_ADD(&sh->hist[(k >> shift) & 255],
					    mass ? mkc_rt_mass(l, top, inv_t) : 1ULL);
		}
		MKC_LANES_SYNC();
		if (MKC_LANE == 0) {
			unsigned long long acc = sh->above;
			int b = 255;
			while (b > 0 && acc + sh->hist[b] < need)
				acc += sh->hist[b--];
			sh->pick = pick | (uint32_t)b << shift;
			sh->above = acc;
		}
		MKC_LANES_SYNC();
	}
	const uint32_t t = sh->pick;
	MKC_LANES_SYNC();   /* a later round's lane 0 may write it again */
	return t;
}

/* The largest of v over the block, in every lane. */
static MKC_BODY unsigned long long MKC_UNUSED
mkc_rt_block_max_u64(unsigned long long v, mkc_rt_sample_scratch *sh)
{
	if (MKC_LANE == 0)
		sh->best = 0;
	MKC_LANES_SYNC();
	MKC_SMP_MAX(&sh->best, v);
	MKC_LANES_SYNC();
	const unsigned long long r = sh->best;
	MKC_LANES_SYNC();
	return r;
}

/*
 * The index of the largest of n logits (float32, or float16 where half),
 * the first of equals, as torch.argmax, NaN below everything; every lane
 * returns it.
 */
static MKC_BODY int64_t MKC_UNUSED
mkc_rt_argmax(const void *x, int64_t n, int half, mkc_rt_sample_scratch *sh)
{
	unsigned long long best = 0;
	for (int64_t i = MKC_LANE; i < n; i += MKC_NLANES) {
		const unsigned long long p = mkc_rt_pack(mkc_rt_logit(x, i, half), i);
		best = p > best ? p : best;
	}
	best = mkc_rt_block_max_u64(best, sh);
	return (int64_t)(0xffffffffu - (uint32_t)best);
}

/*
 * The token drawn from n logits (float32, or float16 where half) for the
 * draw ctr (the position the token takes) under s; every lane returns it.
 * All logits NaN or -infinity: token 0; a +infinity: the first of them.
 */
static MKC_BODY int64_t MKC_UNUSED
mkc_rt_sample(const void *x, int64_t n, int half, const mkc_rt_sampling *s, uint64_t ctr,
	      mkc_rt_sample_scratch *sh)
{
	const float inv_t = 1.0f / s->temperature;
	const int64_t first = mkc_rt_argmax(x, n, half, sh);
	const float top = mkc_rt_logit(x, first, half);
	if (!(top > -INFINITY) || top == INFINITY)
		return top == INFINITY ? first : 0;
	uint32_t floor = mkc_rt_fkey(-INFINITY) + 1;   /* what a draw can give */
	if (s->top_k > 0 && s->top_k < n)
		floor = mkc_rt_radix_select(x, n, half, floor, 0, top, inv_t,
					    (unsigned long long)s->top_k, sh);
	if (s->top_p > 0 && s->top_p < 1) {
		unsigned long long z = 0;
		for (int64_t i = MKC_LANE; i < n; i += MKC_NLANES) {
			const float l = mkc_rt_logit(x, i, half);
			if (mkc_rt_fkey(l) >= floor)
				z += mkc_rt_mass(l, top, inv_t);
		}
		if (MKC_LANE == 0)
			sh->above = 0;
		MKC_LANES_SYNC();
		MKC_SMP_ADD(&sh->above, z);
		MKC_LANES_SYNC();
		z = sh->above;
		MKC_LANES_SYNC();
		unsigned long long need = (unsigned long long)((double)s->top_p * (double)z);
		floor = mkc_rt_radix_select(x, n, half, floor, 1, top, inv_t, need ? need : 1, sh);
	}
	unsigned long long best = 0;
	for (int64_t i = MKC_LANE; i < n; i += MKC_NLANES) {
		const float l = mkc_rt_logit(x, i, half);
		if (mkc_rt_fkey(l) >= floor) {
			const unsigned long long p =
				mkc_rt_pack(mkc_rt_gumbel_key(l, inv_t, s->seed, ctr, i), i);
			best = p > best ? p : best;
		}
	}
	best = mkc_rt_block_max_u64(best, sh);
	return (int64_t)(0xffffffffu - (uint32_t)best);
}

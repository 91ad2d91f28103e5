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

/*
 * A draw runs in phases (mkc_rt_draw_plan), each a pass over the logits
 * whose results are sums and maxima, so that the vocabulary can be cut
 * between the blocks of a grid as well as between one block's lanes:
 * the argmax of the logits; top-k's four radix rounds (a histogram of
 * counts over the next byte of the keys); top-p's sum of masses and its
 * four rounds (histograms of masses); the Gumbel-max draw. Between two
 * phases every block derives the same state from what the last phase
 * summed (mkc_rt_draw_begin); the block that leads also writes it down,
 * for a grid whose blocks keep nothing between launches.
 */
enum { MKC_DRAW_ARGMAX, MKC_DRAW_K0, MKC_DRAW_K3 = MKC_DRAW_K0 + 3, MKC_DRAW_SUM, MKC_DRAW_P0,
       MKC_DRAW_P3 = MKC_DRAW_P0 + 3, MKC_DRAW_GUMBEL, MKC_DRAW_MAX_PHASES };

/* what a phase starts from */
typedef struct {
	int64_t first;             /* the argmax of the logits */
	float top;                 /* its logit */
	int decided;               /* the token is first (a +infinity) or 0 (no finite logit) */
	uint32_t floor;            /* keys below it are out of the draw */
	uint32_t pick;             /* a radix select's threshold so far */
	unsigned long long above;  /* its count or mass above the byte in hand */
	unsigned long long need;   /* the count (top-k) or mass (top-p) it looks for */
} mkc_rt_draw_state;

/* What the phases sum, zero before a draw (mkc_rt_draw_clear): in a GPU
 * grid, global memory; in one block, anywhere its lanes share. */
typedef struct {
	unsigned long long best;        /* MKC_DRAW_ARGMAX: the packed argmax (mkc_rt_pack) */
	unsigned long long key;         /* MKC_DRAW_GUMBEL: the packed argmax of the keys */
	unsigned long long z;           /* MKC_DRAW_SUM: the mass of the kept logits */
	unsigned long long hist[8][256];   /* the radix rounds' histograms */
	mkc_rt_draw_state st[MKC_DRAW_MAX_PHASES];   /* the state phase p starts from */
} mkc_rt_draw_acc;

/* what one block's lanes share */
typedef struct {
	unsigned long long hist[256];
	unsigned long long best;
	mkc_rt_draw_state st;
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

/* The phases of a draw under s from n logits, into kinds; their count. */
static inline MKC_HD int MKC_UNUSED
mkc_rt_draw_plan(const mkc_rt_sampling *s, int64_t n, int *kinds)
{
	int np = 0;
	kinds[np++] = MKC_DRAW_ARGMAX;
	if (!(s->temperature > 0))
		return np;   /* greedy */
	if (s->top_k > 0 && s->top_k < n)
		for (int r = 0; r < 4; r++)
			kinds[np++] = MKC_DRAW_K0 + r;
	if (s->top_p > 0 && s->top_p < 1) {
		kinds[np++] = MKC_DRAW_SUM;
		for (int r = 0; r < 4; r++)
			kinds[np++] = MKC_DRAW_P0 + r;
	}
	kinds[np++] = MKC_DRAW_GUMBEL;
	return np;
}

/* The byte a radix round of kind k looks at (0: the top one). */
static inline MKC_BODY int MKC_UNUSED
mkc_rt_draw_round(int k)
{
	return k <= MKC_DRAW_K3 ? k - MKC_DRAW_K0 : k - MKC_DRAW_P0;
}

/* The row of acc->hist a phase of kind k sums into: top-k's rounds 0-3,
 * top-p's 4-7; -1 for a phase that is no radix round. */
static inline MKC_BODY int MKC_UNUSED
mkc_rt_draw_hist(int k)
{
	if (k >= MKC_DRAW_K0 && k <= MKC_DRAW_K3)
		return k - MKC_DRAW_K0;
	if (k >= MKC_DRAW_P0 && k <= MKC_DRAW_P3)
		return 4 + k - MKC_DRAW_P0;
	return -1;
}

/* zero what kinds[0..np) sum, before a draw; every lane calls it */
static MKC_BODY void MKC_UNUSED
mkc_rt_draw_clear(mkc_rt_draw_acc *acc, const int *kinds, int np)
{
	for (int p = 0; p < np; p++) {
		const int h = mkc_rt_draw_hist(kinds[p]);
		for (int64_t b = MKC_LANE; h >= 0 && b < 256; b += MKC_NLANES)
			acc->hist[h][b] = 0;
	}
	if (MKC_LANE == 0)
		acc->best = acc->key = acc->z = 0;
}

/*
 * Phase p of kinds begins: every lane of every block calls it, after the
 * sums of phase p - 1 are complete; sh->st is then the state it starts
 * from. leader: this block writes it into acc too (one block of a grid).
 */
static MKC_BODY void MKC_UNUSED
mkc_rt_draw_begin(int p, const int *kinds, const void *x, int half, const mkc_rt_sampling *s,
		  mkc_rt_draw_acc *acc, mkc_rt_sample_scratch *sh, int leader)
{
	if (p == 0)
		return;
	const int prev = kinds[p - 1], k = kinds[p], h = mkc_rt_draw_hist(prev);
	/* the last round's histogram, where lane 0 scans it */
	for (int64_t b = MKC_LANE; h >= 0 && b < 256; b += MKC_NLANES)
		sh->hist[b] = acc->hist[h][b];
	MKC_LANES_SYNC();
	if (MKC_LANE == 0) {
		mkc_rt_draw_state st;
		if (p > 1)
			st = acc->st[p - 1];
		else
			memset(&st, 0, sizeof st);
		if (prev == MKC_DRAW_ARGMAX) {
			st.first = (int64_t)(0xffffffffu - (uint32_t)acc->best);
			st.top = mkc_rt_logit(x, st.first, half);
			st.decided = !(st.top > -INFINITY) || st.top == INFINITY;
			st.floor = mkc_rt_fkey(-INFINITY) + 1;   /* what a draw can give */
		} else if (prev == MKC_DRAW_SUM) {
			st.need = (unsigned long long)((double)s->top_p * (double)acc->z);
			st.need = st.need ? st.need : 1;
		} else {
			const int shift = 24 - 8 * mkc_rt_draw_round(prev);
			unsigned long long sum = st.above;
			int b = 255;
			while (b > 0 && sum + sh->hist[b] < st.need)
				sum += sh->hist[b--];
			st.pick |= (uint32_t)b << shift;
			st.above = sum;
			if (prev == MKC_DRAW_K3 || prev == MKC_DRAW_P3)
				st.floor = st.pick;
		}
		if (k == MKC_DRAW_K0 || k == MKC_DRAW_P0) {   /* a select begins */
			st.pick = 0;
			st.above = 0;
			if (k == MKC_DRAW_K0)
				st.need = (unsigned long long)s->top_k;
		}
		sh->st = st;
		if (leader)
			acc->st[p] = st;
	}
	MKC_LANES_SYNC();
}

/* the largest of v over the block into *to (a maximum with it), by lane 0 */
static MKC_BODY void MKC_UNUSED
mkc_rt_draw_max(unsigned long long v, unsigned long long *to, mkc_rt_sample_scratch *sh)
{
	v = mkc_rt_block_max_u64(v, sh);
	if (MKC_LANE == 0 && v)
		MKC_SMP_MAX(to, v);
}

/*
 * Phase kind k's pass over the logits lo..hi of n (a block's share): what
 * it sums goes into acc. Every lane of the block calls it, after
 * mkc_rt_draw_begin; ctr and s as mkc_rt_sample's.
 */
static MKC_BODY void MKC_UNUSED
mkc_rt_draw_work(int k, const void *x, int64_t lo, int64_t hi, int half, const mkc_rt_sampling *s,
		 uint64_t ctr, mkc_rt_draw_acc *acc, mkc_rt_sample_scratch *sh)
{
	const mkc_rt_draw_state st = sh->st;
	const float inv_t = 1.0f / s->temperature;
	if (k == MKC_DRAW_ARGMAX) {
		unsigned long long best = 0;
		for (int64_t i = lo + MKC_LANE; i < hi; i += MKC_NLANES) {
			const unsigned long long p = mkc_rt_pack(mkc_rt_logit(x, i, half), i);
			best = p > best ? p : best;
		}
		mkc_rt_draw_max(best, &acc->best, sh);
	} else if (st.decided) {
		/* the token is known: the phases left only keep step with the grid */
	} else if (k == MKC_DRAW_GUMBEL) {
		unsigned long long best = 0;
		for (int64_t i = lo + MKC_LANE; i < hi; i += MKC_NLANES) {
			const float l = mkc_rt_logit(x, i, half);
			if (mkc_rt_fkey(l) >= st.floor) {
				const unsigned long long p =
					mkc_rt_pack(mkc_rt_gumbel_key(l, inv_t, s->seed, ctr, i), i);
				best = p > best ? p : best;
			}
		}
		mkc_rt_draw_max(best, &acc->key, sh);
	} else if (k == MKC_DRAW_SUM) {
		unsigned long long z = 0;
		for (int64_t i = lo + MKC_LANE; i < hi; i += MKC_NLANES) {
			const float l = mkc_rt_logit(x, i, half);
			if (mkc_rt_fkey(l) >= st.floor)
				z += mkc_rt_mass(l, st.top, inv_t);
		}
		if (MKC_LANE == 0)
			sh->best = 0;
		MKC_LANES_SYNC();
		if (z)
			MKC_SMP_ADD(&sh->best, z);
		MKC_LANES_SYNC();
		if (MKC_LANE == 0 && sh->best)
			MKC_SMP_ADD(&acc->z, sh->best);
		MKC_LANES_SYNC();
	} else {
		/*
		 * A radix round: the keys at or above the floor that share the bytes
		 * picked so far, by their next byte. A lane adds a run of equal bytes
		 * at once: the logits crowd into a few bytes, and a shared atomic a
		 * logit would queue the lanes on those few.
		 */
		const int r = mkc_rt_draw_round(k), shift = 24 - 8 * r, mass = k >= MKC_DRAW_P0;
		const uint32_t himask = r == 0 ? 0 : ~0u << (shift + 8);
		for (int64_t b = MKC_LANE; b < 256; b += MKC_NLANES)
			sh->hist[b] = 0;
		MKC_LANES_SYNC();
		int bin = -1;
		unsigned long long run = 0;
		for (int64_t i = lo + MKC_LANE; i < hi; i += MKC_NLANES) {
			const float l = mkc_rt_logit(x, i, half);
			const uint32_t key = mkc_rt_fkey(l);
			if (key >= st.floor && (key & himask) == st.pick) {
				const int b = (int)(key >> shift & 255);
				if (b != bin) {
					if (run)
						MKC_SMP_ADD(&sh->hist[bin], run);
					bin = b;
					run = 0;
				}
				run += mass ? mkc_rt_mass(l, st.top, inv_t) : 1ULL;
			}
		}
		if (run)
			MKC_SMP_ADD(&sh->hist[bin], run);
		MKC_LANES_SYNC();
		unsigned long long *h = acc->hist[mkc_rt_draw_hist(k)];
		for (int64_t b = MKC_LANE; b < 256; b += MKC_NLANES)
			if (sh->hist[b])
				MKC_SMP_ADD(&h[b], sh->hist[b]);
		MKC_LANES_SYNC();
	}
}

/* The token, after the last of np phases: from its sums, and from the
 * state it began with (written by the leading block). */
static inline MKC_BODY int64_t MKC_UNUSED
mkc_rt_draw_token(int np, const mkc_rt_draw_acc *acc)
{
	if (np == 1)   /* greedy */
		return (int64_t)(0xffffffffu - (uint32_t)acc->best);
	const mkc_rt_draw_state *st = &acc->st[np - 1];
	if (st->decided)
		return st->top == INFINITY ? st->first : 0;
	return (int64_t)(0xffffffffu - (uint32_t)acc->key);
}

/*
 * The token drawn from n logits (float32, or float16 where half) for the
 * draw ctr (the position the token takes) under s (temperature 0: the
 * argmax), by one block: every lane calls it and returns the token. acc:
 * the sums, shared by the lanes (zeroed here). All logits NaN or
 * -infinity: token 0; a +infinity: the first of them.
 */
static MKC_BODY int64_t MKC_UNUSED
mkc_rt_sample(const void *x, int64_t n, int half, const mkc_rt_sampling *s, uint64_t ctr,
	      mkc_rt_sample_scratch *sh, mkc_rt_draw_acc *acc)
{
	int kinds[MKC_DRAW_MAX_PHASES];
	const int np = mkc_rt_draw_plan(s, n, kinds);
	mkc_rt_draw_clear(acc, kinds, np);
	MKC_LANES_SYNC();
	for (int p = 0; p < np; p++) {
		mkc_rt_draw_begin(p, kinds, x, half, s, acc, sh, 1);
		mkc_rt_draw_work(kinds[p], x, 0, n, half, s, ctr, acc, sh);
		MKC_LANES_SYNC();
	}
	const int64_t t = mkc_rt_draw_token(np, acc);
	MKC_LANES_SYNC();   /* before a later call's lane 0 writes the scratch again */
	return t;
}

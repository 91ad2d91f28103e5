/*
 * reduce.h - ReduceSum, ReduceMean and ReduceMax of a float32 tensor as
 * a tile body in plain C over the lanes of a tile (runtime/common.h:
 * MKC_LANE of MKC_NLANES), embedded by every target after scalar.h
 * (ReduceMax is Max folded over the row: one NaN makes it NaN).
 *
 * The node is one whole tile: output element o is the o-th combination of
 * the kept axes (row-major), so the output is written densely, a lane an
 * element, each summing its elements in row-major order of the reduced
 * axes.
 */

enum { MKC_REDUCE_SUM, MKC_REDUCE_MEAN, MKC_REDUCE_MAX };

/* op over the axes d of x where red[d] is 1, into y (dense). */
static inline MKC_BODY void MKC_UNUSED
mkc_reduce(int op, const mkc_view *y, const mkc_view *x, const int *red)
{
	float *MKC_RESTRICT py = (float *)y->p;
	const float *MKC_RESTRICT px = (const float *)x->p;
	const int r = x->rank;
	int64_t kd[MKC_RANK + 1], rd[MKC_RANK + 1], idx[MKC_RANK + 1], ridx[MKC_RANK + 1];
	const int64_t zero[MKC_RANK + 1] = {0};
	int64_t on = 1, rn = 1;   /* the kept and the reduced elements */
	for (int d = 0; d < r; d++) {
		kd[d] = red[d] ? 1 : x->d[d];
		rd[d] = red[d] ? x->d[d] : 1;
		on *= kd[d];
		rn *= rd[d];
	}
	for (int64_t o = MKC_LANE; o < on; o += MKC_NLANES) {
		mkc_rt_unflat(o, zero, kd, r, idx);
		const int64_t base = mkc_rt_dot(idx, x->s, r);
		float acc = op == MKC_REDUCE_MAX ? -INFINITY : 0;
		for (int64_t k = 0; k < rn; k++) {
			mkc_rt_unflat(k, zero, rd, r, ridx);
			const float v = px[base + mkc_rt_dot(ridx, x->s, r)];
			acc = op == MKC_REDUCE_MAX ? (float)mkc_rt_fmax(acc, v) : acc + v;
		}
		py[o] = op == MKC_REDUCE_MEAN ? acc / (float)rn : acc;
	}
}

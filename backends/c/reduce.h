/*
 * reduce.h - ReduceSum, ReduceMean and ReduceMax of a float32 tensor
 * (ReduceSum and ReduceMax of an int32 or int64 one too) as a tile body in plain C over the lanes of a tile (runtime/common.h:
 * MKC_LANE of MKC_NLANES), embedded by every target after scalar.h
 * (ReduceMax is Max folded over the row: one NaN makes it NaN).
 *
 * The node is one whole tile: output element o is the o-th combination of
 * the kept axes (row-major), so the output is written densely, a lane an
 * element, each summing its elements in row-major order of the reduced
 * axes; on a GPU a sum to one value is the block's.
 */

enum { MKC_REDUCE_SUM, MKC_REDUCE_MEAN, MKC_REDUCE_MAX };

/*
 * op over the axes d of x where red[d] is 1, into y (dense). esize 0: x
 * and y float32; 4 or 8: int32 or int64 (ReduceSum and ReduceMax), the sum
 * in 64 bits, wrapping as two's complement (an overflow is undefined in
 * ONNX; this one is at least not undefined in C), then cut to the type.
 */
static inline MKC_BODY void MKC_UNUSED
mkc_reduce(int op, const mkc_view *y, const mkc_view *x, const int *red, int esize)
{
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
#if defined(__CUDACC__) || defined(__HIPCC__)
	/*
	 * One output (every axis reduced: a mask's length) on a GPU: the
	 * block's lanes share it, each summing every MKC_NLANES-th element,
	 * then the block adds the partial sums (floats in mkc_rt_block_sum's
	 * order; integers, whose wrapping sum has no order, by
	 * mkc_rt_block_sum_u64). One lane summing 1025 int64 took 260 us on an
	 * H200.
	 */
	if (on == 1 && op != MKC_REDUCE_MAX) {
		float acc = 0;
		uint64_t iacc = 0;
		for (int64_t k = MKC_LANE; k < rn; k += MKC_NLANES) {
			mkc_rt_unflat(k, zero, rd, r, ridx);
			const int64_t at = mkc_rt_dot(ridx, x->s, r);
			if (!esize)
				acc += ((const float *)x->p)[at];
			else
				iacc += (uint64_t)(esize == 8 ? ((const int64_t *)x->p)[at]
							    : ((const int32_t *)x->p)[at]);
		}
		if (!esize)
			acc = mkc_rt_block_sum(acc);
		else
			iacc = mkc_rt_block_sum_u64(iacc);
		if (MKC_LANE == 0 && !esize)
			((float *)y->p)[0] = op == MKC_REDUCE_MEAN ? acc / (float)rn : acc;
		else if (MKC_LANE == 0 && esize == 8)
			((int64_t *)y->p)[0] = (int64_t)iacc;
		else if (MKC_LANE == 0)
			((int32_t *)y->p)[0] = (int32_t)(uint32_t)iacc;
		return;
	}
#endif
	for (int64_t o = MKC_LANE; o < on; o += MKC_NLANES) {
		mkc_rt_unflat(o, zero, kd, r, idx);
		const int64_t base = mkc_rt_dot(idx, x->s, r);
		float acc = op == MKC_REDUCE_MAX ? -INFINITY : 0;
		uint64_t iacc = op == MKC_REDUCE_MAX ? (uint64_t)INT64_MIN : 0;
		for (int64_t k = 0; k < rn; k++) {
			mkc_rt_unflat(k, zero, rd, r, ridx);
			const int64_t at = base + mkc_rt_dot(ridx, x->s, r);
			if (!esize) {
				const float v = ((const float *)x->p)[at];
				acc = op == MKC_REDUCE_MAX ? (float)mkc_rt_fmax(acc, v) : acc + v;
				continue;
			}
			const int64_t v = esize == 8 ? ((const int64_t *)x->p)[at]
						     : ((const int32_t *)x->p)[at];
			if (op != MKC_REDUCE_MAX)
				iacc += (uint64_t)v;
			else if (v > (int64_t)iacc)
				iacc = (uint64_t)v;
		}
		if (!esize)
			((float *)y->p)[o] = op == MKC_REDUCE_MEAN ? acc / (float)rn : acc;
		else if (esize == 8)
			((int64_t *)y->p)[o] = (int64_t)iacc;
		else
			((int32_t *)y->p)[o] = (int32_t)(uint32_t)iacc;
	}
}

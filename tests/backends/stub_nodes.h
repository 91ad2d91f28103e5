/*
 * stub_nodes.h - the tile functions of stub_plan.h, which the emitter
 * writes after the runtime texts: they do next to nothing, as the test
 * only compiles (node 0 reports an index out of range, as a Gather does).
 * (mkc_run_task is unused where the exec runs nodes itself, as in the
 * emitted file.)
 */
MKC_STUB_FN void
mkc_task_bounds(const struct mkc_model *m, int task, int64_t *lo, int64_t *hi)
{
	(void)m, (void)task, (void)lo, (void)hi;
}

/* node 0 fails as a Gather would on an index out of range: the exec's MKC_FAIL_INDEX */
MKC_STUB_FN void
mkc_run_node(struct mkc_model *m, int node, const int64_t *lo, const int64_t *hi)
{
	(void)lo, (void)hi;
	mkc_rt_bad bad;
	if (node == 0 && mkc_rt_check_index(-9, -4, 3, MKC_IX_INDEX, 0, &bad))
		MKC_FAIL_INDEX(m, node, &bad);
}

MKC_STUB_FN void MKC_UNUSED
mkc_run_task(struct mkc_model *m, int task)
{
	int64_t lo[MKC_RANK], hi[MKC_RANK];
	mkc_task_bounds(m, task, lo, hi);
	mkc_run_node(m, mkc_task_node[task], lo, hi);
}

MKC_STUB_FN void
mkc_fill_symvals(struct mkc_model *m)
{
	(void)m;
}


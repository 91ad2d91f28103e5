/*
 * batch.h - generate for many requests at once (a file compiled with mkc
 * --max-seqs): embedded after runtime/host.h; $P_generate_batch calls it.
 *
 * The schedule is runtime/sched.h's: before each step it admits what fits
 * and lays out the step's rows (every running request's next token, then
 * as much of the admitted prompts as the step holds, a sequence a
 * request); after it, each request whose row gave logits draws its token
 * (generate's draw, so a request's tokens are those it gets alone:
 * tests/compiler/test_seqs.c), the caller's callback hears it, and a
 * request ends after a stop token or its last token (its sequence closed,
 * its pages back), making room for the next.
 *
 * Where that loop runs is the target's: on a GPU target (MKC_BATCH_IN_KERNEL)
 * inside one launch, block 0 scheduling between steps and the grid drawing
 * a row a block (backends/cuda/exec.cuh), the tokens heard from a ring in
 * host memory while it runs; on the C target here, a step at a time.
 */

#if MKC_MAX_SEQS && MKC_CAN_GENERATE

/* The step and its draws, a step at a time from the host (the C target). */
static int MKC_UNUSED
mkc_batch_steps(mkc_host *m, mkc_rt_batch *b, mkc_rt_on_token cb, void *user)
{
	void *ids = NULL, *pos = NULL, *logits = NULL;
	const size_t lrow = (size_t)MKC_GEN_VOCAB * (MKC_GEN_LOGITS_F16 ? 2 : 4);
	int rc = mkc_alloc_buf(m, (size_t)b->rows * 8, &ids) ||
		 mkc_alloc_buf(m, (size_t)b->rows * 8, &pos) ||
		 mkc_alloc_buf(m, (size_t)b->rows * lrow, &logits);
	int64_t dims[MKC_NSYMS + 1];
	for (int heard = 0; rc == 0 && b->left > 0;) {
		const int nr = mkc_rt_batch_plan(b);
		if (nr == 0) {   /* sched.h admits the first waiting request into an empty pool */
			mkc_seterr(m, "generate_batch: %d requests wait and none runs", b->left);
			rc = -1;
			break;
		}
		mkc_gen_dims(dims, nr);
		const void *in[MKC_NINPUTS + 1] = {0};
		void *outs[MKC_NOUTPUTS + 1] = {0};
		for (int i = 0; i < MKC_NINPUTS; i++)
			in[i] = i == MKC_GEN_IDS ? ids : pos;
		outs[MKC_GEN_LOGITS] = logits;
		m->step_seqs = b->seq;
		m->pool->nfree = b->nfree;   /* the pool's stack is b's: one count of it */
		rc = mkc_store(m, ids, b->ids, (size_t)nr * 8) ||
		     mkc_store(m, pos, b->pos, (size_t)nr * 8) || mkc_step(m, in, outs, dims);
		b->nfree = m->pool->nfree;
		m->step_seqs = NULL;
		if (rc)
			break;
		mkc_end_step(m);
		rc = b->nd && mkc_sample_rows(m, logits, b->nd, b->s, b->ctr, b->tok, b->at);
		if (rc == 0)
			mkc_rt_batch_take(b);
		for (; cb && heard < b->heard; heard++)
			cb(user, (int)b->ring[2 * heard], b->ring[2 * heard + 1]);
	}
	if (ids)
		mkc_free_buf(ids);
	if (pos)
		mkc_free_buf(pos);
	if (logits)
		mkc_free_buf(logits);
	return rc;
}

static int
mkc_generate_batch(mkc_host *m, mkc_rt_request *req, int n, mkc_rt_on_token cb, void *user)
{
	struct mkc_seq_pool *p = m->pool;
	const int64_t rows = MKC_STEP_ROWS;
	int64_t total = 0;
	if (mkc_check_loaded(m))
		return -1;
	for (int i = 0; i < n; i++) {
		mkc_rt_gen g;
		memset(&g, 0, sizeof g);
		g.prompt = req[i].prompt, g.n_prompt = req[i].n_prompt, g.n_new = req[i].max_new;
		g.s = req[i].s, g.stop = req[i].stop, g.n_stop = req[i].n_stop, g.out = req[i].out;
		if (!g.prompt || !g.out || g.n_prompt < 1 || g.n_new < 1) {
			mkc_seterr(m, "request %d needs at least one prompt token, one new token and a "
				   "place for them", i);
			return -1;
		}
		if (mkc_sampling_check(m, &g))
			return -1;
		const int steps = g.n_prompt + g.n_new - 1;
		if ((int64_t)steps > MKC_SEQ_PAGES * MKC_PAGE) {
			mkc_seterr(m, "request %d: %d prompt and %d new tokens need %d positions; a "
				   "sequence holds %lld", i, g.n_prompt, g.n_new, steps,
				   (long long)(MKC_SEQ_PAGES * MKC_PAGE));
			return -1;
		}
		if ((steps + MKC_PAGE - 1) / MKC_PAGE > MKC_NPAGES) {
			mkc_seterr(m, "request %d: %d positions need %lld pages of %lld; the pool holds "
				   "%lld (--cache-pages)", i, steps,
				   (long long)((steps + MKC_PAGE - 1) / MKC_PAGE), (long long)MKC_PAGE,
				   (long long)MKC_NPAGES);
			return -1;
		}
		req[i].seq = -1, req[i].fed = 0, req[i].n_out = 0, req[i].done = 0;
		total += req[i].max_new;
	}
	/* every sequence closed: the requests take them from 0 (and sequence 0
	 * is open and empty again at the end, as the single-sequence calls
	 * expect) */
	for (int q = 0; q < MKC_MAX_SEQS; q++)
		if (p->open[q] && mkc_seq_close(m, q, 0))
			return -1;
	mkc_rt_batch b;
	memset(&b, 0, sizeof b);
	b.req = req, b.n = n, b.left = n, b.rows = rows;
	b.nseqs = MKC_MAX_SEQS, b.page = MKC_PAGE, b.per_seq = MKC_SEQ_PAGES;
	b.open = p->open, b.dirty = p->dirty, b.len = p->len, b.table = p->table;
	b.refs = p->refs, b.free_pages = p->free_pages, b.nfree = p->nfree;
	b.owner = (int *)malloc((size_t)rows * sizeof *b.owner);
	b.ids = (int64_t *)malloc((size_t)rows * sizeof *b.ids);
	b.pos = (int64_t *)malloc((size_t)rows * sizeof *b.pos);
	b.seq = (int32_t *)malloc((size_t)rows * sizeof *b.seq);
	b.ready = (int *)malloc((size_t)MKC_MAX_SEQS * sizeof *b.ready);
	b.at = (int64_t *)malloc((size_t)MKC_MAX_SEQS * sizeof *b.at);
	b.ctr = (int64_t *)malloc((size_t)MKC_MAX_SEQS * sizeof *b.ctr);
	b.s = (mkc_rt_sampling *)malloc((size_t)MKC_MAX_SEQS * sizeof *b.s);
	b.tok = (int64_t *)malloc((size_t)MKC_MAX_SEQS * sizeof *b.tok);
	b.ring = (int64_t *)malloc((size_t)total * 2 * sizeof *b.ring);
	int rc = !b.owner || !b.ids || !b.pos || !b.seq || !b.ready || !b.at || !b.ctr || !b.s ||
		 !b.tok || !b.ring;
	if (rc)
		mkc_seterr(m, "out of memory for a batch of %d requests", n);
#if MKC_BATCH_IN_KERNEL
	rc = rc || mkc_batch_kernel(m, &b, cb, user);
#else
	rc = rc || mkc_batch_steps(m, &b, cb, user);
#endif
	for (int i = 0; i < n; i++)   /* an error: every sequence back */
		if (req[i].seq >= 0)
			mkc_rt_batch_end(&b, &req[i]);
	p->nfree = b.nfree;
	p->open[0] = 1;
	const int stored = mkc_seq_store_table(m);
	rc = rc || stored;
	m->err[0] = rc ? m->err[0] : 0;
	free(b.owner), free(b.ids), free(b.pos), free(b.seq), free(b.ready), free(b.at);
	free(b.ctr), free(b.s), free(b.tok), free(b.ring);
	return rc ? -1 : 0;
}

#endif

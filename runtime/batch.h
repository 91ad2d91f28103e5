/*
 * batch.h - generate for many requests at once (a file compiled with mkc
 * --max-seqs): embedded after runtime/host.h; $P_generate_batch calls it.
 *
 * The loop runs on the host, a step at a time, as a serving engine's does:
 * each step takes every running request's next token, then as much of the
 * admitted prompts as the step holds (the compiled chunk's rows), a sequence
 * a request; it draws each request that has a new token from its row
 * (mkc_sample_rows: on the device on a GPU target), hands the token to the
 * caller's callback, retires a request after a stop token or its last
 * token (its sequence closed, its pages back) and admits a waiting one into
 * the freed sequence. The draws are generate's: a request's tokens are
 * those it gets alone (tests/compiler/test_seqs.c). On a GPU each step is a
 * launch and its tokens a small copy back; the loop inside one launch (as
 * Mirage's persistent kernel admits requests) is not done yet.
 */

#if MKC_MAX_SEQS && MKC_CAN_GENERATE

/* A request of the batch: what $P_request holds, and where it stands. */
typedef struct {
	const int64_t *prompt;
	int n_prompt, max_new;
	mkc_rt_sampling s;
	const int64_t *stop;
	int n_stop;
	int64_t *out;
	int n_out;
	int seq;          /* its sequence, or -1 before it is admitted or after it ends */
	int fed;          /* prompt tokens in the cache */
	int done;
} mkc_rt_request;

typedef void (*mkc_rt_on_token)(void *user, int request, int64_t token);

/* Retires request i: its sequence closed (pages back). */
static int
mkc_batch_end(mkc_host *m, mkc_rt_request *r)
{
	r->done = 1;
	int q = r->seq;
	r->seq = -1;
	return q >= 0 ? mkc_seq_close(m, q, 0) : 0;
}

static int
mkc_generate_batch(mkc_host *m, mkc_rt_request *req, int n, mkc_rt_on_token cb, void *user)
{
	const int64_t rows = MKC_STEP_ROWS;
	for (int i = 0; i < n; i++) {
		mkc_rt_gen g;
		memset(&g, 0, sizeof g);
		g.prompt = req[i].prompt, g.n_prompt = req[i].n_prompt, g.n_new = req[i].max_new;
		g.s = req[i].s, g.stop = req[i].stop, g.n_stop = req[i].n_stop, g.out = req[i].out;
		int steps;
		if (mkc_check_loaded(m))
			return -1;
		if (!g.prompt || !g.out || g.n_prompt < 1 || g.n_new < 1) {
			mkc_seterr(m, "request %d needs at least one prompt token, one new token and a "
				   "place for them", i);
			return -1;
		}
		if (mkc_sampling_check(m, &g))
			return -1;
		steps = g.n_prompt + g.n_new - 1;
		if ((int64_t)steps > MKC_SEQ_PAGES * MKC_PAGE) {
			mkc_seterr(m, "request %d: %d prompt and %d new tokens need %d positions; a "
				   "sequence holds %lld", i, g.n_prompt, g.n_new, steps,
				   (long long)(MKC_SEQ_PAGES * MKC_PAGE));
			return -1;
		}
		req[i].seq = -1, req[i].fed = 0, req[i].n_out = 0, req[i].done = 0;
	}
	/* every sequence closed: the requests take them from 0 (and sequence 0
	 * is open and empty again at the end, as the single-sequence calls
	 * expect) */
	for (int q = 0; q < MKC_MAX_SEQS; q++)
		if (m->pool->open[q] && mkc_seq_close(m, q, 0))
			return -1;
	void *ids = NULL, *pos = NULL, *logits = NULL;
	const size_t lrow = (size_t)MKC_GEN_VOCAB * (MKC_GEN_LOGITS_F16 ? 2 : 4);
	int64_t *hid = (int64_t *)malloc((size_t)rows * sizeof *hid);
	int64_t *hpos = (int64_t *)malloc((size_t)rows * sizeof *hpos);
	int64_t *at = (int64_t *)malloc((size_t)n * sizeof *at), *tok = NULL;
	int *who = (int *)malloc((size_t)rows * sizeof *who);
	int *ready = (int *)malloc((size_t)n * sizeof *ready);
	int *owner = (int *)malloc((size_t)rows * sizeof *owner);
	mkc_rt_sampling *s = (mkc_rt_sampling *)malloc((size_t)n * sizeof *s);
	int64_t *spos = (int64_t *)malloc((size_t)n * sizeof *spos);
	int rc = !hid || !hpos || !at || !who || !ready || !owner || !s || !spos ||
		 !(tok = (int64_t *)malloc((size_t)n * sizeof *tok));
	if (rc)
		mkc_seterr(m, "out of memory for a batch of %d requests", n);
	rc = rc || mkc_alloc_buf(m, (size_t)rows * 8, &ids) || mkc_alloc_buf(m, (size_t)rows * 8, &pos) ||
	     mkc_alloc_buf(m, (size_t)rows * lrow, &logits);
	int64_t dims[MKC_NSYMS + 1];
	for (int left = n, next = 0; rc == 0 && left > 0;) {
		/* admit: a sequence a request, in order */
		for (int q; next < n && mkc_seq_open(m, &q) == 0; next++)
			req[next].seq = q;
		int nr = 0;
		for (int i = 0; i < next; i++)   /* running tokens first, then prompts */
			if (!req[i].done && req[i].fed == req[i].n_prompt && nr < rows) {
				owner[nr] = i, who[nr] = req[i].seq, hid[nr] = req[i].out[req[i].n_out - 1];
				hpos[nr++] = req[i].n_prompt + req[i].n_out - 1;
			}
		for (int i = 0; i < next; i++)
			while (!req[i].done && req[i].fed < req[i].n_prompt && nr < rows) {
				owner[nr] = i, who[nr] = req[i].seq, hid[nr] = req[i].prompt[req[i].fed];
				hpos[nr++] = req[i].fed++;
			}
		mkc_gen_dims(dims, nr);
		const void *in[MKC_NINPUTS + 1] = {0};
		void *outs[MKC_NOUTPUTS + 1] = {0};
		for (int i = 0; i < MKC_NINPUTS; i++)
			in[i] = i == MKC_GEN_IDS ? ids : pos;
		outs[MKC_GEN_LOGITS] = logits;
		m->step_seqs = who;
		rc = mkc_store(m, ids, hid, (size_t)nr * 8) || mkc_store(m, pos, hpos, (size_t)nr * 8) ||
		     mkc_step(m, in, outs, dims);
		m->step_seqs = NULL;
		if (rc)
			break;
		mkc_end_step(m);
		/* the requests whose last row this is and that have a token to draw */
		int nd = 0;
		for (int r = 0; r < nr; r++) {
			mkc_rt_request *q = &req[owner[r]];
			if ((r + 1 < nr && owner[r + 1] == owner[r]) || q->fed < q->n_prompt)
				continue;
			ready[nd] = owner[r], at[nd] = r, s[nd] = q->s;
			spos[nd++] = hpos[r] + 1;
		}
		rc = nd && mkc_sample_rows(m, logits, nd, s, spos, tok, at);
		for (int k = 0; k < nd && rc == 0; k++) {
			mkc_rt_request *q = &req[ready[k]];
			q->out[q->n_out++] = tok[k];
			if (cb)
				cb(user, ready[k], tok[k]);
			int stop = q->n_out == q->max_new;
			for (int j = 0; j < q->n_stop; j++)
				stop |= q->stop[j] == tok[k];
			if (stop) {
				rc = mkc_batch_end(m, q);
				left--;
			}
		}
	}
	for (int i = 0; i < n; i++)   /* an error: every sequence back */
		if (req[i].seq >= 0)
			mkc_batch_end(m, &req[i]);
	m->pool->open[0] = 1;
	m->err[0] = rc ? m->err[0] : 0;
	if (ids)
		mkc_free_buf(ids);
	if (pos)
		mkc_free_buf(pos);
	if (logits)
		mkc_free_buf(logits);
	free(hid), free(hpos), free(at), free(who), free(ready), free(owner), free(s), free(spos);
	free(tok);
	return rc ? -1 : 0;
}

#endif

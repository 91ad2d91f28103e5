/*
 * sched.h - generate_batch's schedule (runtime/batch.h): code that runs
 * where the loop runs, on the host for the C target and in block 0 of the
 * kernel on a GPU target (backends/cuda/exec.cuh's batch loop), over the
 * same state in that target's memory. Embedded after runtime/sample.h.
 *
 * Before each step mkc_rt_batch_plan admits waiting requests, in order,
 * while a sequence is free and the pool holds the pages of the request's
 * whole life (its prompt and its tokens but the last); the first that does
 * not fit waits, and those after it with it. So a running request never
 * finds the pool empty, and one that fits an empty pool (the caller checks)
 * is admitted once enough requests have ended. The plan then lays out the
 * step's rows: every running request's next token, then as much of the
 * admitted prompts as the step holds, in request order, and the rows whose
 * logits give a request its next token. After the step and its draws,
 * mkc_rt_batch_take gives each drawn token to its request (and to the
 * ring, where the host hears it) and retires a request after a stop token
 * or its last token: its sequence closed, its pages back on the stack.
 */

/* A request of the batch, in the memory of the loop (prompt, stop, out too). */
typedef struct {
	const int64_t *prompt;
	int n_prompt, max_new;
	mkc_rt_sampling s;
	const int64_t *stop;
	int n_stop;
	int64_t *out;
	int n_out;
	int seq;    /* its sequence: -1 before it is admitted and after it ends */
	int fed;    /* prompt tokens in the cache */
	int done;
} mkc_rt_request;

/*
 * The batch: its requests, the sequences' pool (runtime/seqs.h's on the
 * host; a device copy of its stack and flags on a GPU, the table the one
 * the bodies read) and the step being run.
 */
typedef struct {
	mkc_rt_request *req;
	int n, next, left;           /* requests; the next to admit; those not done */
	int64_t rows;                /* the most rows a step holds */
	int nseqs;
	int64_t page, per_seq;       /* positions a page; pages a sequence */
	unsigned char *open;         /* nseqs */
	unsigned char *dirty;        /* nseqs, or NULL: the table is the bodies' own */
	int64_t *len;                /* nseqs, or NULL: not kept */
	int32_t *table;              /* nseqs * per_seq pages (-1: none) */
	int32_t *refs, *free_pages;  /* a count a page; the free ones, a stack */
	int64_t nfree;
	/* the step */
	int nr, nd;                  /* rows; rows whose logits are drawn */
	int *owner;                  /* rows: the request of each */
	int32_t *seq;                /* rows: its sequence */
	int64_t *ids, *pos;          /* rows: the token fed, its position */
	int *ready;                  /* nd: the requests that get a token */
	int64_t *at, *ctr;           /* nd: the row of its logits; the draw's counter */
	mkc_rt_sampling *s;          /* nd: how each is drawn */
	int64_t *tok;                /* nd: the drawn tokens */
	int64_t *ring;               /* (request, token) pairs as they come */
	int heard;                   /* pairs in the ring */
} mkc_rt_batch;

/* Hears each token of a request as it is drawn. */
typedef void (*mkc_rt_on_token)(void *user, int request, int64_t token);

/* The pages request r takes: its positions are its prompt and its tokens but the last. */
static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_batch_pages(const mkc_rt_batch *b, const mkc_rt_request *r)
{
	return ((int64_t)r->n_prompt + r->max_new - 1 + b->page - 1) / b->page;
}

/*
 * Gives back logical pages from.. of one sequence's row of the page table
 * (per_seq entries): each drops a holder, a page with none left goes on
 * the free stack, the entry becomes -1. The entries it cleared.
 */
static inline MKC_HD int64_t MKC_UNUSED
mkc_rt_pages_release(int32_t *row, int64_t per_seq, int64_t from, int32_t *refs,
		     int32_t *free_pages, int64_t *nfree)
{
	int64_t n = 0;
	for (int64_t j = from; j < per_seq; j++) {
		if (row[j] < 0)
			continue;
		if (--refs[row[j]] == 0)
			free_pages[(*nfree)++] = row[j];
		row[j] = -1;
		n++;
	}
	return n;
}

/* Request r ends: its sequence closed, its pages back. */
static inline MKC_HD void MKC_UNUSED
mkc_rt_batch_end(mkc_rt_batch *b, mkc_rt_request *r)
{
	const int q = r->seq;
	r->done = 1;
	r->seq = -1;
	b->left--;
	if (q < 0)
		return;
	mkc_rt_pages_release(&b->table[q * b->per_seq], b->per_seq, 0, b->refs, b->free_pages,
			     &b->nfree);
	b->open[q] = 0;
	if (b->len)
		b->len[q] = 0;
	if (b->dirty)
		b->dirty[q] = 1;
}

/* Admits what fits and lays out the next step; its rows (0: every request has ended). */
static inline MKC_HD int MKC_UNUSED
mkc_rt_batch_plan(mkc_rt_batch *b)
{
	while (b->next < b->n) {
		mkc_rt_request *r = &b->req[b->next];
		const int64_t need = mkc_rt_batch_pages(b, r);
		int q = 0;
		while (q < b->nseqs && b->open[q])
			q++;
		if (q == b->nseqs || need > b->nfree)
			break;
		b->open[q] = 1;
		if (b->len)
			b->len[q] = 0;
		for (int64_t j = 0; j < need; j++) {
			const int32_t pg = b->free_pages[--b->nfree];
			b->refs[pg] = 1;
			b->table[q * b->per_seq + j] = pg;
		}
		if (b->dirty)
			b->dirty[q] = 1;
		r->seq = q;
		b->next++;
	}
	int nr = 0;
	for (int i = 0; i < b->next; i++) {   /* running tokens first */
		mkc_rt_request *r = &b->req[i];
		if (!r->done && r->fed == r->n_prompt && nr < b->rows) {
			b->owner[nr] = i, b->seq[nr] = r->seq, b->ids[nr] = r->out[r->n_out - 1];
			b->pos[nr++] = r->n_prompt + r->n_out - 1;
		}
	}
	for (int i = 0; i < b->next; i++) {   /* then prompts */
		mkc_rt_request *r = &b->req[i];
		while (!r->done && r->fed < r->n_prompt && nr < b->rows) {
			b->owner[nr] = i, b->seq[nr] = r->seq, b->ids[nr] = r->prompt[r->fed];
			b->pos[nr++] = r->fed++;
		}
	}
	/* the requests whose last row this is and that have a token to draw */
	int nd = 0;
	for (int k = 0; k < nr; k++) {
		const mkc_rt_request *r = &b->req[b->owner[k]];
		if ((k + 1 < nr && b->owner[k + 1] == b->owner[k]) || r->fed < r->n_prompt)
			continue;
		b->ready[nd] = b->owner[k], b->at[nd] = k, b->s[nd] = r->s;
		b->ctr[nd++] = b->pos[k] + 1;
	}
	b->nr = nr;
	b->nd = nd;
	return nr;
}

/* The step's drawn tokens (b->tok) to their requests; the requests still running. */
static inline MKC_HD int MKC_UNUSED
mkc_rt_batch_take(mkc_rt_batch *b)
{
	for (int k = 0; k < b->nd; k++) {
		mkc_rt_request *r = &b->req[b->ready[k]];
		const int64_t t = b->tok[k];
		r->out[r->n_out++] = t;
		b->ring[2 * b->heard] = b->ready[k];
		b->ring[2 * b->heard++ + 1] = t;
		int stop = r->n_out == r->max_new;
		for (int j = 0; j < r->n_stop; j++)
			stop |= r->stop[j] == t;
		if (stop)
			mkc_rt_batch_end(b, r);
	}
	b->nd = 0;
	return b->left;
}

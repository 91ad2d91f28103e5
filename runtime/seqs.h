/*
 * seqs.h - sequences and the pages of their caches, for a file compiled
 * with mkc --max-seqs N (MKC_MAX_SEQS > 0); embedded before runtime/host.h,
 * whose step and cache calls use it. Host code only, over the exec's hooks.
 *
 * Every cache is a pool of MKC_NPAGES pages of MKC_PAGE positions
 * (passes/state.c). A sequence owns a row of the page table: its logical
 * page j is table[q][j], -1 until a step reaches it. Pages are taken from a
 * free stack as sequences grow and go back when they close or restart, so
 * the pool follows the positions in use. A fork shares its source's pages
 * (a count of holders each); a step that would write into a shared page
 * (only a fork's last, partly filled one can be) first copies it into a page
 * of its own. Before each step the runtime writes the step's rows (their
 * sequences and positions: each sequence's next ones, in row order) and the
 * touched rows of the table into the target's memory (mkc_rt_pages,
 * runtime/common.h), which the append and attention bodies read.
 *
 * Sequence 0 is open from the start: the single-sequence calls ($P_step,
 * $P_generate, $P_cache_*) are its.
 */

/* Bytes per position (everything after the cache axis) and rows (before it). */
static void
mkc_cache_geometry(int c, size_t *row, size_t *rows)
{
	const mkc_rt_tensor_info *ti = &mkc_tensors[mkc_caches[c].tensor];
	*row = (size_t)ti->esize;
	*rows = 1;
	for (int d = 0; d < ti->rank; d++)
		if (d < ti->cap_axis)
			*rows *= (size_t)ti->dims[d].c;
		else if (d > ti->cap_axis)
			*row *= (size_t)ti->dims[d].c;
}

#if MKC_MAX_SEQS

/* the most rows a step has: the compiled chunk, or one */
#define MKC_STEP_ROWS (MKC_GEN_CHUNK_SYM >= 0 ? mkc_sym_max[MKC_GEN_CHUNK_SYM] : 1)

struct mkc_seq_pool {
	unsigned char open[MKC_MAX_SEQS];
	unsigned char dirty[MKC_MAX_SEQS];   /* its table row changed since the target's copy */
	int64_t len[MKC_MAX_SEQS];           /* positions in its caches */
	int64_t add[MKC_MAX_SEQS];           /* this step's rows of it */
	int32_t table[MKC_MAX_SEQS * MKC_SEQ_PAGES];
	int32_t refs[MKC_NPAGES];            /* sequences holding each page */
	int32_t free_pages[MKC_NPAGES];      /* a stack */
	int64_t nfree;
	int32_t *seq;      /* MKC_STEP_ROWS: the last step's rows */
	int64_t *pos, *given;
	int64_t rows;
	int64_t reserve;   /* positions past the step's to give pages (generate's launch) */
};

static int
mkc_pool_create(mkc_host *m)
{
	struct mkc_seq_pool *p = (struct mkc_seq_pool *)calloc(1, sizeof *p);
	if (!(m->pool = p)) {
		mkc_seterr(m, "out of memory for the sequences' page table");
		return -1;
	}
	for (int64_t i = 0; i < MKC_MAX_SEQS * MKC_SEQ_PAGES; i++)
		p->table[i] = -1;
	/* the highest first: one sequence's pages lie backwards in the pool,
	 * so a body that ignored the table would read the wrong positions */
	for (int64_t i = 0; i < MKC_NPAGES; i++)
		p->free_pages[i] = (int32_t)i;
	p->nfree = MKC_NPAGES;
	p->open[0] = 1;
	p->seq = (int32_t *)malloc((size_t)MKC_STEP_ROWS * sizeof *p->seq);
	p->pos = (int64_t *)malloc((size_t)MKC_STEP_ROWS * sizeof *p->pos);
	p->given = (int64_t *)malloc((size_t)MKC_STEP_ROWS * sizeof *p->given);
	if (!p->seq || !p->pos || !p->given) {
		mkc_seterr(m, "out of memory for a step's rows");
		return -1;
	}
	m->pages.page = MKC_PAGE;
	m->pages.per_seq = MKC_SEQ_PAGES;
	const size_t tb = sizeof p->table;
	if (mkc_alloc_buf(m, (size_t)MKC_STEP_ROWS * sizeof *p->seq, (void **)&m->pages.seq) ||
	    mkc_alloc_buf(m, (size_t)MKC_STEP_ROWS * sizeof *p->pos, (void **)&m->pages.pos) ||
	    mkc_alloc_buf(m, tb, (void **)&m->pages.table) ||
	    mkc_store(m, m->pages.table, p->table, tb))
		return -1;
	return 0;
}

static void
mkc_pool_destroy(mkc_host *m)
{
	if (m->pages.seq)
		mkc_free_buf(m->pages.seq);
	if (m->pages.pos)
		mkc_free_buf(m->pages.pos);
	if (m->pages.table)
		mkc_free_buf(m->pages.table);
	if (m->pool) {
		free(m->pool->seq);
		free(m->pool->pos);
		free(m->pool->given);
	}
	free(m->pool);
}

static int
mkc_seq_check(mkc_host *m, int q, const char *what)
{
	if (q >= 0 && q < MKC_MAX_SEQS && m->pool->open[q])
		return 0;
	if (q < 0 || q >= MKC_MAX_SEQS)
		mkc_seterr(m, "%s: there is no sequence %d (the model keeps 0 to %d)", what, q,
			   MKC_MAX_SEQS - 1);
	else
		mkc_seterr(m, "%s: sequence %d is not open", what, q);
	return -1;
}

/* Copies page src of every cache into page dst. */
static int
mkc_page_copy(mkc_host *m, int32_t dst, int32_t src)
{
	for (int c = 0; c < MKC_NCACHES; c++) {
		size_t row, rows;
		mkc_cache_geometry(c, &row, &rows);
		const size_t pitch = row * (size_t)mkc_tensors[mkc_caches[c].tensor].cap;
		char *b = (char *)m->buf[mkc_caches[c].tensor];
		if (mkc_copy_rows(m, b + (size_t)dst * MKC_PAGE * row, pitch,
				  b + (size_t)src * MKC_PAGE * row, pitch, MKC_PAGE * row, rows))
			return -1;
	}
	return 0;
}

/* Gives back logical pages from..end of sequence q. */
static void
mkc_seq_release(struct mkc_seq_pool *p, int q, int64_t from)
{
	if (mkc_rt_pages_release(&p->table[q * MKC_SEQ_PAGES], MKC_SEQ_PAGES, from, p->refs,
				 p->free_pages, &p->nfree))
		p->dirty[q] = 1;
}

/*
 * The pages sequence q needs to write positions len .. end - 1: those it
 * has none for, and a shared one among them (copied on write). With
 * take, takes them (the count checked beforehand).
 */
static int64_t
mkc_seq_pages(mkc_host *m, int q, int64_t len, int64_t end, int take)
{
	struct mkc_seq_pool *p = m->pool;
	int64_t need = 0;
	for (int64_t j = len / MKC_PAGE; j * MKC_PAGE < end; j++) {
		int32_t *e = &p->table[q * MKC_SEQ_PAGES + j];
		if (*e >= 0 && p->refs[*e] == 1)
			continue;
		need++;
		if (!take)
			continue;
		const int32_t got = p->free_pages[--p->nfree];
		p->refs[got] = 1;
		if (*e >= 0) {   /* shared: this sequence's own copy */
			if (mkc_page_copy(m, got, *e))
				return -1;
			p->refs[*e]--;
		}
		*e = got;
		p->dirty[q] = 1;
	}
	return need;
}

/* Room for n more positions of sequence q (pages included); 0, or -1 with err set. */
static int
mkc_seq_room(mkc_host *m, int q, int64_t n)
{
	struct mkc_seq_pool *p = m->pool;
	if (p->len[q] + n > MKC_SEQ_PAGES * MKC_PAGE) {
		mkc_seterr(m, "sequence %d holds %lld positions of at most %lld, and %lld more do not "
			   "fit; compile with a larger --max-seq", q, (long long)p->len[q],
			   (long long)(MKC_SEQ_PAGES * MKC_PAGE), (long long)n);
		return -1;
	}
	return 0;
}

/* The touched rows of the table into the target's copy. */
static int
mkc_seq_store_table(mkc_host *m)
{
	struct mkc_seq_pool *p = m->pool;
	for (int q = 0; q < MKC_MAX_SEQS; q++) {
		if (!p->dirty[q])
			continue;
		const size_t at = (size_t)q * MKC_SEQ_PAGES, n = MKC_SEQ_PAGES * sizeof *p->table;
		if (mkc_stage(m, m->pages.table + at, p->table + at, n))
			return -1;
		p->dirty[q] = 0;
	}
	return 0;
}

/*
 * A step of rows tokens: row r of sequence seqs[r] (NULL: all sequence 0)
 * at that sequence's next position, in row order. Checks the sequences and
 * their room, gives them pages (p->reserve positions more: generate's
 * launch), checks the caller's position_ids (pos_in, the target's memory;
 * NULL: none) and writes the rows and the table where the bodies read them.
 * 0, or -1 with err set and nothing changed but pages taken.
 */
static int
mkc_seq_begin(mkc_host *m, const int *seqs, int64_t rows, const void *pos_in)
{
	struct mkc_seq_pool *p = m->pool;
	if (rows > MKC_STEP_ROWS) {
		mkc_seterr(m, "a step of %lld tokens; the file takes at most %lld (--max-chunk)",
			   (long long)rows, (long long)MKC_STEP_ROWS);
		return -1;
	}
	memset(p->add, 0, sizeof p->add);
	for (int64_t r = 0; r < rows; r++) {
		const int q = seqs ? seqs[r] : 0;
		char what[64];
		snprintf(what, sizeof what, "row %lld of the step", (long long)r);
		if (mkc_seq_check(m, q, what))
			return -1;
		p->seq[r] = q;
		p->pos[r] = p->len[q] + p->add[q]++;
	}
	int64_t need = 0;
	for (int q = 0; q < MKC_MAX_SEQS; q++)
		if (p->add[q]) {
			const int64_t n = p->add[q] + p->reserve;
			if (mkc_seq_room(m, q, n))
				return -1;
			need += mkc_seq_pages(m, q, p->len[q], p->len[q] + n, 0);
		}
	if (need > p->nfree) {
		mkc_seterr(m, "the cache pool is full: the step needs %lld more pages of %lld positions "
			   "and %lld of %lld are free; close a sequence, or compile with more "
			   "--cache-pages", (long long)need, (long long)MKC_PAGE, (long long)p->nfree,
			   (long long)MKC_NPAGES);
		return -1;
	}
	if (pos_in) {
		int64_t *given = p->given;
		const size_t bytes = (size_t)rows * sizeof *given;
		if (mkc_copy_rows(m, given, bytes, pos_in, bytes, bytes, 1))
			return -1;
		for (int64_t r = 0; r < rows; r++)
			if (given[r] != p->pos[r]) {
				mkc_seterr(m, "row %lld of the step (sequence %d) has position_ids %lld, but "
					   "its position is %lld: a sequence's tokens come in order, each "
					   "at the next position", (long long)r, p->seq[r],
					   (long long)given[r], (long long)p->pos[r]);
				return -1;
			}
	}
	for (int q = 0; q < MKC_MAX_SEQS; q++)
		if (p->add[q] && mkc_seq_pages(m, q, p->len[q], p->len[q] + p->add[q] + p->reserve,
					       1) < 0)
			return -1;
	p->rows = rows;
	if (mkc_stage(m, m->pages.seq, p->seq, (size_t)rows * sizeof *p->seq) ||
	    mkc_stage(m, m->pages.pos, p->pos, (size_t)rows * sizeof *p->pos) ||
	    mkc_seq_store_table(m))
		return -1;
	return 0;
}

/* Generate's launch (a GPU target's): n positions past its first step's to
 * give sequence 0 pages for at that step's start; after it, n more that
 * sequence 0 holds. */
static void MKC_UNUSED
mkc_seq_reserve(mkc_host *m, int64_t n)
{
	m->pool->reserve = n;
}

static void MKC_UNUSED
mkc_seq_grown(mkc_host *m, int64_t n)
{
	m->pool->len[0] += n;
	m->pool->rows = 0;
}

/* After the step succeeded: each sequence holds its rows too. */
static void
mkc_seq_end(mkc_host *m)
{
	struct mkc_seq_pool *p = m->pool;
	for (int64_t r = 0; r < p->rows; r++)
		p->len[p->seq[r]]++;
	p->rows = 0;
}

/*
 * Fills positions 0..len of cache c of sequence q from src (dense, as the
 * past input) and makes len its count; its pages past len go back.
 */
static int
mkc_seq_cache_load(mkc_host *m, int q, int c, const void *src, int64_t len)
{
	struct mkc_seq_pool *p = m->pool;
	if (mkc_seq_check(m, q, "cache_load"))
		return -1;
	const int64_t most = MKC_SEQ_PAGES * MKC_PAGE;
	const char *name = mkc_tensors[mkc_caches[c].tensor].name;
	if (len < 0 || len > most) {
		mkc_seterr(m, "cannot load %lld positions into KV cache '%s', which holds %lld a "
			   "sequence", (long long)len, name, (long long)most);
		return -1;
	}
	if (len && !src) {
		mkc_seterr(m, "cannot load KV cache '%s' from a NULL pointer", name);
		return -1;
	}
	mkc_seq_release(p, q, (len + MKC_PAGE - 1) / MKC_PAGE);
	if (mkc_seq_pages(m, q, 0, len, 0) > p->nfree) {
		mkc_seterr(m, "the cache pool is full: %lld positions of sequence %d need more pages "
			   "than the %lld free", (long long)len, q, (long long)p->nfree);
		return -1;
	}
	if (mkc_seq_pages(m, q, 0, len, 1) < 0 || mkc_seq_store_table(m))
		return -1;
	size_t row, rows;
	mkc_cache_geometry(c, &row, &rows);
	const size_t pitch = row * (size_t)mkc_tensors[mkc_caches[c].tensor].cap;
	char *b = (char *)m->buf[mkc_caches[c].tensor];
	for (int64_t at = 0; at < len; at += MKC_PAGE) {
		const int64_t n = len - at < MKC_PAGE ? len - at : MKC_PAGE;
		const int32_t pg = p->table[q * MKC_SEQ_PAGES + at / MKC_PAGE];
		if (mkc_copy_rows(m, b + (size_t)pg * MKC_PAGE * row, pitch,
				  (const char *)src + (size_t)at * row, row * (size_t)len,
				  (size_t)n * row, rows))
			return -1;
	}
	p->len[q] = len;
	return 0;
}

/* Copies the positions in use of cache c of sequence q to dst, densely. */
static int
mkc_seq_cache_read(mkc_host *m, int q, int c, void *dst)
{
	struct mkc_seq_pool *p = m->pool;
	if (mkc_seq_check(m, q, "cache_read"))
		return -1;
	const int64_t len = p->len[q];
	if (len && !dst) {
		mkc_seterr(m, "cannot read KV cache '%s' into a NULL pointer",
			   mkc_tensors[mkc_caches[c].tensor].name);
		return -1;
	}
	size_t row, rows;
	mkc_cache_geometry(c, &row, &rows);
	const size_t pitch = row * (size_t)mkc_tensors[mkc_caches[c].tensor].cap;
	const char *b = (const char *)m->buf[mkc_caches[c].tensor];
	for (int64_t at = 0; at < len; at += MKC_PAGE) {
		const int64_t n = len - at < MKC_PAGE ? len - at : MKC_PAGE;
		const int32_t pg = p->table[q * MKC_SEQ_PAGES + at / MKC_PAGE];
		if (mkc_copy_rows(m, (char *)dst + (size_t)at * row, row * (size_t)len,
				  b + (size_t)pg * MKC_PAGE * row, pitch, (size_t)n * row, rows))
			return -1;
	}
	return 0;
}

static int
mkc_seq_open(mkc_host *m, int *q)
{
	if (!q) {
		mkc_seterr(m, "seq_open needs a place for the sequence's number, not a NULL pointer");
		return -1;
	}
	for (int i = 0; i < MKC_MAX_SEQS; i++)
		if (!m->pool->open[i]) {
			m->pool->open[i] = 1;
			m->pool->len[i] = 0;
			*q = i;
			return 0;
		}
	mkc_seterr(m, "all %d sequences are open (--max-seqs); close one first", MKC_MAX_SEQS);
	return -1;
}

/* Closes q (restart: keeps it open, empty); its pages go back. */
static int
mkc_seq_close(mkc_host *m, int q, int restart)
{
	if (mkc_seq_check(m, q, restart ? "cache_reset" : "seq_close"))
		return -1;
	mkc_seq_release(m->pool, q, 0);
	m->pool->len[q] = 0;
	m->pool->open[q] = (unsigned char)restart;
	return mkc_seq_store_table(m);
}

/* A new sequence *q holding src's positions: its pages shared. */
static int
mkc_seq_fork(mkc_host *m, int src, int *q)
{
	if (mkc_seq_check(m, src, "seq_fork") || mkc_seq_open(m, q))
		return -1;
	struct mkc_seq_pool *p = m->pool;
	for (int64_t j = 0; j < MKC_SEQ_PAGES; j++) {
		const int32_t e = p->table[src * MKC_SEQ_PAGES + j];
		p->table[*q * MKC_SEQ_PAGES + j] = e;
		if (e >= 0)
			p->refs[e]++;
	}
	p->len[*q] = p->len[src];
	p->dirty[*q] = 1;
	return mkc_seq_store_table(m);
}

#endif

/* The public API: thin wrappers over the runtime above. */
struct $P {
	mkc_host *m;
	char err[512];
};

/*
 * The most threads the shuffled test queue takes (options.nthreads): far
 * more than a machine runs at once, and the exec allocates a thread and
 * its argument for each.
 */
#define MKC_MAX_THREADS 4096

int
$P_create($P **out, const $P_options *opts)
{
	$P_options o = {0, 0, 0};
	if (opts)
		o = *opts;
	*out = ($P *)calloc(1, sizeof **out);
	if (!*out)
		return -1;
	if (o.nthreads < 0 || o.nthreads > MKC_MAX_THREADS) {
		snprintf((*out)->err, sizeof (*out)->err, "options.nthreads is %d; it takes 0 (a thread "
			 "a worker) to %d", o.nthreads, MKC_MAX_THREADS);
		return -1;
	}
	/* a day: the watchdog's limit becomes a count of clock cycles on a GPU */
	if (!(o.timeout_s >= 0 && o.timeout_s <= 86400)) {
		snprintf((*out)->err, sizeof (*out)->err, "options.timeout_s is %g; it takes 0 (10 s) "
			 "to 86400 seconds", o.timeout_s);
		return -1;
	}
	if (mkc_model_create(&(*out)->m, o.nthreads, o.shuffle_seed, o.timeout_s)) {
		strcpy((*out)->err, (*out)->m ? (*out)->m->err : "out of memory");
		return -1;
	}
	return 0;
}

static int
$P_status($P *m, int rc)
{
	if (rc)
		strcpy(m->err, m->m->err);
	return rc;
}

int
$P_load_weights($P *m, const char *onnx_path)
{
	return $P_status(m, mkc_load_weights(m->m, onnx_path));
}

int
$P_bind($P *m, const char *weight_name, void *data)
{
	return $P_status(m, mkc_bind(m->m, weight_name, data));
}

int
$P_step($P *m, const void *const *inputs, void *const *outputs, const int64_t *dims)
{
	mkc_prof_begin(m->m);
	if ($P_status(m, mkc_step(m->m, inputs, outputs, dims)))
		return -1;
	mkc_end_step(m->m);
	return 0;
}

int
$P_generate($P *m, const int64_t *prompt, int n_prompt, int n_new, int64_t *out_tokens)
{
	return $P_generate_with(m, prompt, n_prompt, n_new, NULL, out_tokens, NULL);
}

int
$P_generate_with($P *m, const int64_t *prompt, int n_prompt, int max_new,
	const $P_sampling *sampling, int64_t *out_tokens, int *n_out)
{
	mkc_rt_gen g;
	memset(&g, 0, sizeof g);
	g.prompt = prompt;
	g.n_prompt = n_prompt;
	g.n_new = max_new;
	g.out = out_tokens;
	g.n_out = n_out;
	if (sampling) {
		g.s.temperature = sampling->temperature;
		g.s.top_k = sampling->top_k;
		g.s.top_p = sampling->top_p;
		g.s.seed = sampling->seed;
		g.stop = sampling->stop;
		g.n_stop = sampling->n_stop;
	}
	mkc_prof_begin(m->m);
	return $P_status(m, mkc_generate(m->m, &g));
}

int
$P_sample($P *m, const void *logits, int64_t rows, const $P_sampling *sampling,
	const int64_t *positions, int64_t *tokens)
{
	if (!logits || !sampling || !positions || !tokens || rows < 1 || MKC_GEN_VOCAB < 1) {
		snprintf(m->err, sizeof m->err, "sample needs logits [rows, vocab], a sampling, a "
			 "position and a place for the token of each of rows >= 1 rows%s",
			 MKC_GEN_VOCAB < 1 ? " (and this model has no output logits)" : "");
		return -1;
	}
	mkc_rt_sampling *s = (mkc_rt_sampling *)malloc((size_t)rows * sizeof *s);
	if (!s) {
		snprintf(m->err, sizeof m->err, "out of memory for %lld rows' sampling", (long long)rows);
		return -1;
	}
	int rc = 0;
	for (int64_t r = 0; r < rows && rc == 0; r++) {
		mkc_rt_gen g;
		memset(&g, 0, sizeof g);
		g.s.temperature = sampling[r].temperature;
		g.s.top_k = sampling[r].top_k;
		g.s.top_p = sampling[r].top_p;
		g.s.seed = sampling[r].seed;
		rc = mkc_sampling_check(m->m, &g);   /* stop tokens are generate's: not read */
		s[r] = g.s;
	}
	rc = rc || mkc_sample_rows(m->m, logits, rows, s, positions, tokens, NULL);
	free(s);
	return $P_status(m, rc);
}

int
$P_generate_batch($P *m, $P_request *requests, int n,
	void (*on_token)(void *user, int request, int64_t token), void *user)
{
#if MKC_MAX_SEQS && MKC_CAN_GENERATE
	if (!requests || n < 1) {
		snprintf(m->err, sizeof m->err, "generate_batch needs at least one request");
		return -1;
	}
	mkc_rt_request *r = (mkc_rt_request *)calloc((size_t)n, sizeof *r);
	if (!r) {
		snprintf(m->err, sizeof m->err, "out of memory for %d requests", n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const $P_request *q = &requests[i];
		r[i].prompt = q->prompt, r[i].n_prompt = q->n_prompt, r[i].max_new = q->max_new;
		r[i].s.temperature = q->sampling.temperature, r[i].s.top_k = q->sampling.top_k;
		r[i].s.top_p = q->sampling.top_p, r[i].s.seed = q->sampling.seed;
		r[i].stop = q->sampling.stop, r[i].n_stop = q->sampling.n_stop;
		r[i].out = q->out_tokens;
	}
	mkc_prof_begin(m->m);
	int rc = mkc_generate_batch(m->m, r, n, on_token, user);
	for (int i = 0; i < n; i++)
		requests[i].n_out = r[i].n_out;
	free(r);
	return $P_status(m, rc);
#else
	(void)requests, (void)n, (void)on_token, (void)user;
	snprintf(m->err, sizeof m->err, "generate_batch: this file %s", MKC_MAX_SEQS
		 ? "cannot generate (it needs inputs input_ids and position_ids and an output logits)"
		 : "serves one sequence (compile with mkc --max-seqs N for several)");
	return -1;
#endif
}

int
$P_set_stream($P *m, void *stream)
{
	return $P_status(m, mkc_set_stream(m->m, stream));
}

int
$P_profile_write($P *m, const char *path)
{
	if (!path) {   /* fopen(NULL) fails, and the sentence would name "(null)" */
		snprintf(m->err, sizeof m->err, "profile_write needs a file's path, not a NULL pointer");
		return -1;
	}
	return $P_status(m, mkc_profile_write(m->m, path));
}

int $P_num_caches(void) { return MKC_NCACHES; }
const char *$P_cache_name(int i) { return i >= 0 && i < MKC_NCACHES ? mkc_tensors[mkc_caches[i].tensor].name : NULL; }
const char *$P_cache_past_name(int i) { return i >= 0 && i < MKC_NCACHES ? mkc_caches[i].past : NULL; }
#if MKC_MAX_SEQS
int64_t $P_cache_capacity(void) { return MKC_SEQ_PAGES * MKC_PAGE; }
int64_t $P_cache_len(const $P *m) { return m->m->pool->len[0]; }
#else
int64_t $P_cache_capacity(void) { return MKC_NCACHES ? mkc_tensors[mkc_caches[0].tensor].cap : 0; }
int64_t $P_cache_len(const $P *m) { return MKC_NCACHES ? m->m->sym[mkc_caches[0].sym] : 0; }
#endif
int $P_cache_dtype(int i) { return i >= 0 && i < MKC_NCACHES ? mkc_tensors[mkc_caches[i].tensor].dtype : 0; }

int
$P_cache_reset($P *m)
{
#if MKC_MAX_SEQS
	return $P_status(m, mkc_seq_close(m->m, 0, 1));
#else
	for (int i = 0; i < MKC_NCACHES; i++)
		m->m->sym[mkc_caches[i].sym] = 0;
	return 0;
#endif
}

/* Sequences (mkc --max-seqs): runtime/seqs.h. Without it, each call says so. */
int $P_max_seqs(void) { return MKC_MAX_SEQS; }
int64_t $P_page_size(void) { return MKC_PAGE; }

#if MKC_MAX_SEQS
int64_t $P_free_pages(const $P *m) { return m->m->pool->nfree; }

int64_t
$P_seq_len(const $P *m, int seq)
{
	return seq >= 0 && seq < MKC_MAX_SEQS && m->m->pool->open[seq] ? m->m->pool->len[seq] : -1;
}

int
$P_seq_open($P *m, int *seq)
{
	return $P_status(m, mkc_seq_open(m->m, seq));
}

int
$P_seq_close($P *m, int seq)
{
	return $P_status(m, mkc_seq_close(m->m, seq, 0));
}

int
$P_seq_fork($P *m, int src, int *seq)
{
	return $P_status(m, mkc_seq_fork(m->m, src, seq));
}

int
$P_seq_cache_load($P *m, int seq, int i, const void *src, int64_t len)
{
	return $P_status(m, mkc_cache_check(m->m, i) || mkc_seq_cache_load(m->m, seq, i, src, len));
}

int
$P_seq_cache_read($P *m, int seq, int i, void *dst)
{
	return $P_status(m, mkc_cache_check(m->m, i) || mkc_seq_cache_read(m->m, seq, i, dst));
}

int
$P_step_seqs($P *m, const int *seqs, int64_t n, const void *const *inputs,
	void *const *outputs)
{
	int64_t dims[MKC_NSYMS + 1];
	if (!seqs || n < 1) {
		snprintf(m->err, sizeof m->err, "step_seqs needs at least one token and its sequence "
			 "(%lld tokens, seqs %s)", (long long)n, seqs ? "given" : "NULL");
		return -1;
	}
	if (n > (MKC_GEN_CHUNK_SYM >= 0 ? mkc_sym_max[MKC_GEN_CHUNK_SYM] : 1)) {
		snprintf(m->err, sizeof m->err, "a step of %lld tokens; the file takes at most %lld "
			 "(--max-chunk)", (long long)n,
			 (long long)(MKC_GEN_CHUNK_SYM >= 0 ? mkc_sym_max[MKC_GEN_CHUNK_SYM] : 1));
		return -1;
	}
	mkc_gen_dims(dims, n);
	m->m->step_seqs = seqs;
	int rc = $P_step(m, inputs, outputs, dims);
	m->m->step_seqs = NULL;
	return rc;
}
#else
static int
$P_no_seqs($P *m, const char *what)
{
	snprintf(m->err, sizeof m->err, "%s: this file serves one sequence (compile with mkc "
		 "--max-seqs N for several)", what);
	return -1;
}

int64_t $P_free_pages(const $P *m) { (void)m; return 0; }
int64_t $P_seq_len(const $P *m, int seq) { return seq == 0 ? $P_cache_len(m) : -1; }
int $P_seq_open($P *m, int *seq) { (void)seq; return $P_no_seqs(m, "seq_open"); }
int $P_seq_close($P *m, int seq) { (void)seq; return $P_no_seqs(m, "seq_close"); }
int $P_seq_fork($P *m, int src, int *seq) { (void)src, (void)seq; return $P_no_seqs(m, "seq_fork"); }

int
$P_seq_cache_load($P *m, int seq, int i, const void *src, int64_t len)
{
	(void)seq, (void)i, (void)src, (void)len;
	return $P_no_seqs(m, "seq_cache_load");
}

int
$P_seq_cache_read($P *m, int seq, int i, void *dst)
{
	(void)seq, (void)i, (void)dst;
	return $P_no_seqs(m, "seq_cache_read");
}

int
$P_step_seqs($P *m, const int *seqs, int64_t n, const void *const *inputs,
	void *const *outputs)
{
	(void)seqs, (void)n, (void)inputs, (void)outputs;
	return $P_no_seqs(m, "step_seqs");
}
#endif

int
$P_cache_load($P *m, int i, const void *src, int64_t len)
{
	return $P_status(m, mkc_cache_load(m->m, i, src, len));
}

int
$P_cache_read($P *m, int i, void *dst)
{
	return $P_status(m, mkc_cache_read(m->m, i, dst));
}

const char *
$P_last_error(const $P *m)
{
	return m ? m->err : "no model";
}

void
$P_destroy($P *m)
{
	if (!m)
		return;
	mkc_model_destroy(m->m);
	free(m);
}

const char *$P_target(void) { return MKC_PROF_TARGET; }
int $P_input_dtype(int i) { return i >= 0 && i < MKC_NINPUTS ? mkc_tensors[mkc_inputs[i]].dtype : 0; }
int $P_output_dtype(int i) { return i >= 0 && i < MKC_NOUTPUTS ? mkc_tensors[mkc_outputs[i]].dtype : 0; }
int $P_step_dim(void) { return MKC_GEN_CHUNK_SYM; }

int
$P_cache_shape(int i, int64_t len, int64_t *shape)
{
	if (i < 0 || i >= MKC_NCACHES || !shape)
		return -1;
	const mkc_rt_tensor_info *ti = &mkc_tensors[mkc_caches[i].tensor];
	for (int d = 0; d < ti->rank; d++)
		shape[d] = d == ti->cap_axis ? len : ti->dims[d].c;
	return ti->rank;
}

int $P_num_inputs(void) { return MKC_NINPUTS; }
const char *$P_input_name(int i) { return i >= 0 && i < MKC_NINPUTS ? mkc_tensors[mkc_inputs[i]].name : NULL; }
int $P_num_outputs(void) { return MKC_NOUTPUTS; }
const char *$P_output_name(int i) { return i >= 0 && i < MKC_NOUTPUTS ? mkc_tensors[mkc_outputs[i]].name : NULL; }
int $P_num_dims(void) { return MKC_NSYMS; }
const char *$P_dim_name(int i) { return i >= 0 && i < MKC_NSYMS ? mkc_sym_names[i] : NULL; }
int64_t $P_max_dim(int i) { return i >= 0 && i < MKC_NSYMS ? mkc_sym_max[i] : -1; }

static int
$P_shape(int t, const int64_t *dims, int64_t *shape)
{
	for (int d = 0; d < mkc_tensors[t].rank; d++)
		shape[d] = mkc_rt_dimv(mkc_tensors[t].dims[d], dims ? dims : mkc_sym_max);
	return mkc_tensors[t].rank;
}

int
$P_input_shape(int i, const int64_t *dims, int64_t *shape)
{
	return i >= 0 && i < MKC_NINPUTS ? $P_shape(mkc_inputs[i], dims, shape) : -1;
}

int
$P_output_shape(int i, const int64_t *dims, int64_t *shape)
{
	return i >= 0 && i < MKC_NOUTPUTS ? $P_shape(mkc_outputs[i], dims, shape) : -1;
}

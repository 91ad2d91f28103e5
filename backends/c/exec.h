/*
 * exec.h - the C target's runtime, embedded after the tables of an emitted
 * file: the model object, weight loading, and the persistent executor.
 *
 * The executor runs the same task table and event protocol as the GPU
 * kernel, with POSIX threads as workers:
 *   - a worker walks its queue; before a task it waits until each event it
 *     waits on has counted threshold * epoch signals (acquire loads, with a
 *     yield after a while and a watchdog that names the stuck task);
 *   - after a task it adds 1 to each event it signals (release).
 * Counters are 64-bit and never reset: the epoch grows by one a step.
 * A file may hold several plans (a chunked file's one-token step has its
 * own, and its steps of few tokens may: MKC_STEP_PLAN): a step runs one plan's queues (plan k's of worker w:
 * k * MKC_NWORKERS + w), and each plan counts its own epochs, its events
 * being its own.
 *
 * With a shuffle seed the static queues are replaced by one shared queue
 * holding the tasks in a random topological order, handed out by an atomic
 * cursor, so only the events order anything: a missing dependency then
 * shows up as a wrong answer or a ThreadSanitizer report.
 *
 * Host code shared with the GPU targets (weights, binding) is in
 * runtime/host.h, which follows this text and uses the hooks at its end.
 *
 * The emitted file defines, before this text: MKC_NSYMS, MKC_NTENSORS,
 * MKC_NTASKS, MKC_NEVENTS, MKC_NWORKERS, MKC_NINPUTS, MKC_NOUTPUTS,
 * MKC_NPLANS, MKC_STEP_PLAN(sym), the tables mkc_plan_task0[],
 * mkc_tensors[], mkc_task_wait[], mkc_task_sig_start[],
 * mkc_task_sig[], mkc_queue_start[], mkc_queue[], mkc_event_threshold[],
 * mkc_event_prod_start[], mkc_event_prod[], mkc_inputs[], mkc_outputs[],
 * mkc_sym_names[], mkc_sym_max[], and mkc_run_task() and mkc_fill_symvals().
 */

struct mkc_model {
	void *buf[MKC_NTENSORS];
	unsigned char owned[MKC_NTENSORS];
	unsigned char filled[MKC_NTENSORS];   /* a weight holds its values (runtime/host.h) */
	void *arena;                /* the intermediates, placed by the memory pass */
	int64_t sym[MKC_NSYMS + 1];
	_Atomic uint64_t counter[MKC_NEVENTS + 1];
	uint64_t epochs[MKC_NPLANS];   /* each plan's steps */
	uint64_t epoch;             /* this step's plan's */
	int plan;                   /* this step's */
	int nthreads;
	unsigned shuffle_seed;
	double timeout_s;
	int *order;                 /* shuffle mode: this step's task order */
	int *pending, *ready;       /* shuffle mode: mkc_shuffle_order's work, the model's own */
	pthread_t *threads;         /* nthreads of each, allocated once */
	struct mkc_worker_arg *args;
	atomic_int cursor;
	atomic_int failed;
	char err[512];
#if MKC_MAX_SEQS
	mkc_rt_pages pages;         /* the step's rows and the page table (runtime/seqs.h) */
	struct mkc_seq_pool *pool;  /* the sequences and free pages */
	const int *step_seqs;         /* the step's rows' sequences (NULL: all sequence 0) */
#endif
#if MKC_PROFILE
	uint64_t *prof;             /* the timeline (runtime/profile.h) */
	uint64_t *prof_slot;        /* this step's slot in it */
	long long prof_count;       /* steps recorded since the last call began */
#endif
};

static void
mkc_fail(struct mkc_model *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
mkc_fail(struct mkc_model *m, const char *fmt, ...)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&m->failed, &expected, 1))
		return;   /* keep the first error */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->err, sizeof m->err, fmt, ap);
	va_end(ap);
}

typedef struct mkc_model mkc_host;

static void
mkc_seterr(mkc_host *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int64_t mkc_numel(const mkc_host *m, int t, int use_max);
static int mkc_place_tensors(mkc_host *m, void *arena);
static void mkc_free_tensors(mkc_host *m);
static int mkc_begin_step(mkc_host *m, const void *const *inputs, void *const *outputs,
			  const int64_t *dims);

/*
 * What a tile function calls when an index from the caller is out of range
 * (runtime/common.h's mkc_rt_check_index): the step fails with the
 * sentence, the first failure of the step kept (mkc_fail).
 */
static void MKC_UNUSED
mkc_fail_index(struct mkc_model *m, int node, const mkc_rt_bad *bad)
{
	char s[sizeof m->err];
	mkc_rt_index_sentence(s, sizeof s, mkc_node_desc[node], bad);
	mkc_fail(m, "%s", s);
}

#define MKC_FAIL_INDEX(m, node, bad) mkc_fail_index(m, node, bad)

static double
mkc_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#if MKC_PROFILE
static uint64_t
mkc_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* stamp k (0 wait began, 1 wait over, 2 signalled, 3 worker) of a task */
#define MKC_PROF_TASK(m, task, k, v) ((m)->prof_slot[MKC_NSYMS + 2 * MKC_NWORKERS + 4 * (task) + (k)] = (v))
#else
#define MKC_PROF_TASK(m, task, k, v) ((void)0)
#endif

static int
mkc_wait(struct mkc_model *m, int task, int ev)
{
	uint64_t target = (uint64_t)mkc_event_threshold[ev] * m->epoch;
	double start = 0;
	for (long spins = 0;; spins++) {
		if (atomic_load_explicit(&m->counter[ev], memory_order_acquire) >= target)
			return 0;
		if (atomic_load_explicit(&m->failed, memory_order_relaxed))
			return -1;
		if (spins < 256)
			continue;
		sched_yield();
		if (spins == 256)
			start = mkc_now();
		else if ((spins & 1023) == 0 && mkc_now() - start > m->timeout_s) {
			mkc_fail(m, "watchdog: task %d (%s) waited %.1f s on event %d (%llu of %llu signals)",
				 task, mkc_task_name[task], m->timeout_s, ev,
				 (unsigned long long)atomic_load(&m->counter[ev]),
				 (unsigned long long)target);
			return -1;
		}
	}
}

static void
mkc_exec_task(struct mkc_model *m, int task, int worker)
{
	MKC_PROF_TASK(m, task, 0, mkc_now_ns());
	if (mkc_task_wait[task] >= 0 && mkc_wait(m, task, mkc_task_wait[task]))
		return;
	MKC_PROF_TASK(m, task, 1, mkc_now_ns());
	mkc_run_task(m, task);
	for (int k = mkc_task_sig_start[task]; k < mkc_task_sig_start[task + 1]; k++)
		atomic_fetch_add_explicit(&m->counter[mkc_task_sig[k]], 1, memory_order_release);
	MKC_PROF_TASK(m, task, 2, mkc_now_ns());
	MKC_PROF_TASK(m, task, 3, (uint64_t)worker);
	(void)worker;
}

typedef struct mkc_worker_arg {
	struct mkc_model *m;
	int worker;
} mkc_worker_arg;

static void *
mkc_worker(void *arg)
{
	mkc_worker_arg *a = arg;
	struct mkc_model *m = a->m;
#if MKC_PROFILE
	if (a->worker < MKC_NWORKERS) {
		m->prof_slot[MKC_NSYMS + 2 * a->worker] = mkc_now_ns();
		m->prof_slot[MKC_NSYMS + 2 * a->worker + 1] = (uint64_t)-1;   /* no SM */
	}
#endif
	if (m->order) {
		for (;;) {
			int i = atomic_fetch_add(&m->cursor, 1);
			if (i >= mkc_plan_task0[m->plan + 1] - mkc_plan_task0[m->plan] ||
			    atomic_load(&m->failed))
				break;
			mkc_exec_task(m, m->order[i], a->worker);
		}
		return NULL;
	}
	/* static queues: one thread per queue, as the schedule proof assumes
	 * (a thread that ran two queues one after the other could wait in the
	 * first for a task of the second) */
	const int q = m->plan * MKC_NWORKERS + a->worker;
	for (int i = mkc_queue_start[q]; i < mkc_queue_start[q + 1]; i++) {
		if (atomic_load_explicit(&m->failed, memory_order_relaxed))
			return NULL;
		mkc_exec_task(m, mkc_queue[i], a->worker);
	}
	return NULL;
}

/* A random topological order of the step's plan's tasks (Kahn's algorithm, random pick). */
static void
mkc_shuffle_order(struct mkc_model *m)
{
	int *pending = m->pending, *ready = m->ready;   /* two models may step at once */
	int nready = 0, n = 0;
	unsigned s = m->shuffle_seed * 2654435761u + (unsigned)m->epoch;
	const int t0 = mkc_plan_task0[m->plan], t1 = mkc_plan_task0[m->plan + 1];
	for (int t = 0; t < MKC_NTASKS; t++)
		pending[t] = -1;   /* another plan's: never ready */
	for (int t = t0; t < t1; t++) {
		int e = mkc_task_wait[t];
		pending[t] = e < 0 ? 0 : mkc_event_prod_start[e + 1] - mkc_event_prod_start[e];
		if (!pending[t])
			ready[nready++] = t;
	}
	while (nready) {
		s = s * 1103515245u + 12345u;
		int k = (int)((s >> 8) % (unsigned)nready);
		int t = ready[k];
		ready[k] = ready[--nready];
		m->order[n++] = t;
		for (int j = t0; j < t1; j++) {
			int e = mkc_task_wait[j];
			if (e < 0 || pending[j] <= 0)
				continue;
			for (int p = mkc_event_prod_start[e]; p < mkc_event_prod_start[e + 1]; p++)
				if (mkc_event_prod[p] == t && --pending[j] == 0)
					ready[nready++] = j;
		}
	}
}

static int
mkc_exec_step(struct mkc_model *m)
{
	m->plan = MKC_STEP_PLAN(m->sym);
	m->epoch = ++m->epochs[m->plan];
	atomic_store(&m->failed, 0);
	mkc_fill_symvals(m);
	if (m->shuffle_seed) {
		mkc_shuffle_order(m);
		atomic_store(&m->cursor, 0);
	}
#if MKC_PROFILE
	m->prof_slot = m->prof + (size_t)(m->prof_count++ % MKC_PROFILE_STEPS) * MKC_PROF_SLOT_WORDS;
	memset(m->prof_slot, 0, MKC_PROF_SLOT_WORDS * sizeof *m->prof_slot);
	for (int s = 0; s < MKC_NSYMS; s++)
		m->prof_slot[s] = (uint64_t)m->sym[s];
#endif
	int n = m->nthreads, started = 0;
	pthread_t *th = m->threads;
	mkc_worker_arg *args = m->args;
	for (int w = 0; w < n; w++) {
		args[w].m = m;
		args[w].worker = w;
		if (pthread_create(&th[w], NULL, mkc_worker, &args[w]) != 0) {
			mkc_fail(m, "cannot start worker thread %d", w);
			break;
		}
		started++;
	}
	for (int w = 0; w < started; w++)
		pthread_join(th[w], NULL);
	if (atomic_load(&m->failed)) {
		/* counters are now out of step with the epoch: start afresh */
		for (int e = 0; e < MKC_NEVENTS; e++)
			atomic_store(&m->counter[e], 0);
		for (int k = 0; k < MKC_NPLANS; k++)
			m->epochs[k] = 0;
		return -1;
	}
	return 0;
}

static int
mkc_model_create(struct mkc_model **out, int nthreads, unsigned shuffle_seed,
		 double timeout_s)
{
	struct mkc_model *m = calloc(1, sizeof *m);
	*out = m;
	if (!m)
		return -1;
	/* the shared test queue runs on any number of threads (the API bounds it); static
	 * queues on one each */
	m->nthreads = shuffle_seed && nthreads > 0 ? nthreads : MKC_NWORKERS;
	m->shuffle_seed = shuffle_seed;
	m->timeout_s = timeout_s > 0 ? timeout_s : 10.0;
	if (!(m->threads = calloc((size_t)m->nthreads, sizeof *m->threads)) ||
	    !(m->args = calloc((size_t)m->nthreads, sizeof *m->args))) {
		mkc_seterr(m, "out of memory for %d worker threads", m->nthreads);
		return -1;
	}
	if (shuffle_seed && (!(m->order = calloc(MKC_NTASKS + 1, sizeof *m->order)) ||
			     !(m->pending = calloc(MKC_NTASKS + 1, sizeof *m->pending)) ||
			     !(m->ready = calloc(MKC_NTASKS + 1, sizeof *m->ready)))) {
		mkc_seterr(m, "out of memory");
		return -1;
	}
#if MKC_PROFILE
	if (!(m->prof = calloc(MKC_PROF_WORDS, sizeof *m->prof))) {
		mkc_seterr(m, "out of memory for the profile");
		return -1;
	}
#endif
	if (!(m->arena = calloc(1, MKC_ARENA_BYTES ? MKC_ARENA_BYTES : 1))) {
		mkc_seterr(m, "out of memory for the %lld-byte arena", (long long)MKC_ARENA_BYTES);
		return -1;
	}
	return mkc_place_tensors(m, m->arena);
}

static void
mkc_model_destroy(struct mkc_model *m)
{
	if (!m)
		return;
	mkc_free_tensors(m);
	free(m->arena);
	free(m->order);
	free(m->pending);
	free(m->ready);
	free(m->threads);
	free(m->args);
#if MKC_PROFILE
	free(m->prof);
#endif
	free(m);
}

/* The C target's calls run on the caller's thread: there is no stream to take. */
static int
mkc_set_stream(struct mkc_model *m, void *stream)
{
	if (!stream)
		return 0;
	mkc_seterr(m, "set_stream: the C target runs on the caller's thread and takes no stream "
		      "(only NULL)");
	return -1;
}

static int
mkc_step(struct mkc_model *m, const void *const *inputs, void *const *outputs,
	 const int64_t *dims)
{
	return mkc_begin_step(m, inputs, outputs, dims) ? -1 : mkc_exec_step(m);
}

static int mkc_generate_check(mkc_host *m, const mkc_rt_gen *g, int *steps);
static int mkc_is_stop(const mkc_rt_gen *g, int64_t tok);
static int64_t mkc_next_position(const mkc_host *m);
static void mkc_end_step(mkc_host *m);
static void mkc_gen_dims(int64_t *dims, int64_t s);
static int mkc_prefill(mkc_host *m, const int64_t *prompt, int n, const mkc_rt_sampling *s,
		       int64_t *first);
static int mkc_gen_mask(mkc_host *m, void **buf);
static int mkc_gen_prefill(mkc_host *m, const mkc_rt_gen *g, const int64_t **prompt, int *n_prompt,
			   int *steps, int64_t *first, int *done);

/*
 * Generation on the C target: a prompt of three tokens or more in chunks (a
 * model compiled with --max-chunk), the first new token drawn from the
 * last chunk's logits; then one step per token, the next token (the
 * argmax, or runtime/sample.h's draw) fed back from the host (the GPU
 * target keeps that loop inside its kernel). A stop token ends it.
 */
static int
mkc_generate(mkc_host *m, const mkc_rt_gen *g)
{
	int steps;
#if !MKC_CAN_GENERATE
	return mkc_generate_check(m, g, &steps);   /* says why not */
#else
	int rc = 0;
	if (mkc_generate_check(m, g, &steps))
		return -1;
	const int64_t *prompt = g->prompt;
	int n_prompt = g->n_prompt, done = 0;   /* done: tokens out before the loop */
	int64_t first = -1;
	if (mkc_gen_prefill(m, g, &prompt, &n_prompt, &steps, &first, &done))
		return -1;
	if (steps == 0)
		return 0;
	int64_t ids = prompt[0], pos = 0, dims[MKC_NSYMS + 1];
	mkc_gen_dims(dims, 1);
	const void *in[MKC_NINPUTS + 1] = {0};
	void *outs[MKC_NOUTPUTS + 1] = {0}, *mask = NULL;
	mkc_rt_draw_acc *acc = malloc(sizeof *acc);   /* 17 KB of sums a draw */
	if (!acc) {
		mkc_seterr(m, "out of memory for the draw's sums");
		return -1;
	}
	for (int i = 0; i < MKC_NINPUTS; i++)
		in[i] = i == MKC_GEN_IDS ? &ids : &pos;
#if MKC_GEN_MASK >= 0
	if (mkc_gen_mask(m, &mask)) {
		free(acc);
		return -1;
	}
	in[MKC_GEN_MASK] = mask;
#endif
	for (int o = 0; o < MKC_NOUTPUTS && rc == 0; o++) {
		size_t bytes = (size_t)mkc_numel(m, mkc_outputs[o], 1) *
			       (size_t)mkc_tensors[mkc_outputs[o]].esize;
		if (!(outs[o] = malloc(bytes ? bytes : 1))) {
			mkc_seterr(m, "out of memory for output '%s'", mkc_tensors[mkc_outputs[o]].name);
			rc = -1;
		}
	}
	for (int j = 0; j < steps && rc == 0; j++) {
		pos = mkc_next_position(m);
		if (mkc_step(m, in, outs, dims)) {
			rc = -1;
			break;
		}
		mkc_end_step(m);
		if (j + 1 < n_prompt) {   /* a prompt token's logits: the next is the prompt's */
			ids = prompt[j + 1];
			continue;
		}
		mkc_rt_sample_scratch sh;
		ids = mkc_rt_sample(outs[MKC_GEN_LOGITS], MKC_GEN_VOCAB, MKC_GEN_LOGITS_F16, &g->s,
				    (uint64_t)pos + 1, &sh, acc);
		g->out[done + j - (n_prompt - 1)] = ids;
		if (g->n_out)
			*g->n_out = done + j - (n_prompt - 1) + 1;
		if (mkc_is_stop(g, ids))
			break;
	}
	for (int o = 0; o < MKC_NOUTPUTS; o++)
		free(outs[o]);
	free(mask);
	free(acc);
	return rc;
#endif
}

/*
 * rows rows of logits (this target's memory: the host's), row which[r]
 * (NULL: r), drawn each as s[r] says (temperature 0: the argmax), for the
 * position pos[r]; the tokens into out (host memory).
 */
static int
mkc_sample_rows(mkc_host *m, const void *logits, int64_t rows, const mkc_rt_sampling *s,
		const int64_t *pos, int64_t *out, const int64_t *which)
{
	const size_t row = (size_t)MKC_GEN_VOCAB * (MKC_GEN_LOGITS_F16 ? 2 : 4);
	mkc_rt_draw_acc *acc = malloc(sizeof *acc);
	if (!acc) {
		mkc_seterr(m, "out of memory for the draw's sums");
		return -1;
	}
	for (int64_t r = 0; r < rows; r++) {
		mkc_rt_sample_scratch sh;
		const void *x = (const char *)logits + (size_t)(which ? which[r] : r) * row;
		out[r] = mkc_rt_sample(x, MKC_GEN_VOCAB, MKC_GEN_LOGITS_F16, &s[r], (uint64_t)pos[r],
				       &sh, acc);
	}
	free(acc);
	return 0;
}

/* Hooks for runtime/host.h: host memory is the buffer memory here. */
/* zeroed, so that a state (a KV cache) starts empty (a weight not yet loaded is never
 * read: runtime/host.h refuses the step) */
static int
mkc_alloc_buf(mkc_host *m, size_t n, void **p)
{
	if (!(*p = calloc(1, n))) {
		mkc_seterr(m, "out of memory for a %zu-byte buffer", n);
		return -1;
	}
	return 0;
}

static int
mkc_store(mkc_host *m, void *dst, const void *src, size_t n)
{
	(void)m;
	memcpy(dst, src, n);
	return 0;
}

static int
mkc_stage(mkc_host *m, void *dst, const void *src, size_t n)
{
	return mkc_store(m, dst, src, n);
}

/* rows rows of width bytes, pitch bytes apart in each buffer */
static int
mkc_copy_rows(mkc_host *m, void *dst, size_t dpitch, const void *src, size_t spitch,
	      size_t width, size_t rows)
{
	(void)m;
	for (size_t r = 0; r < rows; r++)
		memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
	return 0;
}

static void
mkc_free_buf(void *p)
{
	free(p);
}

#if MKC_PROFILE
static int
mkc_prof_fetch(mkc_host *m, uint64_t *dst)
{
	memcpy(dst, m->prof, MKC_PROF_WORDS * sizeof *dst);
	return 0;
}
#endif

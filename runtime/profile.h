/*
 * profile.h - the per-task timeline (mkc --profile), host side, shared by
 * every target; embedded after runtime/host.h. Nothing in it is compiled
 * unless the emitted file defines MKC_PROFILE to 1.
 *
 * Nothing outside the kernel can see inside one persistent kernel, so the
 * executor stamps every task itself: the time it began waiting for its
 * event, the time the wait was over, and the time it had signalled. The
 * stamps go to a buffer of MKC_PROFILE_STEPS slots, one per step (a ring:
 * a generate call of more steps keeps its last ones). A slot holds
 *
 *   sym[MKC_NSYMS]            the symbols' values during that step
 *   worker[MKC_NWORKERS][2]   when the worker began the step, and its SM
 *                             (or -1 on the C target)
 *   task[MKC_NTASKS][4]       t0 wait began, t1 wait over, t2 signalled,
 *                             and the worker (thread) that ran it
 *
 * in nanoseconds of one clock shared by all workers (%globaltimer on CUDA,
 * CLOCK_MONOTONIC on the C target). The target provides mkc_prof_fetch
 * (copy the buffer to the host); the emitter provides the tables that
 * name tasks and the regions they touch (mkc_prof_task, mkc_prof_region,
 * mkc_prof_dim, mkc_prof_node_name, mkc_prof_node_op).
 *
 * mkc_profile_write turns the last call's slots into a Chrome trace-event
 * file (Perfetto, chrome://tracing): a track per worker with a "wait"
 * slice and a task slice for every task, and a "steps" track.
 */

#if MKC_PROFILE
#define MKC_PROF_STEP_TID 1000000   /* the "steps" track, after any worker's */

/* A new API call: its steps are the ones the next write shows. */
static void
mkc_prof_begin(mkc_host *m)
{
	m->prof_count = 0;
}

static int mkc_prof_fetch(mkc_host *m, uint64_t *dst);

/* A string for JSON: quotes, backslashes and control bytes escaped. */
static void
mkc_prof_jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	fputc('"', f);
}

/* Bytes task reads (write 0) or writes (write 1) at the symbols' values. */
static int64_t
mkc_prof_bytes(int task, int write, const int64_t *sym)
{
	int64_t total = 0;
	for (int r = mkc_prof_task[task].region; r < mkc_prof_task[task + 1].region; r++) {
		const mkc_rt_prof_region *g = &mkc_prof_region[r];
		if (g->write != write)
			continue;
		int64_t n = mkc_tensors[g->tensor].esize;
		for (int d = 0; d < mkc_tensors[g->tensor].rank; d++) {
			int64_t lo = mkc_rt_dimv(mkc_prof_dim[g->dim + 2 * d], sym);
			int64_t hi = mkc_rt_dimv(mkc_prof_dim[g->dim + 2 * d + 1], sym);
			n *= hi > lo ? hi - lo : 0;
		}
		total += n;
	}
	return total;
}

/* The box of the task's first write, "[0:1, 64:128]". */
static void
mkc_prof_box(FILE *f, int task, const int64_t *sym)
{
	int r = mkc_prof_task[task].region;
	while (r < mkc_prof_task[task + 1].region && !mkc_prof_region[r].write)
		r++;
	fputc('[', f);
	if (r < mkc_prof_task[task + 1].region)
		for (int d = 0; d < mkc_tensors[mkc_prof_region[r].tensor].rank; d++)
			fprintf(f, "%s%lld:%lld", d ? ", " : "",
				(long long)mkc_rt_dimv(mkc_prof_dim[mkc_prof_region[r].dim + 2 * d], sym),
				(long long)mkc_rt_dimv(mkc_prof_dim[mkc_prof_region[r].dim + 2 * d + 1], sym));
	fputc(']', f);
}

/* Microseconds since t0, with nanoseconds. */
static double
mkc_prof_us(uint64_t t, uint64_t t0)
{
	return (double)(int64_t)(t - t0) * 1e-3;
}

/* The comma between two trace events. */
static void
mkc_prof_sep(FILE *f, int *first)
{
	fputs(*first ? "\n" : ",\n", f);
	*first = 0;
}

static void
mkc_prof_slot(FILE *f, const uint64_t *s, int step, uint64_t t0, int *first)
{
	/* zeroed: with no symbol at all, gcc -O1 took its reads for uninitialised */
	int64_t sym[MKC_NSYMS + 1] = {0};
	const uint64_t *wk = s + MKC_NSYMS, *tk = wk + 2 * MKC_NWORKERS;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < MKC_NSYMS; i++)
		sym[i] = (int64_t)s[i];
	for (int w = 0; w < MKC_NWORKERS; w++)
		lo = wk[2 * w] < lo ? wk[2 * w] : lo;
	for (int t = 0; t < MKC_NTASKS; t++) {
		const uint64_t *x = tk + 4 * t;
		const int node = mkc_prof_task[t].node, ev = mkc_prof_task[t].wait;
		if (x[0] == 0 || x[2] == 0)
			continue;   /* never ran: the step failed */
		hi = x[2] > hi ? x[2] : hi;
		mkc_prof_sep(f, first);
		fprintf(f, "{\"name\":\"wait\",\"cat\":\"wait\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,"
			"\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"task\":%d,\"event\":%d,\"after\":[",
			(int)x[3], mkc_prof_us(x[0], t0), mkc_prof_us(x[1], x[0]), t, ev);
		for (int p = ev >= 0 ? mkc_event_prod_start[ev] : 0;
		     ev >= 0 && p < mkc_event_prod_start[ev + 1]; p++)
			fprintf(f, "%s%d", p > mkc_event_prod_start[ev] ? "," : "", mkc_event_prod[p]);
		fprintf(f, "],\"step\":%d}},\n{\"name\":", step);
		mkc_prof_jstr(f, mkc_prof_node_name[node]);
		fputs(",\"cat\":", f);
		mkc_prof_jstr(f, mkc_prof_node_op[node]);
		fprintf(f, ",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{"
			"\"task\":%d,\"tile\":\"%d/%d\",\"box\":\"", (int)x[3], mkc_prof_us(x[1], t0),
			mkc_prof_us(x[2], x[1]), t, mkc_prof_task[t].tile, mkc_prof_task[t].ntiles);
		mkc_prof_box(f, t, sym);
		fprintf(f, "\",\"bytes_read\":%lld,\"bytes_written\":%lld,\"step\":%d}}",
			(long long)mkc_prof_bytes(t, 0, sym), (long long)mkc_prof_bytes(t, 1, sym), step);
	}
	mkc_prof_sep(f, first);
	fprintf(f, "{\"name\":\"step %d\",\"cat\":\"step\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,"
		"\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"step\":%d,\"sym\":[", step, MKC_PROF_STEP_TID,
		mkc_prof_us(lo, t0), mkc_prof_us(hi > lo ? hi : lo, lo), step);
	for (int i = 0; i < MKC_NSYMS; i++)
		fprintf(f, "%s%lld", i ? "," : "", (long long)sym[i]);
	fputs("]}}", f);
}

/*
 * Writes the steps of the last call (step or generate, at most
 * MKC_PROFILE_STEPS of them, the latest) as a trace-event file.
 */
static int
mkc_profile_write(mkc_host *m, const char *path)
{
	if (m->prof_count == 0) {
		mkc_seterr(m, "the last step or generate call ran no step: no timeline to write");
		return -1;
	}
	uint64_t *buf = (uint64_t *)malloc(MKC_PROF_WORDS * sizeof *buf);
	if (!buf) {
		mkc_seterr(m, "out of memory for the %zu-byte profile", MKC_PROF_WORDS * sizeof *buf);
		return -1;
	}
	if (mkc_prof_fetch(m, buf)) {
		free(buf);
		return -1;
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		mkc_seterr(m, "%s: cannot write: %s", path, strerror(errno));
		free(buf);
		return -1;
	}
	const long long n = m->prof_count < MKC_PROFILE_STEPS ? m->prof_count : MKC_PROFILE_STEPS;
	const long long s0 = m->prof_count - n;
	uint64_t t0 = UINT64_MAX;
	const uint64_t *first = buf + (size_t)(s0 % MKC_PROFILE_STEPS) * MKC_PROF_SLOT_WORDS;
	for (int w = 0; w < MKC_NWORKERS; w++)
		t0 = first[MKC_NSYMS + 2 * w] < t0 ? first[MKC_NSYMS + 2 * w] : t0;
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"target\":\"%s\",\"workers\":%d,"
		"\"tasks\":%d,\"steps\":%lld,\"first_step\":%lld,\"steps_in_call\":%lld},\n"
		"\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":"
		"{\"name\":\"mkc (%s, %d workers)\"}}", MKC_PROF_TARGET, MKC_NWORKERS, MKC_NTASKS, n, s0,
		m->prof_count, MKC_PROF_TARGET, MKC_NWORKERS);
	const uint64_t *last = buf + (size_t)((m->prof_count - 1) % MKC_PROFILE_STEPS) * MKC_PROF_SLOT_WORDS;
	for (int w = 0; w <= MKC_NWORKERS; w++) {
		const long long sm = w < MKC_NWORKERS ? (long long)last[MKC_NSYMS + 2 * w + 1] : -1;
		const int tid = w < MKC_NWORKERS ? w : MKC_PROF_STEP_TID;
		fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":"
			"{\"name\":\"", tid);
		if (w == MKC_NWORKERS)
			fputs("steps", f);
		else if (sm >= 0)
			fprintf(f, "worker %d (SM %lld)", w, sm);
		else
			fprintf(f, "worker %d", w);
		fprintf(f, "\"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,"
			"\"args\":{\"sort_index\":%d}}", tid, w);
	}
	int first_ev = 0;   /* the metadata events came first */
	for (long long k = 0; k < n; k++)
		mkc_prof_slot(f, buf + (size_t)((s0 + k) % MKC_PROFILE_STEPS) * MKC_PROF_SLOT_WORDS,
			      (int)(s0 + k), t0, &first_ev);
	fputs("\n]}\n", f);
	free(buf);
	const int bad = ferror(f);
	if ((fclose(f) != 0) | bad) {
		mkc_seterr(m, "%s: write failed", path);
		return -1;
	}
	return 0;
}
#else
#define mkc_prof_begin(m) ((void)(m))

static int
mkc_profile_write(mkc_host *m, const char *path)
{
	(void)path;
	mkc_seterr(m, "this file was compiled without --profile: no timeline was recorded");
	return -1;
}
#endif

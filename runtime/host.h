/*
 * host.h - host-side runtime shared by every target, embedded after the
 * target's own runtime: sizes of tensors at the current or compiled-maximum
 * dimensions, binding caller-owned weights, and loading weights from the
 * ONNX file (the wire walker in common.h) through the target's hooks.
 *
 * The target's exec defines before this text mkc_host and the hooks this
 * code calls (mkc_store, mkc_copy_rows, mkc_free_buf): runtime/exec_api.h
 * lists them and checks their types.
 *
 * KV caches the model keeps (mkc_caches): the symbol that counts their
 * positions lives in m->sym between steps; a step takes its value from
 * there, and a successful step adds the positions it appended.
 *
 * Load state: m->filled[t] says that weight t holds its values. An
 * embedded weight does from create on, a bound one once bound; every other
 * weight mkc allocated once a call of mkc_load_weights has succeeded. A
 * failed load leaves every weight mkc owns unfilled (some may hold new
 * bytes, some old, or be half read: a model half loaded), until a load
 * succeeds; a step or generate with a weight unfilled is refused, never
 * run on zeroed or mixed weights.
 */

/* Sets the error sentence (for calls outside a step). */
static void
mkc_seterr(mkc_host *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
mkc_seterr(mkc_host *m, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->err, sizeof m->err, fmt, ap);
	va_end(ap);
}

static int64_t mkc_numel(const mkc_host *m, int t, int use_max);

/*
 * Every tensor's buffer but the caller's inputs and outputs (given at each
 * step): an intermediate at its place in arena (the exec's, sized
 * MKC_ARENA_BYTES), every other one a buffer of its own (owned, through
 * the exec's mkc_alloc_buf), with its embedded bytes when it has them.
 * 0, or -1 with err set.
 */
static int
mkc_place_tensors(mkc_host *m, void *arena)
{
	for (int t = 0; t < MKC_NTENSORS; t++) {
		const mkc_rt_tensor_info *ti = &mkc_tensors[t];
		if (ti->kind == MKC_RT_INPUT || ti->kind == MKC_RT_OUTPUT)
			continue;
		if (ti->arena_off >= 0) {
			m->buf[t] = (char *)arena + ti->arena_off;
			continue;
		}
		size_t bytes = (size_t)mkc_numel(m, t, 1) * (size_t)ti->esize;
		if (mkc_alloc_buf(m, bytes ? bytes : 1, &m->buf[t]))
			return -1;
		m->owned[t] = 1;
		if (ti->data && mkc_store(m, m->buf[t], ti->data, bytes))
			return -1;
		m->filled[t] = ti->data || !bytes;   /* compiled in, or nothing to hold */
	}
#if MKC_MAX_SEQS
	return mkc_pool_create(m);
#else
	return 0;
#endif
}

/* Frees the buffers mkc_place_tensors allocated (m may be half made). */
static void
mkc_free_tensors(mkc_host *m)
{
	for (int t = 0; t < MKC_NTENSORS; t++)
		if (m->owned[t])
			mkc_free_buf(m->buf[t]);
#if MKC_MAX_SEQS
	mkc_pool_destroy(m);
#endif
}

static int64_t
mkc_numel(const mkc_host *m, int t, int use_max)
{
	const mkc_rt_tensor_info *ti = &mkc_tensors[t];
	int64_t n = 1;
	for (int i = 0; i < ti->rank; i++) {
		mkc_rt_dim d = ti->dims[i];
		if (use_max && ti->cap && i == ti->cap_axis)
			n *= ti->cap;
		else
			n *= mkc_rt_dimv(d, use_max ? mkc_sym_max : m->sym);
	}
	return n;
}

/* The cache whose positions symbol s counts, or -1. */
static int
mkc_cache_of_sym(int s)
{
	for (int i = 0; i < MKC_NCACHES; i++)
		if (mkc_caches[i].sym == s)
			return i;
	return -1;
}

static int
mkc_tensor_index(const char *name)
{
	for (int t = 0; t < MKC_NTENSORS; t++)
		if (!strcmp(mkc_tensors[t].name, name))
			return t;
	return -1;
}

static int
mkc_bind(mkc_host *m, const char *name, void *ptr)
{
	if (!name) {
		mkc_seterr(m, "bind needs a weight's name, not a NULL pointer");
		return -1;
	}
	int t = mkc_tensor_index(name);
	if (t < 0 || mkc_tensors[t].kind != MKC_RT_WEIGHT) {
		mkc_seterr(m, "no weight is called '%s'", name);
		return -1;
	}
	if (!ptr) {
		/* the next step would read through it */
		mkc_seterr(m, "weight '%s': cannot bind a NULL pointer", name);
		return -1;
	}
	if ((uintptr_t)ptr % 16) {
		/* GPU tile bodies read weights with 16-byte vector loads */
		mkc_seterr(m, "weight '%s': the bound memory must be 16-byte aligned", name);
		return -1;
	}
	if (m->owned[t])
		mkc_free_buf(m->buf[t]);
	m->owned[t] = 0;
	m->buf[t] = ptr;
	m->filled[t] = 1;
	return 0;
}

/* The whole of the regular file path, in memory. 0, or -1 after a sentence. */
static int
mkc_read_file(mkc_host *m, const char *path, uint8_t **data, size_t *size)
{
	struct stat st;
	int64_t n;
	FILE *f = mkc_rt_open_regular(path, NULL, &n, &st, m->err, sizeof m->err);
	if (!f)
		return -1;
	int rc = -1;
	if ((*data = (uint8_t *)malloc((size_t)n + 1))) {
		*size = (size_t)n;
		rc = fread(*data, 1, (size_t)n, f) == (size_t)n ? 0 : -1;
		if (rc) {
			free(*data);
			mkc_seterr(m, "%s: cannot read %lld bytes", path, (long long)n);
		}
	} else {
		mkc_seterr(m, "%s: out of memory for %lld bytes", path, (long long)n);
	}
	fclose(f);
	return rc;
}

/*
 * Reads want bytes at offset of the open file f (path, size bytes) into
 * dst. 0, or -1 after a sentence naming the file and the weight.
 */
static int
mkc_read_at(mkc_host *m, FILE *f, const char *path, int64_t size, int64_t offset, void *dst,
	    size_t want, const char *weight)
{
	if (offset < 0 || offset > size || (uint64_t)(size - offset) < want) {
		mkc_seterr(m, "%s: holds %lld bytes, too short for weight '%s' (%zu bytes at offset "
			   "%lld)", path, (long long)size, weight, want, (long long)offset);
		return -1;
	}
	if (fseek(f, (long)offset, SEEK_SET) != 0 || fread(dst, 1, want, f) != want) {
		mkc_seterr(m, "%s: cannot read weight '%s' (%zu bytes at offset %lld)", path, weight,
			   want, (long long)offset);
		return -1;
	}
	return 0;
}

/* Copies one initializer's bytes into the weight buffer it belongs to. */
static int
mkc_load_bytes(mkc_host *m, const mkc_rt_tensor_info *ti, const mkc_rt_tensor *pt,
	       const char *dir, void *dst, int64_t n)
{
	size_t want = (size_t)n * (size_t)ti->esize;
	if (pt->external) {
		/* the location comes from the ONNX file read now: the compiler's rules again */
		char path[4096];
		int64_t fsize;
		FILE *f = mkc_rt_open_in(dir, (const char *)pt->location.p,
					 (size_t)(pt->location.end - pt->location.p), ti->name, path,
					 sizeof path, &fsize, m->err, sizeof m->err);
		if (!f)
			return -1;
		if (pt->length >= 0 && (uint64_t)pt->length != want) {
			mkc_seterr(m, "%s: external data length %lld does not match the %zu bytes weight "
				   "'%s' needs", path, (long long)pt->length, want, ti->name);
			fclose(f);
			return -1;
		}
		int rc = mkc_read_at(m, f, path, fsize, pt->offset, dst, want, ti->name);
		fclose(f);
		return rc;
	}
	if (pt->raw.p) {
		if ((size_t)(pt->raw.end - pt->raw.p) != want) {
			mkc_seterr(m, "weight '%s' holds %zu bytes, not %zu", ti->name,
				   (size_t)(pt->raw.end - pt->raw.p), want);
			return -1;
		}
		memcpy(dst, pt->raw.p, want);
		return 0;
	}
	if (mkc_rt_unpack_typed(pt, dst, n, ti->esize)) {
		mkc_seterr(m, "weight '%s': cannot read its typed data", ti->name);
		return -1;
	}
	return 0;
}

/*
 * A weight in a file of its own (external data, safetensors): offset and
 * size are known; a safetensors header must still say what they were.
 */
static int
mkc_load_file(mkc_host *m, const mkc_rt_tensor_info *ti, const char *dir, void *dst, size_t n)
{
	char path[4096];
	int64_t size;
	FILE *f = mkc_rt_open_in(dir, ti->file, strlen(ti->file), ti->name, path, sizeof path, &size,
				 m->err, sizeof m->err);
	if (!f)
		return -1;
	int rc = ti->safetensors ? mkc_rt_st_check(f, path, size, ti, m->sym, m->err, sizeof m->err)
				 : 0;
	if (rc == 0)
		rc = mkc_read_at(m, f, path, size, ti->offset, dst, n, ti->name);
	fclose(f);
	return rc;
}

/*
 * A weight stored transposed (passes/layout.c): tmp holds the file's [xk,
 * xn] matrix of elements of fe bytes; its columns xc0 .. xc0 + n / xk - 1,
 * transposed, take its place (n elements, [n / xk, xk]). 0, or -1 with err
 * set.
 */
static int
mkc_take_columns(mkc_host *m, const mkc_rt_tensor_info *ti, void *tmp, size_t fe, int64_t n)
{
	const int64_t k = ti->xk, rows = n / k;
	unsigned char *out = (unsigned char *)malloc((size_t)n * fe + 1);
	if (!out) {
		mkc_seterr(m, "out of memory transposing weight '%s'", ti->name);
		return -1;
	}
	const unsigned char *in = (const unsigned char *)tmp;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t i = 0; i < k; i++)
			memcpy(out + (size_t)(r * k + i) * fe,
			       in + (size_t)(i * ti->xn + ti->xc0 + r) * fe, fe);
	memcpy(tmp, out, (size_t)n * fe);
	free(out);
	return 0;
}

/*
 * Reads one initializer into host memory and stores it in its buffer; a
 * float32 weight kept as bf16 is narrowed on the way, a float16 one
 * (passes/half.c: a float32 weight the file holds as float16) widened to
 * float32 exactly, and then narrowed if kept as bf16 (--weights bf16). An initializer
 * compiled into the file (ti->check) is compared with it instead: the
 * compiled code holds its old value, so a checkpoint changed there since
 * compiling is not the model compiled, and loading the rest would mix old
 * values with new.
 */
static int
mkc_load_one(mkc_host *m, int t, const mkc_rt_tensor *pt, const char *dir, const char *path)
{
	const mkc_rt_tensor_info *ti = &mkc_tensors[t];
	int64_t n = mkc_numel(m, t, 0);
	int half = ti->fdtype == 10, narrow = (ti->fdtype == 1 || half) && ti->dtype == 16;
	/* an element in the file */
	const size_t fe = half ? 2 : narrow ? 4 : (size_t)ti->esize;
	/* stored transposed: the whole [xk, xn] matrix is read, then its columns taken */
	const size_t nf = ti->xk ? (size_t)(ti->xk * ti->xn) : (size_t)n;
	size_t want = (size_t)n * (size_t)ti->esize, read = nf * fe;
	/* float16 is widened in place: room for n float32s */
	size_t room = half && (size_t)n * 4 > read ? (size_t)n * 4 : read;
	void *tmp = malloc(room ? room : 1);
	if (!tmp) {
		mkc_seterr(m, "out of memory reading weight '%s'", ti->name);
		return -1;
	}
	mkc_rt_tensor_info file = *ti;   /* as the file holds it */
	file.esize = (int)fe;
	int rc = pt ? mkc_load_bytes(m, &file, pt, dir, tmp, (int64_t)nf)
		    : mkc_load_file(m, &file, dir, tmp, read);
	if (rc == 0 && ti->xk && mkc_take_columns(m, ti, tmp, fe, n))
		rc = -1;
	/* from the last element down: float i overwrites halves 2i and 2i + 1, read already */
	for (int64_t i = n - 1; rc == 0 && half && i >= 0; i--) {
		float v = mkc_rt_half(((const uint16_t *)tmp)[i]);
		memcpy((float *)tmp + i, &v, 4);
	}
	if (rc == 0 && narrow)
		for (int64_t i = 0; i < n; i++)
			((uint16_t *)tmp)[i] = mkc_rt_to_bf16(((const float *)tmp)[i]);
	if (rc == 0 && ti->data && memcmp(tmp, ti->data, want)) {
		mkc_seterr(m, "%s: weight '%s' differs from the value compiled into this file (an "
			   "initializer of at most --embed-limit bytes is compiled in): the checkpoint "
			   "changed since it was compiled; compile it again", path, ti->name);
		rc = -1;
	} else if (rc == 0 && !ti->data) {
		rc = mkc_store(m, m->buf[t], tmp, want);
	}
	free(tmp);
	return rc;
}

/* A weight the load reads: one mkc allocated, to fill, or compiled in, to compare. */
static int
mkc_needs_load(const mkc_host *m, int t)
{
	const mkc_rt_tensor_info *ti = &mkc_tensors[t];
	return ti->kind == MKC_RT_WEIGHT && m->owned[t] && (!ti->data || ti->check);
}

/*
 * Fills every weight that is not embedded, and compares every embedded
 * initializer (mkc_load_one): those in files of their own (external data,
 * safetensors) from there, the rest from the ONNX file's initializers.
 * PATH is the .onnx file, or the model's folder when every weight has a
 * file of its own (a Hugging Face folder). Through mkc_load_weights, which
 * keeps the load state.
 */
static int
mkc_load_files(mkc_host *m, const char *path)
{
	char dir[4096] = ".";
	struct stat st;
	int is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
	const char *slash = strrchr(path, '/');
	if (is_dir && strlen(path) < sizeof dir)
		memcpy(dir, path, strlen(path) + 1);
	else if (!is_dir && slash && (size_t)(slash - path) < sizeof dir) {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = 0;
	}
	int left = 0;
	for (int t = 0; t < MKC_NTENSORS; t++) {
		if (!mkc_needs_load(m, t))
			continue;
		if (!mkc_tensors[t].file)
			left++;
		else if (mkc_load_one(m, t, NULL, dir, path))
			return -1;
	}
	if (!left)
		return 0;
	uint8_t *data;
	size_t size;
	if (is_dir) {
		mkc_seterr(m, "%s: a folder, not the ONNX file that holds %d weight(s)", path, left);
		return -1;
	}
	if (mkc_read_file(m, path, &data, &size))
		return -1;
	unsigned char found[MKC_NTENSORS] = {0};
	mkc_rt_pb b = {data, data + size}, g = {NULL, NULL}, sub;
	int f, w, rc = 0;
	uint64_t v;
	while (b.p < b.end && !mkc_rt_field(&b, &f, &w, &sub, &v))
		if (f == 7 && w == 2)
			g = sub;
	while (g.p && g.p < g.end && rc == 0) {
		if (mkc_rt_field(&g, &f, &w, &sub, &v)) {
			rc = -1;
			mkc_seterr(m, "%s: malformed model", path);
			break;
		}
		if (f != 5 || w != 2)
			continue;
		mkc_rt_tensor pt;
		if (mkc_rt_parse_tensor(sub, &pt))
			continue;
		for (int t = 0; t < MKC_NTENSORS; t++)
			if (mkc_needs_load(m, t) && !mkc_tensors[t].file &&
			    mkc_rt_name_is(pt.name, mkc_tensors[t].name)) {
				rc = mkc_load_one(m, t, &pt, dir, path);
				found[t] = 1;
				break;
			}
	}
	free(data);
	for (int t = 0; t < MKC_NTENSORS && rc == 0; t++)
		if (mkc_needs_load(m, t) && !mkc_tensors[t].file && !found[t]) {
			mkc_seterr(m, "%s: no initializer '%s'", path, mkc_tensors[t].name);
			rc = -1;
		}
	return rc;
}

/* The bytes of graph input or output t (a tensor index) at this step's dims. */
static size_t
mkc_io_bytes(const mkc_host *m, int t)
{
	return (size_t)mkc_numel(m, t, 0) * (size_t)mkc_tensors[t].esize;
}

/* Whether the buffers [a, a + na) and [b, b + nb) share a byte. */
static int
mkc_bytes_meet(const void *a, size_t na, const void *b, size_t nb)
{
	const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
	return na && nb && x < y + nb && y < x + na;
}

/*
 * No output may share memory with an input or another output: every body
 * takes its outputs as restrict, and a step reads its inputs while other
 * tiles write its outputs, so a caller's in-place buffer is a race on
 * global memory and a wrong answer. (onnxruntime-genai binds a
 * GroupQueryAttention's past and present to one buffer; mkc's present is
 * the past then the new positions, laid out anew, and its tile copied the
 * past into the present while other lanes still read it.) Called with
 * the symbols of this step set. 0, or -1 with a sentence.
 */
static int
mkc_check_overlap(mkc_host *m, const void *const *inputs, void *const *outputs)
{
	for (int o = 0; o < MKC_NOUTPUTS; o++) {
		const int to = mkc_outputs[o];
		const size_t n = mkc_io_bytes(m, to);
		for (int k = 0; k < MKC_NINPUTS + o; k++) {
			const int in = k < MKC_NINPUTS;
			const int t = in ? mkc_inputs[k] : mkc_outputs[k - MKC_NINPUTS];
			if (!mkc_bytes_meet(outputs[o], n, in ? inputs[k] : outputs[k - MKC_NINPUTS],
					    mkc_io_bytes(m, t)))
				continue;
			mkc_seterr(m, "output %d ('%s') shares memory with %s %d ('%s'): a step reads its "
				   "inputs while it writes its outputs, so each output needs a buffer of "
				   "its own", o, mkc_tensors[to].name, in ? "input" : "output",
				   in ? k : k - MKC_NINPUTS, mkc_tensors[t].name);
			return -1;
		}
	}
	return 0;
}

/* Loads the weights from path; every weight mkc owns is filled after a success, none after a failure. */
static int
mkc_load_weights(mkc_host *m, const char *path)
{
	if (!path) {
		mkc_seterr(m, "load_weights needs the model's path, not a NULL pointer");
		return -1;
	}
	const int rc = mkc_load_files(m, path);
	for (int t = 0; t < MKC_NTENSORS; t++)
		if (mkc_tensors[t].kind == MKC_RT_WEIGHT && m->owned[t])
			m->filled[t] = rc == 0;
	return rc;
}

/* Every weight holds its values (m->filled); 0, or -1 with a sentence naming the first that does not. */
static int
mkc_check_loaded(mkc_host *m)
{
	for (int t = 0; t < MKC_NTENSORS; t++)
		if (mkc_tensors[t].kind == MKC_RT_WEIGHT && !m->filled[t]) {
			mkc_seterr(m, "weight '%s' holds no values: load the weights with load_weights "
				   "(a call that failed leaves them unloaded) or bind it, before a step",
				   mkc_tensors[t].name);
			return -1;
		}
	return 0;
}

/*
 * The start of every step: symbol values checked against the compiled
 * maxima (a symbol that counts cache positions takes the cache's count),
 * the caller's input and output buffers put in place. dims may be NULL when
 * every symbol counts cache positions; an entry of -1 means "the cache's".
 */
static int
mkc_begin_step(mkc_host *m, const void *const *inputs, void *const *outputs,
	       const int64_t *dims)
{
	if (mkc_check_loaded(m))
		return -1;
	for (int i = 0; i < MKC_NINPUTS; i++)
		if (!inputs || !inputs[i]) {
			mkc_seterr(m, "input %d ('%s') is a NULL pointer", i, mkc_tensors[mkc_inputs[i]].name);
			return -1;
		}
	for (int i = 0; i < MKC_NOUTPUTS; i++)
		if (!outputs || !outputs[i]) {
			mkc_seterr(m, "output %d ('%s') is a NULL pointer", i,
				   mkc_tensors[mkc_outputs[i]].name);
			return -1;
		}
	for (int s = 0; s < MKC_NSYMS; s++) {
#if MKC_MAX_SEQS
		if (mkc_cache_of_sym(s) >= 0) {
			/* each sequence counts its own: the bodies read the runtime's rows
			 * ($P_step's sequence 0 may be given its count) */
			if (dims && dims[s] >= 0 && (m->step_seqs || dims[s] != m->pool->len[0])) {
				mkc_seterr(m, "%s = %lld, but %s (give -1)", mkc_sym_names[s],
					   (long long)dims[s], m->step_seqs ? "every sequence counts its "
					   "own cached positions" : "sequence 0 holds another count");
				return -1;
			}
			m->sym[s] = 0;
			continue;
		}
#endif
		if (mkc_cache_of_sym(s) >= 0) {
			if (dims && dims[s] >= 0 && dims[s] != m->sym[s]) {
				mkc_seterr(m, "%s = %lld, but the KV cache holds %lld positions (give -1 "
					   "to use the cache's count)", mkc_sym_names[s],
					   (long long)dims[s], (long long)m->sym[s]);
				return -1;
			}
			continue;
		}
		if (!dims) {
			mkc_seterr(m, "dims is NULL, but %s is not counted by a KV cache",
				   mkc_sym_names[s]);
			return -1;
		}
		if (dims[s] < 0 || dims[s] > mkc_sym_max[s]) {
			mkc_seterr(m, "%s = %lld is outside 0..%lld (the compiled maximum)",
				   mkc_sym_names[s], (long long)dims[s], (long long)mkc_sym_max[s]);
			return -1;
		}
		m->sym[s] = dims[s];
	}
	/* the new positions (a constant count, or the chunk's) must fit */
	for (int c = 0; c < MKC_NCACHES && !MKC_MAX_SEQS; c++) {
		int64_t used = m->sym[mkc_caches[c].sym], nnew = mkc_rt_dimv(mkc_caches[c].nnew, m->sym);
		int64_t cap = mkc_tensors[mkc_caches[c].tensor].cap;
		if (nnew < 1) {
			mkc_seterr(m, "a step must append at least one position to the KV cache, "
				   "and this one appends %lld", (long long)nnew);
			return -1;
		}
		if (used + nnew > cap) {
			mkc_seterr(m, "the KV cache is full: %lld of %lld positions in use, and "
				   "a step appends %lld; reset it, or compile with a larger "
				   "--max-seq", (long long)used, (long long)cap, (long long)nnew);
			return -1;
		}
	}
	if (mkc_check_overlap(m, inputs, outputs))
		return -1;
#if MKC_MAX_SEQS
	{
		const int64_t rows = MKC_GEN_CHUNK_SYM >= 0 ? m->sym[MKC_GEN_CHUNK_SYM] : 1;
		if (rows < 1) {
			mkc_seterr(m, "a step must append at least one position to the KV cache, "
				   "and this one appends %lld", (long long)rows);
			return -1;
		}
		if (mkc_seq_begin(m, m->step_seqs, rows, MKC_GEN_POS >= 0 ? inputs[MKC_GEN_POS] : NULL))
			return -1;
	}
#endif
	for (int i = 0; i < MKC_NINPUTS; i++)
		m->buf[mkc_inputs[i]] = (void *)inputs[i];
	for (int i = 0; i < MKC_NOUTPUTS; i++)
		m->buf[mkc_outputs[i]] = outputs[i];
	return 0;
}

/* After a step that succeeded: the caches hold the appended positions too. */
static void
mkc_end_step(mkc_host *m)
{
#if MKC_MAX_SEQS
	mkc_seq_end(m);
#else
	int64_t nnew[MKC_NSYMS + 1];
	for (int s = 0; s < MKC_NSYMS; s++) {
		int c = mkc_cache_of_sym(s);
		nnew[s] = c >= 0 ? mkc_rt_dimv(mkc_caches[c].nnew, m->sym) : 0;
	}
	for (int s = 0; s < MKC_NSYMS; s++)
		m->sym[s] += nnew[s];
#endif
}

static int
mkc_cache_check(mkc_host *m, int c)
{
	if (c >= 0 && c < MKC_NCACHES)
		return 0;
	mkc_seterr(m, "there is no KV cache %d (the model keeps %d)", c, MKC_NCACHES);
	return -1;
}

/*
 * Fills positions 0..len of cache c from src, dense in the shape of the
 * past input it replaced with past_len = len, and makes len the count of
 * positions in use (the caches share it).
 */
static int
mkc_cache_load(mkc_host *m, int c, const void *src, int64_t len)
{
	if (mkc_cache_check(m, c))
		return -1;
#if MKC_MAX_SEQS
	return mkc_seq_cache_load(m, 0, c, src, len);   /* sequence 0's */
#else
	const mkc_rt_tensor_info *ti = &mkc_tensors[mkc_caches[c].tensor];
	if (len < 0 || len > ti->cap) {
		mkc_seterr(m, "cannot load %lld positions into KV cache '%s', which holds %lld",
			   (long long)len, ti->name, (long long)ti->cap);
		return -1;
	}
	if (len && !src) {
		mkc_seterr(m, "cannot load KV cache '%s' from a NULL pointer", ti->name);
		return -1;
	}
	size_t row, rows;
	mkc_cache_geometry(c, &row, &rows);
	if (len && mkc_copy_rows(m, m->buf[mkc_caches[c].tensor], row * (size_t)ti->cap, src,
				 row * (size_t)len, row * (size_t)len, rows))
		return -1;
	m->sym[mkc_caches[c].sym] = len;
	return 0;
#endif
}

/* Copies the positions in use of cache c to dst, densely. */
static int
mkc_cache_read(mkc_host *m, int c, void *dst)
{
	if (mkc_cache_check(m, c))
		return -1;
#if MKC_MAX_SEQS
	return mkc_seq_cache_read(m, 0, c, dst);   /* sequence 0's */
#else
	const mkc_rt_tensor_info *ti = &mkc_tensors[mkc_caches[c].tensor];
	size_t row, rows, len = (size_t)m->sym[mkc_caches[c].sym];
	if (len && !dst) {
		mkc_seterr(m, "cannot read KV cache '%s' into a NULL pointer", ti->name);
		return -1;
	}
	mkc_cache_geometry(c, &row, &rows);
	return len ? mkc_copy_rows(m, dst, row * len, m->buf[mkc_caches[c].tensor],
				   row * (size_t)ti->cap, row * len, rows) : 0;
#endif
}

/* The largest number of stop tokens generate takes. */
#define MKC_MAX_STOP 1024

/* Checks generate's sampling and stop tokens; 0 or -1 with err set. */
static int MKC_UNUSED
mkc_sampling_check(mkc_host *m, const mkc_rt_gen *g)
{
	const mkc_rt_sampling *s = &g->s;
	if (!(s->temperature >= 0 && s->temperature <= 1e30f)) {
		mkc_seterr(m, "sampling.temperature is %g; it takes 0 (greedy) or a positive number",
			   (double)s->temperature);
		return -1;
	}
	if (s->top_k < 0) {
		mkc_seterr(m, "sampling.top_k is %d; it takes 0 (every token) or more", s->top_k);
		return -1;
	}
	if (!(s->top_p >= 0 && s->top_p <= 1)) {
		mkc_seterr(m, "sampling.top_p is %g; it takes 0 to 1 (0 and 1: every token)",
			   (double)s->top_p);
		return -1;
	}
	if (g->n_stop < 0 || g->n_stop > MKC_MAX_STOP || (g->n_stop && !g->stop)) {
		mkc_seterr(m, "sampling.n_stop is %d%s; it takes 0 to %d stop tokens", g->n_stop,
			   g->n_stop > 0 && !g->stop ? " and sampling.stop is NULL" : "", MKC_MAX_STOP);
		return -1;
	}
	for (int i = 0; i < g->n_stop; i++)
		if (g->stop[i] < 0 || g->stop[i] >= MKC_GEN_VOCAB) {
			mkc_seterr(m, "stop token %d is %lld; the vocabulary is 0 to %lld", i,
				   (long long)g->stop[i], (long long)MKC_GEN_VOCAB - 1);
			return -1;
		}
	return 0;
}

/* Is tok one of generate's stop tokens? */
static int MKC_UNUSED
mkc_is_stop(const mkc_rt_gen *g, int64_t tok)
{
	for (int i = 0; i < g->n_stop; i++)
		if (g->stop[i] == tok)
			return 1;
	return 0;
}

/*
 * Checks what generate needs; *steps gets the most steps it runs: every
 * prompt token, then every new token but the last (a stop token ends it
 * sooner).
 */
static int
mkc_generate_check(mkc_host *m, const mkc_rt_gen *g, int *steps)
{
	if (g->n_out)
		*g->n_out = 0;
#if !MKC_CAN_GENERATE
	(void)steps;
	mkc_seterr(m, "this model cannot generate: it needs an input input_ids [1,1] (int64) "
		   "and an output logits [1,1,vocab] (float32 or float16)");
	return -1;
#else
	for (int i = 0; i < MKC_NINPUTS; i++)
		if (i != MKC_GEN_IDS && i != MKC_GEN_POS && i != MKC_GEN_MASK) {
			mkc_seterr(m, "this model cannot generate: its input '%s' is neither input_ids, "
				   "position_ids nor attention_mask [1, past + new]",
				   mkc_tensors[mkc_inputs[i]].name);
			return -1;
		}
	for (int s = 0; s < MKC_NSYMS; s++)
		if (mkc_cache_of_sym(s) < 0 && s != MKC_GEN_CHUNK_SYM) {
			mkc_seterr(m, "this model cannot generate: %s is not counted by a KV cache "
				   "(compiled with --kv-io?)", mkc_sym_names[s]);
			return -1;
		}
	if (mkc_check_loaded(m))
		return -1;
	const int64_t *prompt = g->prompt;
	const int n_prompt = g->n_prompt, n_new = g->n_new;
	if (!prompt || !g->out || n_prompt < 1 || n_new < 1) {
		mkc_seterr(m, "generate needs at least one prompt token, one new token and a place "
			   "for them");
		return -1;
	}
	if ((int64_t)n_prompt + n_new - 1 > (1 << 30)) {
		mkc_seterr(m, "%d prompt and %d new tokens are more steps than one call takes (2^30)",
			   n_prompt, n_new);
		return -1;
	}
	/* a token the model's own argmax could not give (the Gather of an
	 * embedding would take -1 as the last row, as ONNX has it) */
	mkc_rt_bad bad;
	for (int i = 0; i < n_prompt; i++)
		if (mkc_rt_check_index(prompt[i], 0, MKC_GEN_VOCAB - 1, MKC_IX_TOKEN, i, &bad)) {
			mkc_rt_index_sentence(m->err, sizeof m->err, "generate", &bad);
			return -1;
		}
	if (mkc_sampling_check(m, g))
		return -1;
	*steps = n_prompt + n_new - 1;
#if MKC_MAX_SEQS
	/* sequence 0's: room, and pages for every step */
	if (mkc_seq_room(m, 0, *steps))
		return -1;
	if (mkc_seq_pages(m, 0, m->pool->len[0], m->pool->len[0] + *steps, 0) > m->pool->nfree) {
		mkc_seterr(m, "the cache pool is full: %d steps of sequence 0 need more pages of %lld "
			   "positions than the %lld free", *steps, (long long)MKC_PAGE,
			   (long long)m->pool->nfree);
		return -1;
	}
#else
	if (MKC_NCACHES) {
		const mkc_rt_cache *c = &mkc_caches[0];
		int64_t cap = mkc_tensors[c->tensor].cap, used = m->sym[c->sym];
		/* a step of generate feeds one token, and appends one position */
		if (used + (int64_t)*steps > cap) {
			mkc_seterr(m, "the KV cache holds %lld positions; %lld are in use, and %d prompt "
				   "and %d new tokens need %lld more", (long long)cap, (long long)used,
				   n_prompt, n_new, (long long)*steps);
			return -1;
		}
	}
#endif
	return 0;
#endif
}

/* dims for a step of generate: the caches count their own, and s new tokens */
static void MKC_UNUSED
mkc_gen_dims(int64_t *dims, int64_t s)
{
	for (int i = 0; i < MKC_NSYMS; i++)
		dims[i] = i == MKC_GEN_CHUNK_SYM ? s : -1;
}

/*
 * generate's attention_mask (MKC_GEN_MASK): ones for every position the
 * caches hold, in a new buffer of the target's memory at *buf, which a
 * step's mask [1, past + new] reads the start of. 0, or -1 with err set.
 */
static int MKC_UNUSED
mkc_gen_mask(mkc_host *m, void **buf)
{
	size_t n = MKC_NCACHES ? (size_t)mkc_tensors[mkc_caches[0].tensor].cap : 1;
	int64_t *ones = (int64_t *)malloc(n * sizeof *ones);
	if (!ones) {
		mkc_seterr(m, "out of memory for generate's attention_mask");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		ones[i] = 1;
	int rc = mkc_alloc_buf(m, n * sizeof *ones, buf);
	if (rc == 0)
		rc = mkc_store(m, *buf, ones, n * sizeof *ones);
	free(ones);
	return rc;
}

#if MKC_CAN_GENERATE && MKC_GEN_CHUNK_SYM >= 0
/*
 * The first n prompt tokens in steps of up to the compiled chunk: generate
 * then runs its one-token loop from token n. With first, n is the whole
 * prompt, and the last row of the last chunk's logits gives the first new
 * token, drawn as s says for the position after the prompt's
 * (mkc_sample_rows: the draw generate's loop makes), into *first; else the
 * logits go unread. One launch a chunk, its inputs in buffers of the
 * target's memory. The count of tokens fed (n), or -1 with err set.
 */
static int
mkc_prefill(mkc_host *m, const int64_t *prompt, int n, const mkc_rt_sampling *s, int64_t *first)
{
	const int64_t most = mkc_sym_max[MKC_GEN_CHUNK_SYM];
	void *in[MKC_NINPUTS + 1] = {0}, *outs[MKC_NOUTPUTS + 1] = {0};
	int64_t *pos = (int64_t *)malloc((size_t)most * sizeof *pos), dims[MKC_NSYMS + 1];
	int rc = pos ? 0 : -1;
	if (!pos)
		mkc_seterr(m, "out of memory for the positions of a prompt chunk");
	for (int i = 0; i < MKC_NINPUTS && rc == 0 && n > 0; i++)
		rc = i == MKC_GEN_MASK ? mkc_gen_mask(m, &in[i])
				       : mkc_alloc_buf(m, (size_t)most * sizeof(int64_t), &in[i]);
	for (int o = 0; o < MKC_NOUTPUTS && rc == 0 && n > 0; o++) {
		size_t bytes = (size_t)mkc_numel(m, mkc_outputs[o], 1) *
			       (size_t)mkc_tensors[mkc_outputs[o]].esize;
		rc = mkc_alloc_buf(m, bytes ? bytes : 1, &outs[o]);
	}
	for (int j = 0; j < n && rc == 0;) {
		int c = n - j < most ? n - j : (int)most;
		int64_t next = mkc_next_position(m);
		for (int k = 0; k < c; k++)
			pos[k] = next + k;
		mkc_gen_dims(dims, c);
		rc = mkc_store(m, in[MKC_GEN_IDS], prompt + j, (size_t)c * sizeof *pos);
		if (rc == 0 && MKC_GEN_POS >= 0)
			rc = mkc_store(m, in[MKC_GEN_POS], pos, (size_t)c * sizeof *pos);
		if (rc == 0 && (rc = mkc_step(m, (const void *const *)in, outs, dims)) == 0) {
			if (first && j + c == n) {
				/* the logits' last row: [1, 1, vocab], or a row a token */
				int64_t last = mkc_numel(m, mkc_outputs[MKC_GEN_LOGITS], 0) / MKC_GEN_VOCAB - 1,
					at = next + c;
				rc = mkc_sample_rows(m, outs[MKC_GEN_LOGITS], 1, s, &at, first, &last);
			}
			mkc_end_step(m);
		}
		j += c;
	}
	for (int i = 0; i < MKC_NINPUTS; i++)
		if (in[i])
			mkc_free_buf(in[i]);
	for (int o = 0; o < MKC_NOUTPUTS; o++)
		if (outs[o])
			mkc_free_buf(outs[o]);
	free(pos);
	return rc ? -1 : n;
}
#else
/* one token a step: generate's own loop takes the whole prompt */
static int MKC_UNUSED
mkc_prefill(mkc_host *m, const int64_t *prompt, int n, const mkc_rt_sampling *s, int64_t *first)
{
	(void)m, (void)prompt, (void)n, (void)s, (void)first;
	return 0;
}
#endif

/*
 * generate's prompt before its loop of one-token steps. A chunked file
 * takes a prompt of three tokens or more in chunks and draws the first new
 * token from the last one's logits into *first and g->out[0] (*done 1);
 * the loop then starts from that token (*prompt, *n_prompt 1), for the
 * rest of the new tokens (*steps: none after a stop token). Else the
 * prompt but its last token goes in chunks where the file takes them
 * (*done 0), the loop taking the rest: a chunk of two tokens runs the
 * chunked plan, which costs more than two one-token steps (the 1B shape's
 * 1024-token plan on an H100: 4.8 ms for a prompt of two, 2.6 ms as two
 * steps). *steps: on entry, mkc_generate_check's. 0, or -1 with err set.
 */
static int MKC_UNUSED
mkc_gen_prefill(mkc_host *m, const mkc_rt_gen *g, const int64_t **prompt, int *n_prompt,
		int *steps, int64_t *first, int *done)
{
	*done = 0;
	if (MKC_GEN_CHUNK_SYM < 0 || g->n_prompt < 3) {
		const int fed = mkc_prefill(m, g->prompt, g->n_prompt - 1, NULL, NULL);
		if (fed < 0)
			return -1;
		*prompt = g->prompt + fed, *n_prompt = g->n_prompt - fed, *steps -= fed;
		return 0;
	}
	if (mkc_prefill(m, g->prompt, g->n_prompt, &g->s, first) < 0)
		return -1;
	g->out[0] = *first;
	if (g->n_out)
		*g->n_out = 1;
	*done = 1;
	*prompt = first, *n_prompt = 1;
	*steps = mkc_is_stop(g, *first) ? 0 : g->n_new - 1;
	return 0;
}

/* The position the next step writes: the count of cached positions. */
static int64_t MKC_UNUSED
mkc_next_position(const mkc_host *m)
{
#if MKC_MAX_SEQS
	return m->pool->len[0];
#else
	return MKC_NCACHES ? m->sym[mkc_caches[0].sym] : 0;
#endif
}

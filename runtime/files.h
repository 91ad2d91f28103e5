/*
 * files.h - the emitted loader's rules for the files it reads, embedded
 * before host.h: the compiler's own rules (compiler/onnx.c,
 * compiler/files.c), applied again at run time because the files may have
 * changed since the model was compiled.
 *
 *   FILE *f = mkc_rt_open_in(dir, "model.safetensors", "w", path, sizeof path,
 *                            &size, err, sizeof err);
 *   if (!f || mkc_rt_st_check(f, path, size, &ti, sym, err, sizeof err)) ...
 *
 * A weight file's name must be relative and never step up ('..'); its real
 * path (symlinks resolved) must lie inside the model folder's; it must be a
 * regular file, opened with O_NONBLOCK so that a FIFO is refused rather
 * than waited on. A safetensors file's header is checked against the
 * tensor table: the tensor the model was compiled for must be listed once,
 * with the dtype, shape and first byte it was compiled with, and its data
 * offsets must lie in the file and hold exactly its bytes.
 *
 * Every failure writes one sentence naming the file and the weight into
 * err. The header is JSON; the scanner below reads only what that check
 * needs and refuses anything that is not JSON (nesting deeper than
 * MKC_RT_JSON_DEPTH included: a header is a flat map of flat entries).
 */

#define MKC_RT_JSON_DEPTH 64

/*
 * The error sentence. (Through vsnprintf: a sentence longer than err is
 * cut short, and snprintf's truncation warnings do not apply.)
 */
static void mkc_rt_say(char *err, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
mkc_rt_say(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

/*
 * Opens path as the compiler opens model files: a regular file only; *size
 * gets its length. NULL after a sentence in err.
 */
static FILE *
mkc_rt_open_regular(const char *path, const char *weight, int64_t *size, struct stat *st,
		    char *err, size_t n)
{
	char what[300] = "";
	if (weight)
		mkc_rt_say(what, sizeof what, " (weight '%s')", weight);
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		mkc_rt_say(err, n, "%s: cannot open: %s%s", path, strerror(errno), what);
		return NULL;
	}
	if (fstat(fd, st) != 0) {
		mkc_rt_say(err, n, "%s: cannot read: %s%s", path, strerror(errno), what);
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st->st_mode)) {
		mkc_rt_say(err, n, "%s: %s%s", path,
			 S_ISDIR(st->st_mode)    ? "is a folder, not a regular file"
			 : S_ISFIFO(st->st_mode) ? "is a FIFO, not a regular file"
						 : "is not a regular file",
			 what);
		close(fd);
		return NULL;
	}
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		mkc_rt_say(err, n, "%s: cannot open: %s%s", path, strerror(errno), what);
		close(fd);
		return NULL;
	}
	*size = (int64_t)st->st_size;
	return f;
}

/*
 * Opens rel (len bytes, not NUL-terminated) inside the folder dir for
 * weight; path (of room pn) gets dir/rel. NULL after a sentence in err.
 */
static FILE *
mkc_rt_open_in(const char *dir, const char *rel, size_t len, const char *weight, char *path,
	       size_t pn, int64_t *size, char *err, size_t n)
{
	if (len == 0) {   /* rel may then be NULL: no location at all */
		mkc_rt_say(err, n, "weight '%s': its external data has no file name", weight);
		return NULL;
	}
	if (memchr(rel, 0, len)) {
		mkc_rt_say(err, n, "weight '%s': its file name holds a NUL byte", weight);
		return NULL;
	}
	size_t dl = strlen(dir);
	if (dl + len + 2 > pn) {
		mkc_rt_say(err, n, "weight '%s': its file's path is too long", weight);
		return NULL;
	}
	memcpy(path, dir, dl);
	path[dl] = '/';
	memcpy(path + dl + 1, rel, len);
	path[dl + 1 + len] = 0;
	if (rel[0] == '/') {
		mkc_rt_say(err, n, "%s: weight '%s' must be read from a file inside the model's folder, "
			 "not from an absolute path", path + dl + 1, weight);
		return NULL;
	}
	for (size_t i = 0; i < len;) {
		size_t k = i;
		while (k < len && rel[k] != '/')
			k++;
		if (k - i == 2 && rel[i] == '.' && rel[i + 1] == '.') {
			mkc_rt_say(err, n, "%s: the file of weight '%s' leaves the model's folder ('..')",
				 path, weight);
			return NULL;
		}
		i = k + 1;
	}
	struct stat st, real;
	FILE *f = mkc_rt_open_regular(path, weight, size, &st, err, n);
	if (!f)
		return NULL;
	/* the file opened must be the one a path inside dir names, symlinks resolved */
	char *rd = realpath(dir, NULL), *rp = realpath(path, NULL);
	size_t rl = rd ? strlen(rd) : 0;
	int inside = rd && rp && strncmp(rp, rd, rl) == 0 && (rp[rl] == '/' || strcmp(rd, "/") == 0) &&
		     stat(rp, &real) == 0 && real.st_dev == st.st_dev && real.st_ino == st.st_ino;
	free(rd);
	free(rp);
	if (!inside) {
		mkc_rt_say(err, n, "%s: the file of weight '%s' resolves outside the model's folder",
			 path, weight);
		fclose(f);
		return NULL;
	}
	return f;
}

/* ------------------------------------------------ the safetensors header */

typedef struct {
	const char *p, *begin, *end;
} mkc_rt_json;

static void
mkc_rt_json_ws(mkc_rt_json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

/* Consumes c after white space; 1 if it was there. */
static int
mkc_rt_json_eat(mkc_rt_json *j, char c)
{
	mkc_rt_json_ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return 1;
	}
	return 0;
}

static int
mkc_rt_json_hex4(mkc_rt_json *j, unsigned *u)
{
	*u = 0;
	for (int i = 0; i < 4; i++, j->p++) {
		if (j->p >= j->end)
			return -1;
		char c = *j->p;
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (d < 0)
			return -1;
		*u = *u * 16 + (unsigned)d;
	}
	return 0;
}

/*
 * A string. Its decoded bytes go to out when out is not NULL (no longer
 * than the text they come from) and *len gets their count. -1: not JSON.
 */
static int
mkc_rt_json_string(mkc_rt_json *j, char *out, size_t *len)
{
	size_t k = 0;
	if (!mkc_rt_json_eat(j, '"'))
		return -1;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p++;
		if (c < 0x20)
			return -1;
		if (c != '\\') {
			if (out)
				out[k] = (char)c;
			k++;
			continue;
		}
		if (j->p >= j->end)
			return -1;
		char e = *j->p++;
		static const char esc[] = "\"\\/bfnrt", val[] = "\"\\/\b\f\n\r\t";
		const char *plain = e ? strchr(esc, e) : NULL;
		if (plain) {
			if (out)
				out[k] = val[plain - esc];
			k++;
			continue;
		}
		unsigned u, lo;
		if (e != 'u' || mkc_rt_json_hex4(j, &u) || (u >= 0xdc00 && u < 0xe000))
			return -1;
		if (u >= 0xd800 && u < 0xdc00) {   /* a surrogate pair */
			if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
				return -1;
			j->p += 2;
			if (mkc_rt_json_hex4(j, &lo) || lo < 0xdc00 || lo >= 0xe000)
				return -1;
			u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
		}
		unsigned char b[4];
		int nb = u < 0x80 ? 1 : u < 0x800 ? 2 : u < 0x10000 ? 3 : 4;
		if (nb == 1)
			b[0] = (unsigned char)u;
		else {
			for (int i = nb - 1; i > 0; i--, u >>= 6)
				b[i] = (unsigned char)(0x80 | (u & 0x3f));
			b[0] = (unsigned char)((nb == 2 ? 0xc0 : nb == 3 ? 0xe0 : 0xf0) | u);
		}
		if (out)
			memcpy(out + k, b, (size_t)nb);
		k += (size_t)nb;
	}
	if (j->p >= j->end)
		return -1;
	j->p++;
	if (len)
		*len = k;
	return 0;
}

/* A number; *count gets it when it is an integer 0..2^53 written in digits, else -1. */
static int
mkc_rt_json_number(mkc_rt_json *j, int64_t *count)
{
	mkc_rt_json_ws(j);
	const char *s = j->p;
	int digits = 0, whole = 1;
	int64_t v = 0;
	if (j->p < j->end && *j->p == '-')
		j->p++, whole = 0;
	if (j->p < j->end && *j->p == '0')
		j->p++, digits = 1;
	else
		for (; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++, digits++)
			if (v <= ((int64_t)1 << 53))
				v = v * 10 + (*j->p - '0');
	if (!digits)
		return -1;
	if (j->p < j->end && *j->p == '.') {
		j->p++, whole = 0;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -1;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++, whole = 0;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -1;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (count)
		*count = whole && v <= ((int64_t)1 << 53) && j->p > s ? v : -1;
	return 0;
}

/* Skips one value of any kind. -1: not JSON, or nested too deeply. */
static int
mkc_rt_json_skip(mkc_rt_json *j, int depth)
{
	mkc_rt_json_ws(j);
	if (j->p >= j->end || depth > MKC_RT_JSON_DEPTH)
		return -1;
	char c = *j->p;
	if (c == '"')
		return mkc_rt_json_string(j, NULL, NULL);
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		j->p++;
		if (mkc_rt_json_eat(j, close))
			return 0;
		do {
			if (c == '{' && (mkc_rt_json_string(j, NULL, NULL) || !mkc_rt_json_eat(j, ':')))
				return -1;
			if (mkc_rt_json_skip(j, depth + 1))
				return -1;
		} while (mkc_rt_json_eat(j, ','));
		return mkc_rt_json_eat(j, close) ? 0 : -1;
	}
	static const char *const words[] = {"true", "false", "null"};
	for (int i = 0; i < 3; i++) {
		size_t wl = strlen(words[i]);
		if ((size_t)(j->end - j->p) >= wl && memcmp(j->p, words[i], wl) == 0) {
			j->p += wl;
			return 0;
		}
	}
	return mkc_rt_json_number(j, NULL);
}

/* What a header entry says; rank counts every dimension, shape keeps the first 8. */
typedef struct {
	char dtype[8];
	int rank;
	int64_t shape[8], offsets[2];
	int noffsets, has_dtype, has_shape;
} mkc_rt_st_entry;

/*
 * An array of counts: rank and shape as above. *bad is set when a member
 * is not an integer 0..2^53.
 */
static int
mkc_rt_json_counts(mkc_rt_json *j, int64_t *v, int room, int *count, int *bad)
{
	*count = 0;
	if (!mkc_rt_json_eat(j, '['))
		return (*bad = 1, mkc_rt_json_skip(j, 1));
	if (mkc_rt_json_eat(j, ']'))
		return 0;
	do {
		int64_t x;
		mkc_rt_json_ws(j);
		if (j->p < j->end && (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))) {
			if (mkc_rt_json_number(j, &x))
				return -1;
		} else {
			if (mkc_rt_json_skip(j, 1))
				return -1;
			x = -1;
		}
		if (x < 0)
			*bad = 1;
		else if (*count < room)
			v[*count] = x;
		if (*count < 1 << 20)
			++*count;
	} while (mkc_rt_json_eat(j, ','));
	return mkc_rt_json_eat(j, ']') ? 0 : -1;
}

/* One tensor's entry; field problems go to *bad (a sentence fragment). */
static int
mkc_rt_st_entry_read(mkc_rt_json *j, char *key, mkc_rt_st_entry *e, const char **bad)
{
	memset(e, 0, sizeof *e);
	if (!mkc_rt_json_eat(j, '{')) {
		*bad = "is not an object";
		return mkc_rt_json_skip(j, 1);
	}
	if (mkc_rt_json_eat(j, '}')) {
		*bad = "has no field 'dtype'";
		return 0;
	}
	do {
		size_t kl;
		if (mkc_rt_json_string(j, key, &kl) || !mkc_rt_json_eat(j, ':'))
			return -1;
		key[kl] = 0;
		int worse = 0;
		if (!strcmp(key, "dtype")) {
			size_t dl;
			mkc_rt_json_ws(j);
			if (j->p >= j->end || *j->p != '"') {
				if (mkc_rt_json_skip(j, 1))
					return -1;
				*bad = "has a field 'dtype' that is not a string";
				continue;
			}
			if (mkc_rt_json_string(j, key, &dl))
				return -1;
			e->has_dtype = 1;
			if (dl < sizeof e->dtype) {
				memcpy(e->dtype, key, dl);
				e->dtype[dl] = 0;
			} else {
				strcpy(e->dtype, "?");
			}
		} else if (!strcmp(key, "shape")) {
			e->has_shape = 1;
			if (mkc_rt_json_counts(j, e->shape, 8, &e->rank, &worse))
				return -1;
			if (worse)
				*bad = "has a field 'shape' that is not an array of non-negative integers";
		} else if (!strcmp(key, "data_offsets")) {
			int cnt;
			if (mkc_rt_json_counts(j, e->offsets, 2, &cnt, &worse))
				return -1;
			e->noffsets = cnt;
			if (worse || cnt != 2)
				*bad = "has a field 'data_offsets' that is not two non-negative integers "
				       "[begin, end]";
		} else if (mkc_rt_json_skip(j, 1)) {
			return -1;
		}
	} while (mkc_rt_json_eat(j, ','));
	if (!mkc_rt_json_eat(j, '}'))
		return -1;
	if (!*bad && !e->has_dtype)
		*bad = "has no field 'dtype'";
	if (!*bad && !e->has_shape)
		*bad = "has no field 'shape'";
	if (!*bad && !e->noffsets)
		*bad = "has no field 'data_offsets'";
	return 0;
}

/* The safetensors name of an ONNX data type, or NULL. */
static const char *
mkc_rt_st_dtype(int onnx)
{
	switch (onnx) {
	case 1: return "F32";
	case 2: return "U8";
	case 3: return "I8";
	case 4: return "U16";
	case 5: return "I16";
	case 6: return "I32";
	case 7: return "I64";
	case 9: return "BOOL";
	case 10: return "F16";
	case 11: return "F64";
	case 12: return "U32";
	case 13: return "U64";
	case 16: return "BF16";
	default: return NULL;
	}
}

/* "[2, 3]" into buf; rank may exceed the dimensions kept. */
static void
mkc_rt_shape_str(char *buf, size_t n, int rank, const int64_t *shape, int kept)
{
	size_t k = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < rank && i < kept && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "%s]", rank > kept ? ", ..." : "");
}

/*
 * Scans the header text for the entry of name: the count of entries so
 * called (the first goes to *found, its field problem to *bad), or -1 when
 * the text is not JSON.
 */
static int
mkc_rt_st_scan(mkc_rt_json *j, char *key, const char *name, mkc_rt_st_entry *found,
	       const char **bad)
{
	int nfound = 0;
	size_t nl = strlen(name);
	if (!mkc_rt_json_eat(j, '{'))
		return -1;
	if (!mkc_rt_json_eat(j, '}')) {
		do {
			size_t kl;
			if (mkc_rt_json_string(j, key, &kl) || !mkc_rt_json_eat(j, ':'))
				return -1;
			if (kl != nl || memcmp(key, name, nl)) {
				if (mkc_rt_json_skip(j, 1))
					return -1;
				continue;
			}
			mkc_rt_st_entry e;
			const char *why = NULL;
			if (mkc_rt_st_entry_read(j, key, &e, &why))
				return -1;
			if (!nfound++) {
				*found = e;
				*bad = why;
			}
		} while (mkc_rt_json_eat(j, ','));
		if (!mkc_rt_json_eat(j, '}'))
			return -1;
	}
	mkc_rt_json_ws(j);
	return j->p == j->end ? nfound : -1;
}

/* The entry e of a header hl bytes long against what ti was compiled with. */
static int
mkc_rt_st_compare(const mkc_rt_st_entry *e, const char *path, int64_t size, uint64_t hl,
		  const mkc_rt_tensor_info *ti, const int64_t *sym, char *err, size_t n)
{
	const char *want = mkc_rt_st_dtype(ti->fdtype);
	if (!want || strcmp(e->dtype, want)) {
		mkc_rt_say(err, n, "%s: tensor '%s' is %s, but the model was compiled for %s", path,
			 ti->name, e->dtype, want ? want : "another type");
		return -1;
	}
	int64_t shape[8], numel = 1;
	int same = e->rank == ti->rank;
	for (int i = 0; i < ti->rank; i++) {
		shape[i] = mkc_rt_dimv(ti->dims[i], sym);
		numel *= shape[i];
		same = same && e->shape[i] == shape[i];
	}
	if (!same) {
		char has[160], had[160];
		mkc_rt_shape_str(has, sizeof has, e->rank, e->shape, 8);
		mkc_rt_shape_str(had, sizeof had, ti->rank, shape, 8);
		mkc_rt_say(err, n, "%s: tensor '%s' has shape %s, but the model was compiled for %s",
			 path, ti->name, has, had);
		return -1;
	}
	uint64_t data = (uint64_t)size - 8 - hl, b = (uint64_t)e->offsets[0],
		 end = (uint64_t)e->offsets[1], need = (uint64_t)numel * (uint64_t)ti->esize;
	if (b > end || end > data) {
		mkc_rt_say(err, n, "%s: tensor '%s' has data_offsets [%llu, %llu], not a range within "
			 "the %llu bytes of the data section", path, ti->name, (unsigned long long)b,
			 (unsigned long long)end, (unsigned long long)data);
		return -1;
	}
	if (end - b != need) {
		mkc_rt_say(err, n, "%s: tensor '%s' has data_offsets [%llu, %llu], %llu bytes, but its "
			 "shape and dtype need %llu", path, ti->name, (unsigned long long)b,
			 (unsigned long long)end, (unsigned long long)(end - b),
			 (unsigned long long)need);
		return -1;
	}
	if (8 + hl + b != (uint64_t)ti->offset) {
		mkc_rt_say(err, n, "%s: tensor '%s' starts at byte %llu, but the model was compiled for "
			 "byte %lld (the file was rewritten since; compile the model again)", path,
			 ti->name, (unsigned long long)(8 + hl + b), (long long)ti->offset);
		return -1;
	}
	return 0;
}

/*
 * Checks the header of the safetensors file f (path, size bytes) for the
 * tensor ti was compiled from; ti's sizes are as the file holds them. 0,
 * or -1 after a sentence in err.
 */
static int
mkc_rt_st_check(FILE *f, const char *path, int64_t size, const mkc_rt_tensor_info *ti,
		const int64_t *sym, char *err, size_t n)
{
	unsigned char len8[8];
	if (size < 8 || fseek(f, 0, SEEK_SET) != 0 || fread(len8, 1, 8, f) != 8) {
		mkc_rt_say(err, n, "%s: not a safetensors file: %lld bytes, too short for the header "
			 "length (weight '%s')", path, (long long)size, ti->name);
		return -1;
	}
	uint64_t hl = 0;
	for (int i = 7; i >= 0; i--)
		hl = hl << 8 | len8[i];
	if (hl > (uint64_t)size - 8) {
		mkc_rt_say(err, n, "%s: the header length %llu runs past the end of the file (%lld bytes) "
			 "(weight '%s')", path, (unsigned long long)hl, (long long)size, ti->name);
		return -1;
	}
	/* the header, and room for the longest string it can decode to */
	char *text = (char *)malloc(2 * (size_t)hl + 2);
	if (!text) {
		mkc_rt_say(err, n, "%s: out of memory for a header of %llu bytes (weight '%s')", path,
			 (unsigned long long)hl, ti->name);
		return -1;
	}
	if (fread(text, 1, (size_t)hl, f) != (size_t)hl) {
		mkc_rt_say(err, n, "%s: cannot read its header (weight '%s')", path, ti->name);
		free(text);
		return -1;
	}
	mkc_rt_json j = {text, text, text + hl};
	mkc_rt_st_entry e;
	const char *bad = NULL;
	memset(&e, 0, sizeof e);
	int found = mkc_rt_st_scan(&j, text + hl + 1, ti->name, &e, &bad), rc = -1;
	if (found < 0)
		mkc_rt_say(err, n, "%s: the header is not valid JSON near byte %lld (looking for weight "
			 "'%s')", path, (long long)(8 + (j.p - j.begin)), ti->name);
	else if (!found)
		mkc_rt_say(err, n, "%s: the header lists no tensor '%s', which the model was compiled "
			 "with", path, ti->name);
	else if (found > 1)
		mkc_rt_say(err, n, "%s: tensor '%s' is listed %d times in the header", path, ti->name,
			 found);
	else if (bad)
		mkc_rt_say(err, n, "%s: tensor '%s' %s", path, ti->name, bad);
	else
		rc = mkc_rt_st_compare(&e, path, size, hl, ti, sym, err, n);
	free(text);
	return rc;
}

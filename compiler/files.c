/* files.c - mapping model files and parsing JSON for the frontends. See files.h. */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
	void *base;
	size_t size;
} mapping;

static void
unmap(void *arg)
{
	mapping *m = arg;
	if (m->base)
		munmap(m->base, m->size);
}

int
mkc_file_map(mkc_arena *a, const char *path, const void **data, size_t *size,
	     const char **err)
{
	/* O_NONBLOCK: opening a FIFO or a device must not wait for a writer;
	 * such files are refused below, before anything is read */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		*err = strerror(errno);
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		*err = strerror(errno);
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = S_ISDIR(st.st_mode)    ? "is a folder"
		       : S_ISFIFO(st.st_mode) ? "is a FIFO, not a regular file"
					      : "not a regular file";
		close(fd);
		return -1;
	}
	*size = (size_t)st.st_size;
	*data = NULL;
	if (*size) {
		void *p = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			*err = strerror(errno);
			close(fd);
			return -1;
		}
		mapping *m = mkc_arena_alloc(a, sizeof *m);
		m->base = p;
		m->size = *size;
		mkc_arena_on_destroy(a, unmap, m);
		*data = p;
	}
	close(fd);
	return 0;
}

int
mkc_file_read(mkc_ctx *c, const char *path, const void **data, size_t *size)
{
	const char *err;
	if (mkc_file_map(c->arena, path, data, size, &err) != 0)
		return mkc_error(c, "%s: cannot read: %s", path, err);
	return 0;
}

static int
line_of(const char *text, const char *at)
{
	int line = 1;
	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	return line;
}

cJSON *
mkc_json_parse(mkc_ctx *c, const char *where, const void *bytes, size_t size)
{
	if (size && memchr(bytes, 0, size)) {
		mkc_error(c, "%s: not valid JSON: it holds a NUL byte", where);
		return NULL;
	}
	/* a terminated copy, so that no reading can run past the mapping */
	char *text = malloc(size + 1);
	if (!text) {
		mkc_error(c, "%s: out of memory for %zu bytes of JSON", where, size);
		return NULL;
	}
	if (size)
		memcpy(text, bytes, size);
	text[size] = 0;
	const char *end = text;
	cJSON *root = cJSON_ParseWithLengthOpts(text, size, &end, 0);
	if (root) {
		end += strspn(end, " \t\r\n");
		if (end != text + size) {
			cJSON_Delete(root);
			root = NULL;
		}
	}
	if (!root)
		mkc_error(c, "%s: not valid JSON near line %d", where, line_of(text, end));
	free(text);
	return root;
}

int
mkc_verror_at(mkc_ctx *c, const char *prefix, const char *fmt, va_list ap)
{
	char msg[768];
	vsnprintf(msg, sizeof msg, fmt, ap);
	return mkc_error(c, "%s%s", prefix, msg);
}

int
mkc_error_at(mkc_ctx *c, const char *prefix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = mkc_verror_at(c, prefix, fmt, ap);
	va_end(ap);
	return rc;
}

const char *
mkc_json_kind(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsObject(v))
		return "an object";
	if (cJSON_IsArray(v))
		return "an array";
	if (cJSON_IsBool(v))
		return "a boolean";
	return "null";
}

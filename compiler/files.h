/*
 * files.h - internal to the frontends (onnx.c, onnx_json.c, safetensors.c,
 * hf.c), not a public header: mapping a model's files, and parsing the JSON
 * that several of them hold, with the same checks and messages everywhere.
 *
 *   const void *p; size_t n; const char *why;
 *   if (mkc_file_map(c->arena, path, &p, &n, &why) != 0)
 *       return mkc_error(c, "%s: cannot read: %s", path, why);
 *   cJSON *root = mkc_json_parse(c, path, p, n);   // NULL after an error
 *   ...
 *   cJSON_Delete(root);
 */
#ifndef MKC_FILES_H
#define MKC_FILES_H

#include "../ir/base.h"

#include <cjson/cJSON.h>

/*
 * Maps a whole file read-only; it stays mapped until the arena goes.
 * Returns 0, or -1 with *err set to a reason. An empty file maps to (NULL, 0).
 * Every file mkc reads comes through here: only regular files are read, and
 * a FIFO or a device is refused without waiting on it.
 */
int mkc_file_map(mkc_arena *a, const char *path, const void **data, size_t *size,
		 const char **err);

/* mkc_file_map, reporting "path: cannot read: why". 0 or -1. */
int mkc_file_read(mkc_ctx *c, const char *path, const void **data, size_t *size);

/*
 * The JSON tree of size bytes (no NUL needed after them), or NULL after an
 * error that starts with `where` (a file name, or "file: what") and names
 * the line the text goes wrong on. The caller deletes the tree.
 */
cJSON *mkc_json_parse(mkc_ctx *c, const char *where, const void *bytes, size_t size);

/*
 * mkc_error with a prefix, which is not a format: "dir/config.json: field
 * 'x' " then the message. Returns -1.
 */
int mkc_error_at(mkc_ctx *c, const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int mkc_verror_at(mkc_ctx *c, const char *prefix, const char *fmt, va_list ap);

/* "a number", "a string", "an object", "an array", "a boolean" or "null". */
const char *mkc_json_kind(const cJSON *v);

#endif

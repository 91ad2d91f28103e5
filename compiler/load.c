/* load.c - chooses the frontend for a model path. */
#include "frontend.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static bool
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

mkc_graph *
mkc_load_model(mkc_ctx *c, const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		mkc_error(c, "%s: cannot read: %s", path, strerror(errno));
		return NULL;
	}
	if (S_ISDIR(st.st_mode)) {
		/* an ONNX backend-test folder holds model.onnx */
		char *p = mkc_arena_printf(c->arena, "%s/model.onnx", path);
		if (stat(p, &st) == 0)
			return mkc_onnx_load(c, p);
		mkc_error(c, "%s: a folder without model.onnx (Hugging Face folders are not read yet)", path);
		return NULL;
	}
	if (ends_with(path, ".json"))
		return mkc_onnx_json_load(c, path);
	return mkc_onnx_load(c, path);
}

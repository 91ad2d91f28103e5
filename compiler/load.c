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
	return mkc_load_model_logits(c, path, false);
}

mkc_graph *
mkc_load_model_logits(mkc_ctx *c, const char *path, bool all_logits)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		mkc_error(c, "%s: cannot read: %s", path, strerror(errno));
		return NULL;
	}
	if (S_ISDIR(st.st_mode)) {
		/* an ONNX backend-test folder holds model.onnx; a Hugging Face
		 * folder config.json */
		char *p = mkc_arena_printf(c->arena, "%s/model.onnx", path);
		if (stat(p, &st) == 0)
			return mkc_onnx_load(c, p);
		p = mkc_arena_printf(c->arena, "%s/config.json", path);
		if (stat(p, &st) == 0)
			return mkc_hf_load(c, path, all_logits);
		mkc_error(c, "%s: a folder without model.onnx or config.json (a Hugging Face model)", path);
		return NULL;
	}
	if (strcmp(path, "config.json") == 0 || ends_with(path, "/config.json")) {
		/* a Hugging Face model named by its config */
		size_t n = strlen(path) - strlen("config.json");
		return mkc_hf_load(c, n ? mkc_arena_strndup(c->arena, path, n - 1) : ".", all_logits);
	}
	if (ends_with(path, ".json"))
		return mkc_onnx_json_load(c, path);
	return mkc_onnx_load(c, path);
}

/*
 * hf.c - the Hugging Face frontend: a model folder (config.json, and
 * model.safetensors or model.safetensors.index.json with its shards) into
 * the graph IR of one decode step.
 *
 * Approach. A Hugging Face folder holds no graph, only a family name and
 * its sizes; the graph is what the family's modeling code computes, written
 * here once per family with the ops of ir/ops.def, and built directly in the
 * IR. The result has the interface of the ONNX exports (tests/models/README.md)
 * with a step of seq_len new tokens: inputs input_ids, position_ids
 * [1, seq_len] (int64) and past_key_values.{i}.key/value [1, kv_heads,
 * past_len, head_dim]; outputs logits [1, 1, vocab] (the last position's:
 * the one a prompt chunk or a decode step needs; every position's, [1,
 * seq_len, vocab], with all_logits: mkc --all-logits) and present.{i}.key/value
 * [1, kv_heads, past_len + seq_len, head_dim]. So the same harness, test
 * data and API serve both forms. The driver fixes seq_len at 1 unless
 * --max-chunk allows longer steps (mkc_graph_fix_sym), which makes the
 * graph the decode step's.
 *
 * One step, for llama, qwen2 and qwen3 (they differ only in biases and the
 * q/k norms), S = seq_len:
 *
 *   h = Reshape(Gather(embed_tokens, input_ids), [S, hidden])
 *   cos, sin = Cos, Sin(Reshape(Cast(position_ids), [1, S, 1]) * inv_freq)
 *                                                           [1, S, head_dim/2]
 *   per layer:
 *     x = RMSNormalization(h)
 *     q = Transpose(Reshape(Gemm(x, q_proj, transB), [1, S, heads, head_dim]))
 *         (qwen3: RMSNormalization over head_dim with q_norm), RotaryEmbedding
 *     k likewise with kv_heads; v = Transpose(Reshape(Gemm(x, v_proj)))
 *     y, present key, present value = Attention(q, k, v, past key, past value,
 *                                               is_causal)
 *     h += Gemm(Reshape(Transpose(y), [S, heads * head_dim]), o_proj)
 *     x = RMSNormalization(h)
 *     h += Gemm(Mul(Mul(g, Sigmoid(g)), Gemm(x, up_proj)), down_proj),
 *          g = Gemm(x, gate_proj)
 *   logits = Reshape(Gemm(RMSNormalization(Slice(h, last row)), lm_head), [1, 1, vocab])
 *            (all_logits: no Slice, [1, S, vocab])
 *
 * The transposes put heads before positions as Attention wants them ([1,
 * heads, S, head_dim]); with S = 1 they move an axis of length 1 only, and
 * canon makes them Reshapes (views). Linear weights are stored [out, in]:
 * Gemm reads them with transB = 1, no copies. inv_freq is the only computed
 * constant; cos and sin come from the positions at run time, as the
 * opset-23 export does, instead of a table sized for the longest context.
 *
 * Weights are read where they lie: each is a tensor naming its safetensors
 * file and offset, whose bytes the emitted code reads at load time (bf16
 * ones stay bf16, and the kernels widen them). Every weight is checked
 * against the shape the config implies, and every error names the file and
 * the field or tensor:
 *   llama/config.json: field 'rope_scaling.rope_type' is 'yarn'; ...
 *   llama/model.safetensors: tensor 'model.norm.weight' has shape [32], config.json implies [64]
 */
#include "files.h"
#include "frontend.h"
#include "numeric.h"
#include "safetensors.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
	const char *model_type;
	int64_t hidden, layers, heads, kv_heads, head_dim, inter, vocab;
	double eps, theta;
	bool tie;                  /* lm_head reads embed_tokens */
	bool qkv_bias, o_bias, mlp_bias;
	bool qk_norm;              /* qwen3 */
	bool llama3;               /* llama3 rope scaling, with the four below */
	double factor, low_freq, high_freq, orig_max;
} hf_config;

typedef struct {
	mkc_ctx *c;
	mkc_graph *g;
	const char *dir, *config_path;
	const cJSON *root;
	hf_config cfg;
	bool all_logits;           /* every position's logits, not the last one's */
	mkc_st_file *single;       /* model.safetensors, when not sharded */
	const char *index_path;    /* model.safetensors.index.json, when sharded */
	mkc_map shard_of;          /* weight name -> its shard (mkc_st_file) */
	int64_t nmapped;           /* the names weight_map lists */
	mkc_tensor *cos, *sin;
	mkc_map shapes;            /* Reshape targets by their text: "[1,8,1,32]" */
	bool failed;               /* a weight is missing or wrong: its error is out */
} hf;

/* ------------------------------------------------------------ config */

static int
cfg_fail(hf *b, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
cfg_fail(hf *b, const char *field, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = mkc_verror_at(b->c, mkc_arena_printf(b->c->arena, "%s: field '%s' ", b->config_path, field),
			       fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * A member, or NULL where it is absent or null (Hugging Face's "unset").
 * Of a key given twice the last counts, as for Python's json module.
 */
static const cJSON *
member(const cJSON *obj, const char *key)
{
	const cJSON *v = NULL;
	for (const cJSON *e = cJSON_IsObject(obj) ? obj->child : NULL; e; e = e->next)
		if (strcmp(e->string, key) == 0)
			v = e;
	return cJSON_IsNull(v) ? NULL : v;
}

/* "rope_scaling.factor" for a member of a nested object, else the key. */
static const char *
label(hf *b, const char *obj_name, const char *key)
{
	return obj_name ? mkc_arena_printf(b->c->arena, "%s.%s", obj_name, key) : key;
}

/* A positive integer; required when dflt < 0. */
static int
get_int(hf *b, const char *key, int64_t dflt, int64_t *out)
{
	const cJSON *v = member(b->root, key);
	if (!v) {
		if (dflt < 0)
			return cfg_fail(b, key, "is missing");
		*out = dflt;
		return 0;
	}
	/* 2^31 bounds every size, so that products of two stay exact */
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1 ||
	    v->valuedouble > 2147483647.0)
		return cJSON_IsNumber(v) ? cfg_fail(b, key, "must be a positive integer below 2^31 (it is %g)", v->valuedouble)
					 : cfg_fail(b, key, "must be a positive integer (it is %s)", mkc_json_kind(v));
	*out = (int64_t)v->valuedouble;
	return 0;
}

/* A number; required when required is set. */
static int
get_num(hf *b, const cJSON *obj, const char *obj_name, const char *key, bool required,
	double dflt, double *out)
{
	const cJSON *v = member(obj, key);
	if (!v) {
		if (required)
			return cfg_fail(b, label(b, obj_name, key), "is missing");
		*out = dflt;
		return 0;
	}
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return cfg_fail(b, label(b, obj_name, key), "must be a number (it is %s)",
				mkc_json_kind(v));
	*out = v->valuedouble;
	return 0;
}

static int
get_bool(hf *b, const char *key, bool dflt, bool *out)
{
	const cJSON *v = member(b->root, key);
	if (!v) {
		*out = dflt;
		return 0;
	}
	if (!cJSON_IsBool(v))
		return cfg_fail(b, key, "must be true or false (it is %s)", mkc_json_kind(v));
	*out = cJSON_IsTrue(v);
	return 0;
}

static int
get_str(hf *b, const cJSON *obj, const char *obj_name, const char *key, const char **out)
{
	const cJSON *v = member(obj, key);
	if (v && !cJSON_IsString(v))
		return cfg_fail(b, label(b, obj_name, key), "must be a string (it is %s)",
				mkc_json_kind(v));
	*out = v ? v->valuestring : NULL;
	return 0;
}

/*
 * Rope: theta from rope_theta or (transformers 5) rope_parameters.rope_theta;
 * the type from rope_parameters, or the older rope_scaling, as rope_type or
 * the older type. "default" and "llama3" are what these families use.
 */
static int
read_rope(hf *b)
{
	hf_config *cf = &b->cfg;
	const char *name = "rope_parameters";
	const cJSON *rp = member(b->root, name);
	if (!rp)
		rp = member(b->root, name = "rope_scaling");
	if (rp && !cJSON_IsObject(rp))
		return cfg_fail(b, name, "must be an object (it is %s)", mkc_json_kind(rp));
	double top, inner;
	bool has_top = member(b->root, "rope_theta"), has_inner = member(rp, "rope_theta");
	if (get_num(b, b->root, NULL, "rope_theta", false, 10000.0, &top) ||   /* the families' default */
	    get_num(b, rp, name, "rope_theta", false, top, &inner))
		return -1;
	if (has_top && has_inner && top != inner)
		return cfg_fail(b, "rope_theta", "is %g but '%s.rope_theta' is %g", top, name, inner);
	cf->theta = inner;
	if (cf->theta <= 0)
		return cfg_fail(b, has_inner ? label(b, name, "rope_theta") : "rope_theta", "must be positive");
	const char *type = NULL, *key = "rope_type";
	if (get_str(b, rp, name, key, &type))
		return -1;
	if (!type && get_str(b, rp, name, key = "type", &type))
		return -1;
	if (!type || strcmp(type, "default") == 0)
		return 0;
	if (strcmp(type, "llama3") != 0)
		return cfg_fail(b, label(b, name, key),
				"is '%s'; mkc reads the rope types 'default' and 'llama3'", type);
	cf->llama3 = true;
	if (get_num(b, rp, name, "factor", true, 0, &cf->factor) ||
	    get_num(b, rp, name, "low_freq_factor", true, 0, &cf->low_freq) ||
	    get_num(b, rp, name, "high_freq_factor", true, 0, &cf->high_freq) ||
	    get_num(b, rp, name, "original_max_position_embeddings", true, 0, &cf->orig_max))
		return -1;
	if (cf->factor <= 0 || cf->low_freq <= 0 || cf->orig_max <= 0)
		return cfg_fail(b, name, "needs a positive factor, low_freq_factor and original_max_position_embeddings");
	if (cf->high_freq <= cf->low_freq)
		return cfg_fail(b, label(b, name, "high_freq_factor"), "must exceed low_freq_factor");
	return 0;
}

/* What the modeling code would compute differently from this file's graph. */
static int
check_unsupported(hf *b)
{
	const char *act;
	bool sliding;
	double partial;
	if (get_str(b, b->root, NULL, "hidden_act", &act) || get_bool(b, "use_sliding_window", false, &sliding) ||
	    get_num(b, b->root, NULL, "partial_rotary_factor", false, 1, &partial))
		return -1;
	if (act && strcmp(act, "silu") != 0)
		return cfg_fail(b, "hidden_act", "is '%s'; mkc reads 'silu'", act);
	if (sliding)
		return cfg_fail(b, "use_sliding_window", "is true; sliding-window attention is not supported");
	if (partial != 1)
		return cfg_fail(b, "partial_rotary_factor", "is %g; mkc reads 1 (rope over all of head_dim)", partial);
	const cJSON *lt = member(b->root, "layer_types");
	if (lt && !cJSON_IsArray(lt))
		return cfg_fail(b, "layer_types", "must be an array (it is %s)", mkc_json_kind(lt));
	for (const cJSON *e = lt ? lt->child : NULL; e; e = e->next)
		if (!cJSON_IsString(e) || strcmp(e->valuestring, "full_attention") != 0)
			return cfg_fail(b, "layer_types", "holds %s%s%s; mkc reads 'full_attention' layers only",
					cJSON_IsString(e) ? "'" : "",
					cJSON_IsString(e) ? e->valuestring : mkc_json_kind(e),
					cJSON_IsString(e) ? "'" : "");
	return 0;
}

static int
read_config(hf *b)
{
	hf_config *cf = &b->cfg;
	if (get_str(b, b->root, NULL, "model_type", &cf->model_type))
		return -1;
	if (!cf->model_type)
		return cfg_fail(b, "model_type", "is missing");
	bool llama = strcmp(cf->model_type, "llama") == 0;
	bool qwen2 = strcmp(cf->model_type, "qwen2") == 0;
	bool qwen3 = strcmp(cf->model_type, "qwen3") == 0;
	if (!llama && !qwen2 && !qwen3)
		return cfg_fail(b, "model_type", "is '%s'; mkc reads the families 'llama', 'qwen2' and 'qwen3'",
				cf->model_type);
	if (get_int(b, "hidden_size", -1, &cf->hidden) ||
	    get_int(b, "num_hidden_layers", -1, &cf->layers) ||
	    get_int(b, "num_attention_heads", -1, &cf->heads) ||
	    get_int(b, "intermediate_size", -1, &cf->inter) || get_int(b, "vocab_size", -1, &cf->vocab) ||
	    get_int(b, "num_key_value_heads", cf->heads, &cf->kv_heads))
		return -1;
	if (!member(b->root, "head_dim") && cf->hidden % cf->heads)
		return cfg_fail(b, "head_dim", "is missing, and hidden_size %lld does not divide by num_attention_heads %lld",
				(long long)cf->hidden, (long long)cf->heads);
	if (get_int(b, "head_dim", cf->hidden / cf->heads, &cf->head_dim))
		return -1;
	if (cf->heads % cf->kv_heads)
		return cfg_fail(b, "num_key_value_heads", "is %lld, which does not divide num_attention_heads %lld",
				(long long)cf->kv_heads, (long long)cf->heads);
	if (cf->head_dim % 2)
		return cfg_fail(b, "head_dim", "is %lld; rope needs an even head_dim", (long long)cf->head_dim);
	/* the defaults of LlamaConfig, Qwen2Config and Qwen3Config */
	bool attn_bias;
	if (get_num(b, b->root, NULL, "rms_norm_eps", false, 1e-6, &cf->eps) ||
	    get_bool(b, "tie_word_embeddings", false, &cf->tie) ||
	    get_bool(b, "attention_bias", false, &attn_bias) ||
	    get_bool(b, "mlp_bias", false, &cf->mlp_bias))
		return -1;
	if (cf->eps <= 0)
		return cfg_fail(b, "rms_norm_eps", "must be positive");
	/* Qwen2 always has q/k/v biases and none on o_proj; the others follow attention_bias */
	cf->qkv_bias = qwen2 || attn_bias;
	cf->o_bias = !qwen2 && attn_bias;
	cf->mlp_bias = llama && cf->mlp_bias;
	cf->qk_norm = qwen3;
	return check_unsupported(b) || read_rope(b);
}

/* ----------------------------------------------------------- weights */

/* A shard's name: a plain file in the folder, safe to write into C strings. */
static bool
plain_file_name(const char *s)
{
	if (!*s || *s == '.')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-+", *s))
			return false;
	return true;
}

/*
 * A weights file must lie inside the model's folder once links are
 * resolved: the emitted loader refuses one that does not (runtime/files.h),
 * so the compiler does too, and says it now rather than at load. A Hugging
 * Face hub cache links its snapshots' files to ../../blobs: such a folder
 * is to be copied with its files first.
 */
static mkc_st_file *
open_inside(hf *b, const char *path)
{
	char real_file[PATH_MAX], real_dir[PATH_MAX];
	if (realpath(path, real_file) && realpath(b->dir, real_dir)) {
		size_t n = strlen(real_dir);
		if (strncmp(real_file, real_dir, n) != 0 || real_file[n] != '/') {
			mkc_error(b->c, "%s: the file is a link out of the model's folder (to %s), which the "
				  "emitted loader refuses; copy the folder with its files (cp -rL) and "
				  "compile the copy", path, real_file);
			return NULL;
		}
	}
	return mkc_st_open(b->c, path);
}

/* model.safetensors.index.json: every shard its weight_map names is opened once. */
static int
open_shards(hf *b)
{
	mkc_ctx *c = b->c;
	const void *bytes;
	size_t size;
	if (mkc_file_read(c, b->index_path, &bytes, &size) != 0)
		return -1;
	cJSON *root = mkc_json_parse(c, b->index_path, bytes, size);
	if (!root)
		return -1;
	int rc = 0;
	const cJSON *wm = cJSON_IsObject(root) ? member(root, "weight_map") : NULL;
	if (!cJSON_IsObject(wm))
		rc = mkc_error(c, "%s: field 'weight_map' %s", b->index_path,
			       wm ? "must be an object" : "is missing");
	mkc_map files = {0};
	for (const cJSON *e = rc ? NULL : wm->child; e && rc == 0; e = e->next) {
		if (!cJSON_IsString(e) || !plain_file_name(e->valuestring)) {
			rc = mkc_error(c, "%s: field 'weight_map.%s' must name a file in the model's folder (letters, digits, '._-+')",
				       b->index_path, e->string);
			break;
		}
		mkc_st_file *f = mkc_map_get(&files, e->valuestring);
		if (!f) {
			const char *path = mkc_arena_printf(c->arena, "%s/%s", b->dir, e->valuestring);
			if (!(f = open_inside(b, path))) {
				rc = -1;
				break;
			}
			mkc_map_put(c->arena, &files, mkc_arena_strdup(c->arena, e->valuestring), f);
		}
		mkc_map_put(c->arena, &b->shard_of, mkc_arena_strdup(c->arena, e->string), f);
		b->nmapped++;
	}
	cJSON_Delete(root);
	return rc;
}

static int
open_weights(hf *b)
{
	struct stat st;
	b->index_path = mkc_arena_printf(b->c->arena, "%s/model.safetensors.index.json", b->dir);
	if (stat(b->index_path, &st) == 0)
		return open_shards(b);
	b->index_path = NULL;
	const char *path = mkc_arena_printf(b->c->arena, "%s/model.safetensors", b->dir);
	if (stat(path, &st) != 0)
		return mkc_error(b->c, "%s: holds neither model.safetensors nor model.safetensors.index.json",
				 b->dir);
	return (b->single = open_inside(b, path)) ? 0 : -1;
}

static char *
shape_str(char *buf, size_t n, int rank, const int64_t *shape)
{
	size_t k = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < rank && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

/* The stored tensor called name, with the file that holds it; NULL after an error. */
static const mkc_st_tensor *
find_weight(hf *b, const char *name, const mkc_st_file **file)
{
	const char *why = mkc_arena_printf(b->c->arena, "a %s with this config.json has one",
					   b->cfg.model_type);
	if (b->index_path) {
		*file = mkc_map_get(&b->shard_of, name);
		if (!*file) {
			mkc_error(b->c, "%s: field 'weight_map' has no tensor '%s' (%s)", b->index_path, name, why);
			return NULL;
		}
	} else {
		*file = b->single;
	}
	const mkc_st_tensor *t = mkc_st_find(*file, name);
	if (!t)
		mkc_error(b->c, "%s: tensor '%s' is missing (%s)", (*file)->path, name, why);
	return t;
}

/* A bf16 tensor widened at compile time, for a reader that takes float32 only. */
static void
widen_bf16(hf *b, mkc_tensor *t, const mkc_st_tensor *st)
{
	size_t n = st->nbytes / 2;
	float *w = mkc_arena_alloc(b->c->arena, n * sizeof *w + 1);
	for (size_t i = 0; i < n; i++) {
		uint16_t h;
		memcpy(&h, (const unsigned char *)st->data + 2 * i, 2);
		w[i] = mkc_bf16_to_float(h);
	}
	t->data = w;
	t->nbytes = n * sizeof *w;
	t->initializer = false;   /* no file holds these bytes: embedded */
}

/* The stored tensor called name if it has the shape the config implies; NULL after an error. */
static const mkc_st_tensor *
stored_weight(hf *b, const char *name, int rank, const int64_t *shape, const mkc_st_file **file)
{
	const mkc_st_tensor *st = find_weight(b, name, file);
	if (!st)
		return NULL;
	bool same = st->rank == rank;
	for (int i = 0; same && i < rank; i++)
		same = st->shape[i] == shape[i];
	char b1[160], b2[160];
	if (!same) {
		mkc_error(b->c, "%s: tensor '%s' has shape %s, but config.json implies %s", (*file)->path,
			  name, shape_str(b1, sizeof b1, st->rank, st->shape),
			  shape_str(b2, sizeof b2, rank, shape));
		return NULL;
	}
	if (st->dt != MKC_DT_FLOAT && st->dt != MKC_DT_BFLOAT16) {
		mkc_error(b->c, "%s: tensor '%s' is %s; mkc reads F32 and BF16 weights%s", (*file)->path,
			  name, st->dtype, st->dt == MKC_DT_FLOAT16 ? " (F16 not yet)" : "");
		return NULL;
	}
	return st;
}

/*
 * The sizes of config.json bounded by the weights that back them, before
 * anything is built from them: a config claiming 10^9 layers or a vast
 * head_dim must fail on its weights, not allocate for them first. Each
 * layer stores at least 9 tensors; the embedding fixes vocab_size and
 * hidden_size, the last layer's q_proj the head sizes.
 */
static int
check_sizes(hf *b)
{
	const hf_config *cf = &b->cfg;
	int64_t stored = b->single ? b->single->ntensors : b->nmapped;
	if (cf->layers > stored / 9)
		return cfg_fail(b, "num_hidden_layers", "is %lld, but the weights hold only %lld tensors "
				"(a layer has at least 9)", (long long)cf->layers, (long long)stored);
	const mkc_st_file *file;
	const int64_t table[2] = {cf->vocab, cf->hidden};
	const int64_t q[2] = {cf->heads * cf->head_dim, cf->hidden};
	const char *last = mkc_arena_printf(b->c->arena, "model.layers.%lld.self_attn.q_proj.weight",
					    (long long)cf->layers - 1);
	return stored_weight(b, "model.embed_tokens.weight", 2, table, &file) &&
			       stored_weight(b, last, 2, q, &file)
		       ? 0
		       : -1;
}

/*
 * The weight called name, checked against the shape the config implies.
 * F32 and BF16 weights point at their file's bytes; f32_only readers (a
 * Gemm's bias) get bf16 weights widened at compile time.
 */
static mkc_tensor *
weight(hf *b, const char *name, int rank, const int64_t *shape, bool f32_only)
{
	mkc_tensor *t = mkc_graph_find(b->g, name);
	if (t || b->failed)
		return t;   /* one error is enough */
	b->failed = true;
	const mkc_st_file *file;
	const mkc_st_tensor *st = stored_weight(b, name, rank, shape, &file);
	if (!st)
		return NULL;
	b->failed = false;
	t = mkc_graph_tensor(b->g, name);
	t->kind = MKC_TK_WEIGHT;
	t->dtype = MKC_DT_FLOAT;
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		t->shape[i] = mkc_dim_const(shape[i]);
	if (st->dt == MKC_DT_BFLOAT16 && f32_only) {
		widen_bf16(b, t, st);
		return t;
	}
	t->initializer = true;
	t->data = st->data;
	t->nbytes = st->nbytes;
	t->ext_file = file->path;
	t->ext_offset = st->offset;
	if (st->dt == MKC_DT_BFLOAT16)
		t->storage = t->file_dtype = MKC_DT_BFLOAT16;
	size_t esize = st->dt == MKC_DT_BFLOAT16 ? 2 : 4;
	if ((uintptr_t)t->data % esize) {
		/* a writer that did not align its data: an aligned copy for the
		 * compiler; the emitted code still reads the file */
		void *copy = mkc_arena_alloc(b->c->arena, st->nbytes + 1);
		memcpy(copy, st->data, st->nbytes);
		t->data = copy;
	}
	return t;
}

/* ------------------------------------------------------------- graph */

static mkc_node *
add_node(hf *b, const char *name, const char *op, int nin, int nout, int nattr)
{
	return mkc_graph_add_node(b->g, name, "", op, nin, nout, nattr);
}

/* Output i of n, a new intermediate tensor called name. */
static mkc_tensor *
set_output(hf *b, mkc_node *n, int i, const char *name)
{
	mkc_tensor *t = mkc_graph_tensor(b->g, name);
	t->producer = n;
	n->out[i] = t;
	return t;
}

static void
attr_int(mkc_node *n, int i, const char *name, int64_t v)
{
	n->attr[i] = (mkc_attr){.name = name, .type = MKC_AT_INT, .i = v};
}

static void
attr_float(mkc_node *n, int i, const char *name, float v)
{
	n->attr[i] = (mkc_attr){.name = name, .type = MKC_AT_FLOAT, .f = v};
}

/*
 * A node of one output, named as the node, reading nin of x0, x1, x2; NULL
 * where an input is missing (its error is already out).
 */
static mkc_tensor *
op(hf *b, const char *name, const char *op_type, int nin, int nattr, mkc_tensor *x0,
   mkc_tensor *x1, mkc_tensor *x2)
{
	mkc_tensor *x[3] = {x0, x1, x2};
	for (int i = 0; i < nin; i++)
		if (!x[i])
			return NULL;
	mkc_node *n = add_node(b, name, op_type, nin, 1, nattr);
	for (int i = 0; i < nin; i++)
		n->in[i] = x[i];
	return set_output(b, n, 0, name);
}

/* A compile-time value, embedded in the emitted file. */
static mkc_tensor *
constant(hf *b, const char *name, mkc_dtype dt, int rank, const int64_t *shape, const void *data)
{
	mkc_tensor *t = mkc_graph_tensor(b->g, name);
	t->kind = MKC_TK_WEIGHT;
	t->dtype = dt;
	t->rank = rank;
	size_t n = mkc_dtype_size(dt);
	for (int i = 0; i < rank; i++) {
		t->shape[i] = mkc_dim_const(shape[i]);
		n *= (size_t)shape[i];
	}
	void *copy = mkc_arena_alloc(b->c->arena, n + 1);
	memcpy(copy, data, n);
	t->data = copy;
	t->nbytes = n;
	return t;
}

static mkc_tensor *
reshape(hf *b, const char *name, mkc_tensor *x, int rank, const int64_t *dims)
{
	char key[160];
	shape_str(key, sizeof key, rank, dims);
	mkc_tensor *s = mkc_map_get(&b->shapes, key);
	if (!s) {
		const int64_t len = rank;
		s = constant(b, mkc_arena_printf(b->c->arena, "shape%s", key), MKC_DT_INT64, 1, &len, dims);
		mkc_map_put(b->c->arena, &b->shapes, mkc_arena_strdup(b->c->arena, key), s);
	}
	return op(b, name, "Reshape", 2, 0, x, s, NULL);
}

static mkc_tensor *
rms_norm(hf *b, const char *name, mkc_tensor *x, int64_t len)
{
	mkc_tensor *w = weight(b, mkc_arena_printf(b->c->arena, "%s.weight", name), 1, &len, false);
	mkc_tensor *y = op(b, name, "RMSNormalization", 2, 2, x, w, NULL);
	if (y) {
		attr_int(y->producer, 0, "axis", -1);
		attr_float(y->producer, 1, "epsilon", (float)b->cfg.eps);
	}
	return y;
}

/* A Linear layer: y = x W^T (+ bias), W stored [out, in]. */
static mkc_tensor *
linear(hf *b, const char *name, mkc_tensor *x, int64_t in, int64_t out, bool bias)
{
	mkc_arena *a = b->c->arena;
	const int64_t shape[2] = {out, in};
	mkc_tensor *w = weight(b, mkc_arena_printf(a, "%s.weight", name), 2, shape, false);
	mkc_tensor *c = bias ? weight(b, mkc_arena_printf(a, "%s.bias", name), 1, &out, true) : NULL;
	if (bias && !c)
		return NULL;
	mkc_tensor *y = op(b, name, "Gemm", c ? 3 : 2, 1, x, w, c);
	if (y)
		attr_int(y->producer, 0, "transB", 1);
	return y;
}

/*
 * inv_freq as the modeling code computes it (modeling_rope_utils.py), in
 * double and rounded once: 1 / theta^(2i / head_dim), and for llama3 the
 * wavelengths beyond original_max / low_freq_factor slowed by factor, those
 * below original_max / high_freq_factor kept, and those between blended.
 */
static void
inv_freq(const hf_config *cf, float *out)
{
	int64_t half = cf->head_dim / 2;
	for (int64_t i = 0; i < half; i++) {
		double f = 1.0 / pow(cf->theta, (double)(2 * i) / (double)cf->head_dim);
		if (cf->llama3) {
			double wavelen = 2 * M_PI / f;
			if (wavelen > cf->orig_max / cf->low_freq) {
				f /= cf->factor;
			} else if (wavelen >= cf->orig_max / cf->high_freq) {
				double s = (cf->orig_max / wavelen - cf->low_freq) /
					   (cf->high_freq - cf->low_freq);
				f = (1 - s) * f / cf->factor + s * f;
			}
		}
		out[i] = (float)f;
	}
}

/* Transpose(x) of a rank-4 x, swapping axes 1 and 2. */
static mkc_tensor *
swap12(hf *b, const char *name, mkc_tensor *x)
{
	mkc_tensor *y = op(b, name, "Transpose", 1, 1, x, NULL, NULL);
	if (y) {
		static int64_t perm[4] = {0, 2, 1, 3};
		y->producer->attr[0] = (mkc_attr){.name = "perm", .type = MKC_AT_INTS, .ints = perm, .n = 4};
	}
	return y;
}

/* cos and sin [1, S, head_dim / 2] of the positions, shared by every layer. */
static void
rotary(hf *b, mkc_tensor *position_ids)
{
	int64_t half = b->cfg.head_dim / 2;
	float *f = mkc_arena_alloc(b->c->arena, (size_t)half * sizeof *f);
	inv_freq(&b->cfg, f);
	const int64_t shape[3] = {1, 1, half};
	mkc_tensor *freq = constant(b, "model.rotary_emb.inv_freq", MKC_DT_FLOAT, 3, shape, f);
	mkc_tensor *pos = op(b, "model.rotary_emb.position", "Cast", 1, 1, position_ids, NULL, NULL);
	attr_int(pos->producer, 0, "to", MKC_DT_FLOAT);
	const int64_t column[3] = {1, -1, 1};
	pos = reshape(b, "model.rotary_emb.position.column", pos, 3, column);
	mkc_tensor *angle = op(b, "model.rotary_emb.angle", "Mul", 2, 0, pos, freq, NULL);
	b->cos = op(b, "model.rotary_emb.cos", "Cos", 1, 0, angle, NULL, NULL);
	b->sin = op(b, "model.rotary_emb.sin", "Sin", 1, 0, angle, NULL, NULL);
}

/* q or k of layer prefix A: projected, split into heads, (qwen3) normed, rotated. */
static mkc_tensor *
heads(hf *b, const char *attn, const char *which, mkc_tensor *x, int64_t nheads, bool rope)
{
	mkc_arena *a = b->c->arena;
	const hf_config *cf = &b->cfg;
	const char *proj = mkc_arena_printf(a, "%s.%s_proj", attn, which);
	mkc_tensor *y = linear(b, proj, x, cf->hidden, nheads * cf->head_dim, cf->qkv_bias);
	const int64_t dims[4] = {1, -1, nheads, cf->head_dim};
	y = reshape(b, mkc_arena_printf(a, "%s.split", proj), y, 4, dims);
	y = y ? swap12(b, mkc_arena_printf(a, "%s.heads", proj), y) : NULL;
	if (rope && cf->qk_norm)
		y = rms_norm(b, mkc_arena_printf(a, "%s.%s_norm", attn, which), y, cf->head_dim);
	if (rope)
		y = op(b, mkc_arena_printf(a, "%s.%s_rope", attn, which), "RotaryEmbedding", 3, 0, y,
			b->cos, b->sin);
	return y;
}

static mkc_tensor *
attention(hf *b, int layer, mkc_tensor *x)
{
	mkc_arena *a = b->c->arena;
	const hf_config *cf = &b->cfg;
	const char *attn = mkc_arena_printf(a, "model.layers.%d.self_attn", layer);
	mkc_tensor *q = heads(b, attn, "q", x, cf->heads, true);
	mkc_tensor *k = heads(b, attn, "k", x, cf->kv_heads, true);
	mkc_tensor *v = heads(b, attn, "v", x, cf->kv_heads, false);
	if (!q || !k || !v)
		return NULL;
	const char *name = mkc_arena_printf(a, "%s.attn", attn);
	mkc_node *n = add_node(b, name, "Attention", 6, 3, 2);
	n->in[0] = q;
	n->in[1] = k;
	n->in[2] = v;
	n->in[4] = mkc_graph_find(b->g, mkc_arena_printf(a, "past_key_values.%d.key", layer));
	n->in[5] = mkc_graph_find(b->g, mkc_arena_printf(a, "past_key_values.%d.value", layer));
	attr_float(n, 0, "scale", (float)(1.0 / sqrt((double)cf->head_dim)));
	attr_int(n, 1, "is_causal", 1);
	mkc_tensor *y = set_output(b, n, 0, name);
	for (int i = 1; i <= 2; i++) {
		mkc_tensor *t = mkc_graph_find(b->g, mkc_arena_printf(a, "present.%d.%s", layer,
								      i == 1 ? "key" : "value"));
		t->producer = n;
		n->out[i] = t;
	}
	const int64_t flat[2] = {-1, cf->heads * cf->head_dim};
	y = swap12(b, mkc_arena_printf(a, "%s.positions", name), y);
	y = y ? reshape(b, mkc_arena_printf(a, "%s.flat", name), y, 2, flat) : NULL;
	return linear(b, mkc_arena_printf(a, "%s.o_proj", attn), y, cf->heads * cf->head_dim,
		      cf->hidden, cf->o_bias);
}

static mkc_tensor *
mlp(hf *b, int layer, mkc_tensor *x)
{
	mkc_arena *a = b->c->arena;
	const hf_config *cf = &b->cfg;
	const char *m = mkc_arena_printf(a, "model.layers.%d.mlp", layer);
	mkc_tensor *gate = linear(b, mkc_arena_printf(a, "%s.gate_proj", m), x, cf->hidden, cf->inter,
				  cf->mlp_bias);
	mkc_tensor *up = linear(b, mkc_arena_printf(a, "%s.up_proj", m), x, cf->hidden, cf->inter,
				cf->mlp_bias);
	mkc_tensor *sig = op(b, mkc_arena_printf(a, "%s.act_fn.sigmoid", m), "Sigmoid", 1, 0, gate, NULL, NULL);
	mkc_tensor *act = op(b, mkc_arena_printf(a, "%s.act_fn", m), "Mul", 2, 0, gate, sig, NULL);
	mkc_tensor *y = op(b, mkc_arena_printf(a, "%s.gated", m), "Mul", 2, 0, act, up, NULL);
	return linear(b, mkc_arena_printf(a, "%s.down_proj", m), y, cf->inter, cf->hidden, cf->mlp_bias);
}

static mkc_tensor *
decoder_layer(hf *b, int layer, mkc_tensor *h)
{
	mkc_arena *a = b->c->arena;
	const char *p = mkc_arena_printf(a, "model.layers.%d", layer);
	mkc_tensor *x = rms_norm(b, mkc_arena_printf(a, "%s.input_layernorm", p), h, b->cfg.hidden);
	mkc_tensor *y = x ? attention(b, layer, x) : NULL;
	h = op(b, mkc_arena_printf(a, "%s.attn_residual", p), "Add", 2, 0, h, y, NULL);
	x = rms_norm(b, mkc_arena_printf(a, "%s.post_attention_layernorm", p), h, b->cfg.hidden);
	y = x ? mlp(b, layer, x) : NULL;
	return op(b, mkc_arena_printf(a, "%s.mlp_residual", p), "Add", 2, 0, h, y, NULL);
}

/* A graph input or output with the exports' name, type and shape. */
static mkc_tensor *
io(hf *b, const char *name, mkc_tensor_kind kind, mkc_dtype dt, int rank, const char *const *dims)
{
	mkc_tensor *t = mkc_graph_tensor(b->g, name);
	t->kind = kind;
	t->dtype = dt;
	t->rank = rank;
	for (int i = 0; i < rank; i++) {
		bool ok = mkc_dim_parse(b->g, dims[i], true, &t->shape[i]);
		MKC_ASSERT(ok);
	}
	mkc_vec_push(b->c->arena, kind == MKC_TK_INPUT ? &b->g->inputs : &b->g->outputs, t);
	return t;
}

/* h[S - 1 : S], the last position's row: only its logits are given. */
static mkc_tensor *
last_row(hf *b, mkc_tensor *h)
{
	static const int64_t start = -1, end = INT64_MAX, axis = 0, one = 1;
	mkc_tensor *s = constant(b, "model.last.start", MKC_DT_INT64, 1, &one, &start);
	mkc_tensor *e = constant(b, "model.last.end", MKC_DT_INT64, 1, &one, &end);
	mkc_tensor *x = constant(b, "model.last.axis", MKC_DT_INT64, 1, &one, &axis);
	mkc_node *n = add_node(b, "model.last", "Slice", 4, 1, 0);
	n->in[0] = h;
	n->in[1] = s;
	n->in[2] = e;
	n->in[3] = x;
	return set_output(b, n, 0, "model.last");
}

static int
build(hf *b)
{
	mkc_arena *a = b->c->arena;
	const hf_config *cf = &b->cfg;
	const char *kv = mkc_arena_printf(a, "%lld", (long long)cf->kv_heads);
	const char *hd = mkc_arena_printf(a, "%lld", (long long)cf->head_dim);
	const char *voc = mkc_arena_printf(a, "%lld", (long long)cf->vocab);
	const char *step[2] = {"1", "seq_len"};
	mkc_tensor *ids = io(b, "input_ids", MKC_TK_INPUT, MKC_DT_INT64, 2, step);
	mkc_tensor *pos = io(b, "position_ids", MKC_TK_INPUT, MKC_DT_INT64, 2, step);
	const char *past[4] = {"1", kv, "past_len", hd};
	const char *present[4] = {"1", kv, "past_len + seq_len", hd};
	for (int i = 0; i < cf->layers; i++) {
		io(b, mkc_arena_printf(a, "past_key_values.%d.key", i), MKC_TK_INPUT, MKC_DT_FLOAT, 4, past);
		io(b, mkc_arena_printf(a, "past_key_values.%d.value", i), MKC_TK_INPUT, MKC_DT_FLOAT, 4, past);
	}
	const char *logits_dims[3] = {"1", b->all_logits ? "seq_len" : "1", voc};
	mkc_tensor *logits = io(b, "logits", MKC_TK_OUTPUT, MKC_DT_FLOAT, 3, logits_dims);
	for (int i = 0; i < cf->layers; i++) {
		io(b, mkc_arena_printf(a, "present.%d.key", i), MKC_TK_OUTPUT, MKC_DT_FLOAT, 4, present);
		io(b, mkc_arena_printf(a, "present.%d.value", i), MKC_TK_OUTPUT, MKC_DT_FLOAT, 4, present);
	}

	const int64_t table[2] = {cf->vocab, cf->hidden}, row[2] = {-1, cf->hidden};
	mkc_tensor *embed = weight(b, "model.embed_tokens.weight", 2, table, false);
	mkc_tensor *h = op(b, "model.embed_tokens", "Gather", 2, 0, embed, ids, NULL);
	h = h ? reshape(b, "model.embed_tokens.flat", h, 2, row) : NULL;
	rotary(b, pos);
	for (int i = 0; i < cf->layers && h; i++)
		h = decoder_layer(b, i, h);
	h = h && !b->all_logits ? last_row(b, h) : h;
	h = h ? rms_norm(b, "model.norm", h, cf->hidden) : NULL;
	mkc_tensor *y = !h ? NULL
		      : cf->tie ? op(b, "lm_head", "Gemm", 2, 1, h, embed, NULL)
				: linear(b, "lm_head", h, cf->hidden, cf->vocab, false);
	if (!y)
		return -1;
	attr_int(y->producer, 0, "transB", 1);
	/* the graph output exists already: a Reshape of our own writes it */
	mkc_node *n = add_node(b, "logits", "Reshape", 2, 1, 0);
	const int64_t shape[3] = {1, b->all_logits ? -1 : 1, cf->vocab}, len = 3;
	char key[96];
	n->in[0] = y;
	n->in[1] = constant(b, mkc_arena_printf(a, "shape%s", shape_str(key, sizeof key, 3, shape)),
			    MKC_DT_INT64, 1, &len, shape);
	n->out[0] = logits;
	logits->producer = n;
	return 0;
}

mkc_graph *
mkc_hf_load(mkc_ctx *c, const char *dir, bool all_logits)
{
	size_t len = strlen(dir);
	while (len > 1 && dir[len - 1] == '/')
		len--;   /* "model/" names the same folder as "model" */
	hf b = {.c = c, .dir = mkc_arena_strndup(c->arena, dir, len), .all_logits = all_logits};
	b.config_path = mkc_arena_printf(c->arena, "%s/config.json", b.dir);
	const void *bytes;
	size_t size;
	if (mkc_file_read(c, b.config_path, &bytes, &size) != 0)
		return NULL;
	cJSON *root = mkc_json_parse(c, b.config_path, bytes, size);
	if (!root)
		return NULL;
	b.root = root;
	int rc = 0;
	if (!cJSON_IsObject(root))
		rc = mkc_error(c, "%s: the JSON is %s, not an object", b.config_path, mkc_json_kind(root));
	rc = rc ? rc : read_config(&b);
	if (rc == 0) {
		mkc_graph *g = b.g = mkc_graph_create(c, b.config_path);
		const char *arch = NULL, *version = NULL;
		const cJSON *archs = member(root, "architectures");
		if (cJSON_IsArray(archs) && cJSON_IsString(archs->child))
			arch = archs->child->valuestring;
		rc = get_str(&b, root, NULL, "transformers_version", &version);
		g->name = mkc_arena_strdup(c->arena, arch ? arch : b.cfg.model_type);
		g->producer = mkc_arena_printf(c->arena, "transformers %s", version ? version : "(unknown)");
		g->nopsets = 1;
		g->opsets = mkc_arena_alloc(c->arena, sizeof *g->opsets);
		g->opsets[0] = (mkc_opset){"", 23};
		b.cfg.model_type = mkc_arena_strdup(c->arena, b.cfg.model_type);
		rc = rc || open_weights(&b) || check_sizes(&b) || build(&b) || mkc_graph_sort(g);
	}
	cJSON_Delete(root);
	if (rc)
		return NULL;
	mkc_progress(c, "%s: %s, %lld layers, %d nodes", b.dir, b.cfg.model_type,
		     (long long)b.cfg.layers, b.g->nodes.n);
	return b.g;
}

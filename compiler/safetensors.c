/*
 * safetensors.c - reads the header of a .safetensors file (see
 * safetensors.h). The format: an unsigned 64-bit little-endian length N,
 * N bytes of JSON (an object; writers pad it with spaces), then the data
 * section. Each JSON entry but "__metadata__" (a string map, skipped) names
 * a tensor: {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
 * offsets counted from the start of the data section.
 *
 * Everything a tensor's bytes depend on is checked here, so that the
 * frontend can point at them: the length against the file's size, the
 * dtype against the known ones, the shape (non-negative integers, rank 8 or
 * less), and the offsets (begin <= end <= size of the data section, and
 * end - begin == elements * element size). Each error names the file and
 * the tensor or field.
 */
#include "files.h"
#include "safetensors.h"

#include <math.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mkc reads safetensors as little-endian bytes; port the byte swaps first"
#endif

/* The dtypes of the format; mkc computes with few of them, but reads all. */
static const struct {
	const char *name;
	size_t size;
	mkc_dtype dt;
} st_dtypes[] = {
	{"F64", 8, MKC_DT_DOUBLE},   {"F32", 4, MKC_DT_FLOAT},   {"F16", 2, MKC_DT_FLOAT16},
	{"BF16", 2, MKC_DT_BFLOAT16}, {"I64", 8, MKC_DT_INT64},  {"I32", 4, MKC_DT_INT32},
	{"I16", 2, MKC_DT_INT16},    {"I8", 1, MKC_DT_INT8},     {"U64", 8, MKC_DT_UINT64},
	{"U32", 4, MKC_DT_UINT32},   {"U16", 2, MKC_DT_UINT16},  {"U8", 1, MKC_DT_UINT8},
	{"BOOL", 1, MKC_DT_BOOL},    {"F8_E4M3", 1, MKC_DT_UNDEF}, {"F8_E5M2", 1, MKC_DT_UNDEF},
};

/* JSON numbers are doubles: integers up to 2^53 are exact. */
#define EXACT_LIMIT 9007199254740992.0

static bool
get_count(const cJSON *v, uint64_t *out)
{
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > EXACT_LIMIT ||
	    v->valuedouble != floor(v->valuedouble))
		return false;
	*out = (uint64_t)v->valuedouble;
	return true;
}

typedef struct {
	mkc_ctx *c;
	const char *where;   /* "file: tensor 'w': ", for messages */
} st_reader;

static int
read_dtype(st_reader *r, const cJSON *e, mkc_st_tensor *t, size_t *esize)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "dtype");
	if (!v)
		return mkc_error_at(r->c, r->where, "field 'dtype' is missing");
	if (!cJSON_IsString(v))
		return mkc_error_at(r->c, r->where, "field 'dtype' must be a string (it is %s)", mkc_json_kind(v));
	for (size_t i = 0; i < sizeof st_dtypes / sizeof *st_dtypes; i++)
		if (strcmp(v->valuestring, st_dtypes[i].name) == 0) {
			t->dtype = st_dtypes[i].name;
			t->dt = st_dtypes[i].dt;
			*esize = st_dtypes[i].size;
			return 0;
		}
	return mkc_error_at(r->c, r->where, "field 'dtype' is '%s', not a safetensors dtype mkc knows", v->valuestring);
}

/* The shape; *numel gets the element count (bounded, so bytes cannot overflow). */
static int
read_shape(st_reader *r, const cJSON *e, mkc_st_tensor *t, uint64_t *numel)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "shape");
	if (!v)
		return mkc_error_at(r->c, r->where, "field 'shape' is missing");
	if (!cJSON_IsArray(v))
		return mkc_error_at(r->c, r->where, "field 'shape' must be an array (it is %s)", mkc_json_kind(v));
	int rank = cJSON_GetArraySize(v);
	if (rank > MKC_MAX_RANK)
		return mkc_error_at(r->c, r->where, "field 'shape' has rank %d; mkc's limit is %d", rank, MKC_MAX_RANK);
	t->rank = rank;
	*numel = 1;
	int i = 0;
	for (const cJSON *d = v->child; d; d = d->next, i++) {
		uint64_t x;
		if (!get_count(d, &x))
			return mkc_error_at(r->c, r->where, "field 'shape[%d]' is not a non-negative integer", i);
		if (x && *numel > (UINT64_C(1) << 53) / x)
			return mkc_error_at(r->c, r->where, "field 'shape' holds too many elements");
		*numel *= x;
		t->shape[i] = (int64_t)x;
	}
	return 0;
}

static int
read_offsets(st_reader *r, const cJSON *e, uint64_t *begin, uint64_t *end)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
	if (!v)
		return mkc_error_at(r->c, r->where, "field 'data_offsets' is missing");
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 ||
	    !get_count(v->child, begin) || !get_count(v->child->next, end))
		return mkc_error_at(r->c, r->where, "field 'data_offsets' must be two non-negative integers [begin, end]");
	return 0;
}

static int
read_entry(st_reader *r, const cJSON *e, mkc_st_tensor *t, const unsigned char *data,
	   uint64_t data_off, uint64_t data_size)
{
	if (!cJSON_IsObject(e))
		return mkc_error_at(r->c, r->where, "must be an object (it is %s)", mkc_json_kind(e));
	size_t esize = 0;
	uint64_t numel = 0, begin = 0, end = 0;
	if (read_dtype(r, e, t, &esize) || read_shape(r, e, t, &numel) ||
	    read_offsets(r, e, &begin, &end))
		return -1;
	if (begin > end || end > data_size)
		return mkc_error_at(r->c, r->where, "field 'data_offsets' [%llu, %llu] is not a range within the %llu bytes of the data section",
			       (unsigned long long)begin, (unsigned long long)end,
			       (unsigned long long)data_size);
	if (end - begin != numel * esize)
		return mkc_error_at(r->c, r->where, "field 'data_offsets' [%llu, %llu] holds %llu bytes, but %llu elements of %s need %llu",
			       (unsigned long long)begin, (unsigned long long)end,
			       (unsigned long long)(end - begin), (unsigned long long)numel, t->dtype,
			       (unsigned long long)(numel * esize));
	t->nbytes = (size_t)(end - begin);
	t->offset = data_off + begin;
	t->data = data + t->offset;
	return 0;
}

mkc_st_file *
mkc_st_open(mkc_ctx *c, const char *path)
{
	const void *bytes;
	size_t size;
	if (mkc_file_read(c, path, &bytes, &size) != 0)
		return NULL;
	if (size < 8) {
		mkc_error(c, "%s: not a safetensors file: %zu bytes, too short for the header length", path,
			  size);
		return NULL;
	}
	uint64_t n;
	memcpy(&n, bytes, 8);
	if (n > size - 8) {
		mkc_error(c, "%s: the header length %llu runs past the end of the file (%zu bytes)", path,
			  (unsigned long long)n, size);
		return NULL;
	}
	const char *where = mkc_arena_printf(c->arena, "%s: header", path);
	cJSON *root = mkc_json_parse(c, where, (const char *)bytes + 8, (size_t)n);
	if (!root)
		return NULL;
	mkc_st_file *f = mkc_arena_alloc(c->arena, sizeof *f);
	f->path = path;
	if (!cJSON_IsObject(root)) {
		mkc_error(c, "%s: the header is %s, not a JSON object", path, mkc_json_kind(root));
		cJSON_Delete(root);
		return NULL;
	}
	f->tensors = mkc_arena_alloc(c->arena, ((size_t)cJSON_GetArraySize(root) + 1) * sizeof *f->tensors);
	st_reader r = {c, NULL};
	int rc = 0;
	for (const cJSON *e = root->child; e && rc == 0; e = e->next) {
		if (strcmp(e->string, "__metadata__") == 0)
			continue;
		mkc_st_tensor *t = &f->tensors[f->ntensors];
		t->name = mkc_arena_strdup(c->arena, e->string);
		r.where = mkc_arena_printf(c->arena, "%s: tensor '%s': ", path, t->name);
		if (mkc_map_get(&f->by_name, t->name)) {
			rc = mkc_error_at(c, r.where, "is listed twice in the header");
			break;
		}
		rc = read_entry(&r, e, t, bytes, 8 + n, size - 8 - n);
		mkc_map_put(c->arena, &f->by_name, t->name, t);
		f->ntensors++;
	}
	cJSON_Delete(root);
	return rc == 0 ? f : NULL;
}

const mkc_st_tensor *
mkc_st_find(const mkc_st_file *f, const char *name)
{
	return mkc_map_get(&f->by_name, name);
}

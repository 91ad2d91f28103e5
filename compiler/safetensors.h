/*
 * safetensors.h - internal to the Hugging Face frontend (hf.c): a checked
 * view of one .safetensors file.
 *
 *   mkc_st_file *f = mkc_st_open(c, "dir/model.safetensors");
 *   if (!f) return NULL;                       // the error names the file
 *   const mkc_st_tensor *t = mkc_st_find(f, "model.norm.weight");
 *
 * The file is mapped, not read; tensors point into the mapping, which lives
 * as long as the context's arena.
 */
#ifndef MKC_SAFETENSORS_H
#define MKC_SAFETENSORS_H

#include "../ir/graph.h"

typedef struct {
	const char *name;
	const char *dtype;         /* as the file spells it: "F32", "BF16" */
	mkc_dtype dt;              /* MKC_DT_UNDEF where mkc has no such type (F8_*) */
	int rank;
	int64_t shape[MKC_MAX_RANK];
	const void *data;          /* in the mapping; not aligned beyond the file's layout */
	size_t nbytes;
	uint64_t offset;           /* of the first byte, from the start of the file */
} mkc_st_tensor;

typedef struct {
	const char *path;
	int ntensors;
	mkc_st_tensor *tensors;    /* in the header's order */
	mkc_map by_name;
} mkc_st_file;

/*
 * Maps path and checks its header: 8-byte little-endian length within the
 * file, then a JSON object whose every entry but __metadata__ is a tensor
 * with a known dtype, a shape, and data_offsets [begin, end] inside the data
 * section holding exactly the bytes that shape and dtype need. NULL after
 * one error naming the file and the tensor or field.
 */
mkc_st_file *mkc_st_open(mkc_ctx *c, const char *path);

const mkc_st_tensor *mkc_st_find(const mkc_st_file *f, const char *name);

#endif

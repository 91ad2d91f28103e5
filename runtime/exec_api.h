/*
 * exec_api.h - the interface between a target's exec (backends/<t>/exec.*)
 * and what every target shares: the host code (files.h, host.h,
 * profile.h) and the public API (api.h). Embedded right after the exec.
 *
 * Before the exec, the emitted file defines the sizes (MKC_NTENSORS,
 * MKC_NTASKS, ...), MKC_PROF_TARGET (the target's name), the tables (mkc_tensors[], mkc_task_wait[],
 * mkc_queue[], mkc_node_desc[], ...), MKC_PROFILE, MKC_CAN_GENERATE, and declares
 * mkc_run_task, mkc_task_bounds, mkc_run_node and mkc_fill_symvals (the
 * tile functions, written after the runtime).
 *
 * The exec defines:
 *   mkc_host          the host-side model object, with buf[MKC_NTENSORS]
 *                     (each tensor's buffer, in the memory the target
 *                     computes in), owned[MKC_NTENSORS] (mkc allocated it),
 *                     filled[MKC_NTENSORS] (a weight holds its values:
 *                     host.h keeps it),
 *                     sym[MKC_NSYMS + 1] (symbol values between steps),
 *                     err[] (the last error, a sentence), with
 *                     MKC_PROFILE, prof_count (steps recorded this call),
 *                     and with MKC_MAX_SEQS, pages (runtime/common.h's
 *                     mkc_rt_pages, which the tile functions' m reaches as
 *                     m->pages), pool and step_seqs (runtime/seqs.h's);
 *   MKC_FAIL_INDEX(m, node, bad)  what a tile function calls when a body
 *                     found an index from the caller out of range
 *                     (runtime/common.h's mkc_rt_check_index): the step
 *                     fails with mkc_rt_index_sentence, naming the node by
 *                     mkc_node_desc[node];
 *   the hooks below.
 * It may call what host.h defines after it (declaring it first):
 * mkc_seterr, mkc_numel, mkc_place_tensors, mkc_free_tensors,
 * mkc_begin_step, mkc_end_step, mkc_generate_check and mkc_next_position.
 *
 * The hooks are checked, not declared: each pointer below is initialised
 * from the exec's function, so a hook that is missing or whose type differs
 * is a compile error on every target. (A prototype would not do: in CUDA's
 * C++ a declaration with other parameter types is an overload, and mkc_host
 * is the exec's own type, so nothing can name it before the exec.)
 */

/* C only warns (GCC before 14) where C++ refuses: an error here too */
#ifndef __cplusplus
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wincompatible-pointer-types"
#endif

/* A model with every buffer allocated; 0 or -1. On failure *out is NULL
 * (out of memory) or holds the error in err; the caller destroys it. */
static int (*const mkc_hook_model_create)(mkc_host **out, int nthreads, unsigned shuffle_seed,
					   double timeout_s) MKC_UNUSED = mkc_model_create;

/* Frees m and every buffer it owns; m may be NULL or half created. */
static void (*const mkc_hook_model_destroy)(mkc_host *m) MKC_UNUSED = mkc_model_destroy;

/* One step on the caller's buffers (in the target's memory); dims as in
 * mkc_begin_step. 0 or -1 with err set. */
static int (*const mkc_hook_step)(mkc_host *m, const void *const *inputs, void *const *outputs,
				  const int64_t *dims) MKC_UNUSED = mkc_step;

/* Every later launch and copy on stream (the target's stream type; NULL:
 * its default). 0 or -1 with err set (a target without streams refuses
 * any other). */
static int (*const mkc_hook_set_stream)(mkc_host *m, void *stream) MKC_UNUSED = mkc_set_stream;

/* Up to n_new tokens after the prompt (host memory), greedy or drawn
 * (runtime/sample.h), all in the target; a stop token ends them. 0 or -1
 * with err set (also when !MKC_CAN_GENERATE). */
static int (*const mkc_hook_generate)(mkc_host *m, const mkc_rt_gen *g) MKC_UNUSED = mkc_generate;

/* rows rows of logits (the target's memory), row which[r] (host memory;
 * NULL: r), drawn each as s[r] says (runtime/sample.h; temperature 0: the
 * argmax) for the position pos[r]; the tokens into out (host memory). 0
 * or -1 with err set. */
static int (*const mkc_hook_sample_rows)(mkc_host *m, const void *logits, int64_t rows,
					 const mkc_rt_sampling *s, const int64_t *pos,
					 int64_t *out, const int64_t *which) MKC_UNUSED =
	mkc_sample_rows;

/* A buffer of n bytes (n > 0) in the memory the target computes in, into
 * *p; its contents are undefined. 0 or -1 with err set. */
static int (*const mkc_hook_alloc_buf)(mkc_host *m, size_t n, void **p) MKC_UNUSED = mkc_alloc_buf;

/* Copies n bytes of host memory into a buffer. 0 or -1 with err set. */
static int (*const mkc_hook_store)(mkc_host *m, void *dst, const void *src,
				   size_t n) MKC_UNUSED = mkc_store;

/* The same for a buffer the next launch reads: the copy may still be on
 * its way when this returns (it comes before the launch, in the stream's
 * order), so src must stay as it is until the step has finished. */
static int (*const mkc_hook_stage)(mkc_host *m, void *dst, const void *src,
				   size_t n) MKC_UNUSED = mkc_stage;

/* rows rows of width bytes, dpitch and spitch bytes apart; either side a
 * buffer or host memory. 0 or -1 with err set. */
static int (*const mkc_hook_copy_rows)(mkc_host *m, void *dst, size_t dpitch, const void *src,
				       size_t spitch, size_t width,
				       size_t rows) MKC_UNUSED = mkc_copy_rows;

/* Frees a buffer mkc allocated (owned[t]). */
static void (*const mkc_hook_free_buf)(void *p) MKC_UNUSED = mkc_free_buf;

#if MKC_PROFILE
/* Copies the timeline (MKC_PROF_WORDS words) into host memory. */
static int (*const mkc_hook_prof_fetch)(mkc_host *m, uint64_t *dst) MKC_UNUSED = mkc_prof_fetch;
#endif

#ifndef __cplusplus
#pragma GCC diagnostic pop
#endif

/* The fields of mkc_host that the shared code reads. */
static void MKC_UNUSED
mkc_hook_host_fields(mkc_host *m)
{
	(void)m->buf, (void)m->owned, (void)m->filled, (void)m->sym, (void)m->err;
#if MKC_PROFILE
	(void)m->prof_count;
#endif
#if MKC_MAX_SEQS
	(void)m->pages, (void)m->pool, (void)m->step_seqs;
#endif
}

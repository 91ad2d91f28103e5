/*
 * stub_plan.h - a small valid plan: what the emitter writes between the
 * public declarations and the runtime texts, by hand, so that test_runtime.c
 * can compile the runtime files without a model. The includer defines
 * MKC_STUB_FN and MKC_STUB_UPLOAD (the target's fn_qual and upload_tables),
 * MKC_STUB_PROFILE (0 or 1) and MKC_STUB_SEQS (the sequences, 0: one).
 *
 * The model: y = W x over a KV cache, decode-shaped so that every feature
 * of the runtime is present: one symbol (past_len), inputs input_ids and
 * position_ids and output logits (so it can generate), a cache the model
 * keeps, an embedded weight, an intermediate in the arena; two tasks on
 * two workers, ordered by one event.
 */
#define MKC_NSYMS 1
#define MKC_NTENSORS 6
#define MKC_NTASKS 2
#define MKC_NEVENTS 1
#define MKC_NWORKERS 2
#define MKC_NINPUTS 2
#define MKC_NOUTPUTS 1
#define MKC_ARENA_BYTES 64LL
#define MKC_NCACHES 1
#define MKC_NPLANS 1
/* MKC_STUB_SEQS sequences (0: one), the cache in pages of 4 positions */
#define MKC_MAX_SEQS MKC_STUB_SEQS
#define MKC_PAGE (MKC_STUB_SEQS ? 4LL : 0LL)
#define MKC_SEQ_PAGES (MKC_STUB_SEQS ? 16LL : 0LL)
#define MKC_NPAGES (MKC_STUB_SEQS ? 32LL : 0LL)

static const char *const mkc_sym_names[MKC_NSYMS + 1] = {"past_len", NULL};
static const int64_t mkc_sym_max[MKC_NSYMS + 1] = {63, 0};
static const unsigned char mkc_data_4[16] __attribute__((aligned(16))) = {0};

static const mkc_rt_tensor_info mkc_tensors[MKC_NTENSORS] = {
	{"input_ids", 7, 8, 2, 1, {{1, {0, 0}, {-1, -1}}, {1, {0, 0}, {-1, -1}}}, NULL, 7, NULL, 0, -1, -1, 0, 0, 0, 0, 0, 0},
	{"position_ids", 7, 8, 2, 1, {{1, {0, 0}, {-1, -1}}, {1, {0, 0}, {-1, -1}}}, NULL, 7, NULL, 0, -1, -1, 0, 0, 0, 0, 0, 0},
	{"logits", 1, 4, 3, 2, {{1, {0, 0}, {-1, -1}}, {1, {0, 0}, {-1, -1}}, {4, {0, 0}, {-1, -1}}}, NULL, 1, NULL, 0, -1, -1, 0, 0,
	 0, 0, 0, 0},
	{"present.0.key", 1, 4, 3, 5, {{1, {0, 0}, {-1, -1}}, {1, {1, 0}, {0, -1}}, {4, {0, 0}, {-1, -1}}}, NULL, 1, NULL, 0, -1, 1,
	 64, 0, 0, 0, 0, 0},
	{"W", 1, 4, 2, 3, {{2, {0, 0}, {-1, -1}}, {2, {0, 0}, {-1, -1}}}, mkc_data_4, 1, NULL, 0, -1, -1, 0, 0, 1, 0, 0, 0},
	{"h", 1, 4, 2, 0, {{1, {0, 0}, {-1, -1}}, {4, {0, 0}, {-1, -1}}}, NULL, 1, NULL, 0, 0, -1, 0, 0, 0, 0, 0, 0},
};

static const mkc_rt_cache mkc_caches[MKC_NCACHES + 1] MKC_UNUSED = {
	{3, "past_key_values.0.key", 0, {1, {0, 0}, {-1, -1}}},
	{-1, NULL, -1, {0, {0, 0}, {-1, -1}}},
};

static const int mkc_inputs[MKC_NINPUTS + 1] = {0, 1, -1};
static const int mkc_outputs[MKC_NOUTPUTS + 1] = {2, -1};

#define MKC_GEN_IDS 0
#define MKC_GEN_CHUNK_SYM -1
#define MKC_DYN_SMEM 0
#define MKC_PLAN_SMEM(plan) ((plan) == 0 ? 0 : MKC_DYN_SMEM)
#define MKC_GEN_POS 1
#define MKC_GEN_MASK -1
#define MKC_GEN_LOGITS 0
#define MKC_GEN_LOGITS_F16 0
#define MKC_GEN_VOCAB 4LL
#define MKC_CAN_GENERATE 1
#define MKC_STEP_PLAN(sym) 0
#define MKC_DECODE_PLAN 0

static const char *const mkc_task_name[MKC_NTASKS] MKC_UNUSED = {
	"gather (Gather) tile 0/1",
	"matmul (MatMul) tile 0/1",
};
static const char *const mkc_node_desc[3] MKC_UNUSED = {
	"node 'gather' (Gather)", "node 'matmul' (MatMul)", NULL,
};
/* the workers' tables: on a GPU target host data copied at creation into
 * device arrays of the same names (emit.c's table_open) */
#if MKC_STUB_UPLOAD
#define MKC_STUB_TABLE(type, name, size) \
	static __device__ type name[size]; \
	static const type name##_h[size] MKC_UNUSED
#define MKC_DEVICE_TABLES(X) \
	X(mkc_task_wait) X(mkc_task_sig_start) X(mkc_task_sig) X(mkc_event_threshold) \
	X(mkc_queue_start) X(mkc_queue) X(mkc_task_node) X(mkc_task_box_start) X(mkc_task_clamp)
/* the tables of dimensions, filled from their indexes (emit.c's put_dim_indexes) */
#define MKC_DEVICE_DIMS(X) X(mkc_task_box) X(mkc_task_ext)
#define MKC_STUB_DIMS(name, size) \
	static __device__ mkc_rt_dim name[size]; \
	static const int name##_ix[size] MKC_UNUSED
#define MKC_TASK_DIM(t, i) (&(t)[i])
#else
#define MKC_STUB_TABLE(type, name, size) static const type name[size] MKC_UNUSED
#define MKC_STUB_DIMS(name, size) static const int name##_ix[size] MKC_UNUSED
#define MKC_TASK_DIM(t, i) (&mkc_dim_set[t##_ix[i]])
#endif
MKC_STUB_TABLE(int, mkc_task_wait, MKC_NTASKS) = {-1, 0};
MKC_STUB_TABLE(int, mkc_task_sig_start, MKC_NTASKS + 1) = {0, 1, 1};
MKC_STUB_TABLE(int, mkc_task_sig, 2) = {0, -1};
MKC_STUB_TABLE(int, mkc_event_threshold, MKC_NEVENTS + 1) = {1, 0};
static const int mkc_event_prod_start[MKC_NEVENTS + 1] MKC_UNUSED = {0, 1};
static const int mkc_event_prod[2] MKC_UNUSED = {0, -1};
MKC_STUB_TABLE(int, mkc_queue_start, MKC_NPLANS * MKC_NWORKERS + 1) = {0, 1, 2};
static const int mkc_plan_task0[MKC_NPLANS + 1] MKC_UNUSED = {0, 2};
MKC_STUB_TABLE(int, mkc_queue, MKC_NTASKS) = {0, 1};

MKC_STUB_TABLE(int, mkc_task_node, MKC_NTASKS) = {0, 1};
MKC_STUB_TABLE(int, mkc_task_box_start, MKC_NTASKS + 1) = {0, 4, 10};
static const mkc_rt_dim mkc_dim_set[3] MKC_UNUSED = {
	{0, {0, 0}, {-1, -1}}, {1, {0, 0}, {-1, -1}}, {4, {0, 0}, {-1, -1}},
};
MKC_STUB_DIMS(mkc_task_box, 11) = {0, 1, 0, 2, 0, 1, 0, 1, 0, 2, 0};
MKC_STUB_TABLE(int, mkc_task_clamp, MKC_NTASKS) = {-1, -1};
MKC_STUB_DIMS(mkc_task_ext, 1) = {0};

#if MKC_STUB_PROFILE
#define MKC_PROFILE 1
#define MKC_PROFILE_STEPS 2
static const char *const mkc_prof_node_name[3] = {"gather", "matmul", NULL};
static const char *const mkc_prof_node_op[3] = {"Gather", "MatMul", NULL};
static const mkc_rt_prof_task mkc_prof_task[MKC_NTASKS + 1] = {
	{0, 0, 1, -1, 0}, {1, 0, 1, 0, 1}, {-1, 0, 0, -1, 2},
};
static const mkc_rt_prof_region mkc_prof_region[3] = {{5, 1, 0}, {2, 1, 4}, {-1, 0, 10}};
static const mkc_rt_dim mkc_prof_dim[11] = {
	{0, {0, 0}, {-1, -1}}, {1, {0, 0}, {-1, -1}}, {0, {0, 0}, {-1, -1}}, {4, {0, 0}, {-1, -1}},
	{0, {0, 0}, {-1, -1}}, {1, {0, 0}, {-1, -1}}, {0, {0, 0}, {-1, -1}}, {1, {0, 0}, {-1, -1}}, {0, {0, 0}, {-1, -1}}, {4, {0, 0}, {-1, -1}},
	{0, {0, 0}, {-1, -1}},
};
#endif

struct mkc_model;
MKC_STUB_FN void mkc_run_task(struct mkc_model *m, int task);
MKC_STUB_FN void mkc_task_bounds(const struct mkc_model *m, int task, int64_t *lo, int64_t *hi);
MKC_STUB_FN void mkc_run_node(struct mkc_model *m, int node, const int64_t *lo, const int64_t *hi);
MKC_STUB_FN void mkc_fill_symvals(struct mkc_model *m);

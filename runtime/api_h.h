#include <stdint.h>

/*
 * The compiled model. Every call returns 0 or -1; after -1,
 * $P_last_error says what went wrong in one sentence.
 *
 *   $P *m;
 *   $P_create(&m, NULL);                 // NULL: default options
 *   $P_load_weights(m, "model.onnx");    // or $P_bind() each weight
 *   $P_step(m, inputs, outputs, dims);   // once per step (a token, or a chunk)
 *   $P_destroy(m);
 *
 * inputs and outputs are dense row-major buffers in the order that
 * $P_input_name and $P_output_name give (device memory on a GPU
 * target); dims holds the value of each symbolic dimension
 * ($P_dim_name), at most $P_max_dim.
 *
 * KV cache: unless compiled with --kv-io, the model keeps each
 * past/present pair of the export as a cache of its own
 * ($P_num_caches) holding $P_cache_capacity positions. A step reads
 * the positions in use, appends the new ones in place and counts them; the
 * symbol that counted past positions (past_len) takes that count, so dims
 * may be NULL (or hold -1 there). A file compiled with mkc --max-chunk N
 * takes 1 to N new tokens a step: dims gives their count for the symbol
 * that names it (seq_len in a Hugging Face folder's graph), -1 for
 * past_len; the caches advance by it. $P_cache_reset starts a new sequence;
 * $P_cache_load / $P_cache_read copy a cache in or out (host or device
 * memory), dense in the shape of the past input with past_len = the count,
 * in the type the cache is kept in, $P_cache_dtype: float32 (1, ONNX's
 * numbering), or bfloat16 (16) when compiled with mkc --kv bf16.
 *
 * $P_generate decodes greedily: it feeds the n_prompt tokens one per step
 * (with --max-chunk, all but the last in steps of up to N) and then n_new
 * tokens, each the argmax of the logits before it, writing those n_new
 * tokens (host memory) to out_tokens; on a GPU target all one-token steps
 * run in one kernel launch. It needs inputs input_ids [1,1] (int64; [1,S]
 * with --max-chunk), optionally position_ids likewise (given the
 * positions) and attention_mask [1, past + new] (given ones: every
 * position attended), only cache-counted symbols and the chunk's, and an
 * output logits [1,1,vocab].
 *
 * $P_generate_with does the same, drawing each new token as sampling
 * says (temperature, then top-k, then top-p, as transformers orders them;
 * the draw is the Gumbel-max trick on a hash of the seed, the token's
 * position and its index, so the same seed and logits give the same tokens
 * on every target and whatever the prompt's chunking), and stops after a
 * stop token or max_new tokens; *n_out (unless NULL) gets the count
 * written. On a GPU target the draw runs on the device, in the same launch.
 *
 * Sequences: a file compiled with mkc --max-seqs N serves up to N
 * sequences, their caches in pages of $P_page_size positions from one
 * pool ($P_free_pages), taken as a sequence grows and given back when it
 * closes. $P_seq_open gives a free sequence's number (sequence 0 is open
 * from the start, and the calls above are its); $P_seq_fork opens one
 * holding the positions of another, their pages shared until one writes
 * (the last, partly filled page is copied then). $P_step_seqs runs one step
 * of n tokens: token r (row r of input_ids [1, n], and of position_ids,
 * which must be its sequence's next position) belongs to sequence seqs[r];
 * the tokens of one sequence come in order, and each attends over its own
 * sequence's positions up to itself. The outputs have a row per token
 * (logits [1, n, vocab]: a Hugging Face folder is built with every
 * position's logits). $P_seq_cache_load / _read copy one sequence's caches.
 *
 * $P_profile_write writes a per-task timeline of the last $P_step or
 * $P_generate (its last steps, as many as mkc --profile-steps kept) as
 * a Chrome trace-event JSON file (Perfetto, chrome://tracing): one track
 * per worker, a "wait" slice and a slice per task. Only a file compiled
 * with mkc --profile records one; otherwise it returns -1.
 */
#ifdef __cplusplus
extern "C" {   /* C linkage, also when the .cu file is compiled as C++ */
#endif

typedef struct $P $P;

typedef struct {
	int nthreads;           /* threads for the shuffled queue (0: one per worker;
	                           at most 4096); static queues always get one
	                           thread each */
	unsigned shuffle_seed;  /* nonzero: one shared queue in a random
	                           topological order (race testing) */
	double timeout_s;       /* watchdog per wait (0: 10 s; at most 86400) */
} $P_options;

int $P_create($P **m, const $P_options *opts);
int $P_load_weights($P *m, const char *onnx_path);
int $P_bind($P *m, const char *weight_name, void *data);
int $P_step($P *m, const void *const *inputs, void *const *outputs,
	const int64_t *dims);
int $P_generate($P *m, const int64_t *prompt, int n_prompt, int n_new,
	int64_t *out_tokens);

/* How $P_generate_with draws each new token; all zero (or NULL): greedy. */
typedef struct {
	float temperature;     /* 0: the argmax; > 0: softmax(logits / temperature) */
	int top_k;             /* > 0: only the top_k likeliest tokens (and ties
	                          with the last); 0: every token */
	float top_p;           /* in (0, 1): only the fewest likeliest tokens whose
	                          probability makes top_p (and ties with the last);
	                          0 or 1: every token */
	uint64_t seed;         /* the same seed and logits draw the same tokens */
	const int64_t *stop;   /* n_stop tokens (at most 1024) that end the answer, */
	int n_stop;            /* written as its last token */
} $P_sampling;

int $P_generate_with($P *m, const int64_t *prompt, int n_prompt, int max_new,
	const $P_sampling *sampling, int64_t *out_tokens, int *n_out);
/* A request of $P_generate_batch. */
typedef struct {
	const int64_t *prompt;
	int n_prompt;
	int max_new;
	$P_sampling sampling;   /* its stop tokens end this request */
	int64_t *out_tokens;    /* room for max_new tokens (host memory) */
	int n_out;              /* written by the call: the tokens it holds */
} $P_request;

/* Generates for n requests at once (a file compiled with --max-seqs): a
 * request is admitted, in order, once a sequence and the cache pages of its
 * whole life (prompt and tokens) are free; a step takes every running
 * request's next token and as much of the admitted prompts as it holds, a
 * sequence a request; each request's tokens are those $P_generate_with
 * gives it alone. on_token (NULL: none) hears each token as it is drawn,
 * on the calling thread. On a GPU target the whole loop is one launch (the
 * admissions, retirements and draws inside the kernel; the tokens heard
 * while it runs); on the C target it runs a step at a time. Every sequence
 * is closed first, and sequence 0 is open and empty after. */
int $P_generate_batch($P *m, $P_request *requests, int n,
	void (*on_token)(void *user, int request, int64_t token), void *user);
/* Row r of logits [rows, vocab] (a step's output: the target's memory)
 * drawn as sampling[r] says (its stop tokens unread) for the position
 * positions[r] takes: generate's own draw, on the device on a GPU target;
 * the tokens into tokens (host memory). */
int $P_sample($P *m, const void *logits, int64_t rows, const $P_sampling *sampling,
	const int64_t *positions, int64_t *tokens);
/* The stream every later call of m runs on (a GPU target: a cudaStream_t or
 * hipStream_t; NULL, the default stream, until set). A call still returns
 * when its work is done, and its work follows what the caller queued on the
 * stream before it (inputs a kernel of the caller's writes, say). The C
 * target takes NULL only. */
int $P_set_stream($P *m, void *stream);
int $P_profile_write($P *m, const char *path);
const char *$P_last_error(const $P *m);
void $P_destroy($P *m);

const char *$P_target(void);             /* "c", "cuda" or "hip": where buffers live */
int $P_num_inputs(void);
const char *$P_input_name(int i);
int $P_num_outputs(void);
const char *$P_output_name(int i);
int $P_input_dtype(int i);                /* ONNX's numbering: 1 float32, 7 int64, ... */
int $P_output_dtype(int i);
int $P_num_dims(void);
const char *$P_dim_name(int i);
int64_t $P_max_dim(int i);
int $P_step_dim(void);                    /* the dimension counting a step's tokens (-1: one a step) */
/* Shape of input or output i for the given dims (NULL: the compiled maxima):
 * writes shape[], returns the rank. */
int $P_input_shape(int i, const int64_t *dims, int64_t *shape);
int $P_output_shape(int i, const int64_t *dims, int64_t *shape);

int $P_num_caches(void);
const char *$P_cache_name(int i);        /* the present output it stands for */
const char *$P_cache_past_name(int i);   /* the past input it replaced */
int64_t $P_cache_capacity(void);          /* positions each holds (0: no cache) */
int64_t $P_cache_len(const $P *m);        /* positions in use */
int $P_cache_dtype(int i);                /* its elements' type: 1 float32, 16 bf16 (0: no cache i) */
int $P_cache_shape(int i, int64_t len, int64_t *shape);   /* dense at len positions: the rank (-1: no cache i) */
int $P_cache_reset($P *m);
int $P_cache_load($P *m, int i, const void *src, int64_t len);
int $P_cache_read($P *m, int i, void *dst);

/* Several sequences (a file compiled with mkc --max-seqs N; otherwise
 * these fail, saying so): see the comment at the top. */
int $P_max_seqs(void);                    /* N (0: one sequence, no pages) */
int64_t $P_page_size(void);               /* positions a cache page holds */
int64_t $P_free_pages(const $P *m);       /* pages the pool has free */
int $P_seq_open($P *m, int *seq);
int $P_seq_close($P *m, int seq);
int $P_seq_fork($P *m, int src, int *seq);
int64_t $P_seq_len(const $P *m, int seq); /* positions cached (-1: not open) */
int $P_step_seqs($P *m, const int *seqs, int64_t n, const void *const *inputs,
	void *const *outputs);
int $P_seq_cache_load($P *m, int seq, int i, const void *src, int64_t len);
int $P_seq_cache_read($P *m, int seq, int i, void *dst);

#ifdef __cplusplus
}
#endif

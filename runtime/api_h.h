#include <stdint.h>

/*
 * The compiled model. Every call returns 0 or -1; after -1,
 * $P_last_error says what went wrong in one sentence.
 *
 *   $P *m;
 *   $P_create(&m, NULL);                 // NULL: default options
 *   $P_load_weights(m, "model.onnx");    // or $P_bind() each weight
 *   $P_step(m, inputs, outputs, dims);   // once per decode step
 *   $P_destroy(m);
 *
 * inputs and outputs are dense row-major buffers in the order that
 * $P_input_name and $P_output_name give; dims holds the value of
 * each symbolic dimension ($P_dim_name), at most $P_max_dim.
 */
#ifdef __cplusplus
extern "C" {   /* C linkage, also when the .cu file is compiled as C++ */
#endif

typedef struct $P $P;

typedef struct {
	int nthreads;           /* threads for the shuffled queue (0: one per worker);
	                           static queues always get one thread each */
	unsigned shuffle_seed;  /* nonzero: one shared queue in a random
	                           topological order (race testing) */
	double timeout_s;       /* watchdog per wait (0: 10 s) */
} $P_options;

int $P_create($P **m, const $P_options *opts);
int $P_load_weights($P *m, const char *onnx_path);
int $P_bind($P *m, const char *weight_name, void *data);
int $P_step($P *m, const void *const *inputs, void *const *outputs,
	const int64_t *dims);
const char *$P_last_error(const $P *m);
void $P_destroy($P *m);

int $P_num_inputs(void);
const char *$P_input_name(int i);
int $P_num_outputs(void);
const char *$P_output_name(int i);
int $P_num_dims(void);
const char *$P_dim_name(int i);
int64_t $P_max_dim(int i);
/* Shape of input or output i for the given dims: writes shape[], returns the rank. */
int $P_input_shape(int i, const int64_t *dims, int64_t *shape);
int $P_output_shape(int i, const int64_t *dims, int64_t *shape);

#ifdef __cplusplus
}
#endif

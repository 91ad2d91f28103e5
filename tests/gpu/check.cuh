/*
 * check.cuh - a CUDA call that must succeed, on the host side of the
 * programs that run bodies alone (rt_stub.cuh's users, portable.cu): the
 * call, file and line, then exit 2.
 */
#define CHECK(x)                                                                         \
	do {                                                                             \
		cudaError_t e_ = (x);                                                    \
		if (e_ != cudaSuccess) {                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
			exit(2);                                                         \
		}                                                                        \
	} while (0)

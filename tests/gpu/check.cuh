/*
 * check.cuh - a CUDA call that must succeed, on the host side of the
 * programs that run bodies alone (rt_stub.cuh's users, portable.cu): the
 * call, file and line, then exit 2; and median_ms, the timer of those
 * that time a body (tests/gpu/mma.cu, bench/bodies.cu).
 */
#define CHECK(x)                                                                         \
	do {                                                                             \
		cudaError_t e_ = (x);                                                    \
		if (e_ != cudaSuccess) {                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
			exit(2);                                                         \
		}                                                                        \
	} while (0)

/* the median of 20 timed runs of launch(), after 2 untimed, in milliseconds */
template <typename F>
static float
median_ms(F launch)
{
	cudaEvent_t a, b;
	cudaEventCreate(&a), cudaEventCreate(&b);
	float ms[20];
	for (int r = -2; r < 20; r++) {
		cudaEventRecord(a);
		launch();
		cudaEventRecord(b);
		CHECK(cudaEventSynchronize(b));
		if (r >= 0)
			cudaEventElapsedTime(&ms[r], a, b);
	}
	for (int i = 0; i < 20; i++)
		for (int j = i + 1; j < 20; j++)
			if (ms[j] < ms[i]) {
				float t = ms[i];
				ms[i] = ms[j], ms[j] = t;
			}
	cudaEventDestroy(a), cudaEventDestroy(b);
	return ms[10];
}

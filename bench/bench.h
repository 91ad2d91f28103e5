/*
 * bench.h - what the timing programs beside bench/run.py share (mkc_bench.c,
 * mkc_ttft.c, mkc_batch.c): a monotonic clock, a sort order for medians
 * and the n-th number of a comma-separated list.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The n-th number of a comma-separated list, or -1. */
static long long __attribute__((unused))
nth(const char *list, int n)
{
	for (; n > 0 && list; n--)
		if ((list = strchr(list, ',')))
			list++;
	return list && *list ? atoll(list) : -1;
}

/*
 * target_c.c - the C target: the persistent workers are POSIX threads
 * (exec.h), so emitted code runs, and is tested for races, on any CPU.
 */
#include "../core/emit.h"

const mkc_target mkc_target_c = {
	.name = "c",
	.ext = "c",
	/* XSI for realpath (runtime/files.h keeps weight files inside the model's folder) */
	.headers = "#define _XOPEN_SOURCE 700\n" MKC_STD_HEADERS
		   "#include <pthread.h>\n#include <sched.h>\n#include <stdatomic.h>\n#include <time.h>\n",
	.exec = (const char *const[]){"backends/c/exec.h", NULL},
	.bodies = (const char *const[]){MKC_PORTABLE_BODIES, NULL},
	.api = "runtime/api.h",
	.fn_qual = "static",
	.node_qual = "",
	.half_types = false,
	.warp = 0,
	.test_build = "${CC:-cc} -std=c11 -O1 -g -Wall -Wextra -Werror -pthread $F -o $W/run "
		      "$W/model.c $W/main.c -lm",
	.test_buffers = "#define DEV_ALLOC(n) malloc(n)\n"
			"#define TO_DEV(d, h, n) memcpy(d, h, n)\n"
			"#define TO_HOST(h, d, n) memcpy(h, d, n)\n"
			"#define POISON(d, n) memset(d, 0xff, n)\n"
			"#define DEV_FREE(d) free(d)\n",
	.host_workers = true,
};

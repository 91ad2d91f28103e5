/*
 * test_names.c - the API prefix (--name) against the names of the headers
 * an emitted C file includes: the C library's names and main are refused,
 * and reserved_names.h (backends/core/gen_reserved.py) is complete and true
 * for the C target's headers on this machine (tests/reserved_check.h;
 * tests/toolchains/test_names.c checks CUDA's and HIP's).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../reserved_check.h"

/*
 * Names of the C library and its macros, one a name the prefix makes
 * (timer: timer_create) and main: each was taken, and the emitted file
 * then did not compile (main: the program including the header did not).
 */
Test(names, c_library_names_and_main_are_refused)
{
	const char *bad[] = {"powf", "expf", "fmaxf", "SIZE_MAX", "tm", "timer", "main", "FILE",
			     "printf", "EOF", "errno", "INFINITY", "clockid_t", "timespec"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		mkc_result *r = mkc_run("tests/models/hand/small_mlp", "-o", "/tmp/mkc_names_x.c",
					"--name", bad[i], NULL);
		cr_expect_eq(r->status, 2, "--name %s: %s", bad[i], r->err);
		cr_expect(strstr(r->err, "--name '") && strstr(r->err, bad[i]), "%s", r->err);
	}
	cr_expect(strstr(mkc_run("tests/models/hand/small_mlp", "--name", "main", NULL)->err,
			 "entry point"));
}

/*
 * A name the headers use only as a function-like macro, or not at all,
 * stays free, and its file compiles: assert (a macro the prefix never
 * calls), sem.
 */
Test(names, free_names_compile, .timeout = 120)
{
	const char *good[] = {"assert", "sem", "llama"};
	char cmd[512], out[8192];
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		snprintf(cmd, sizeof cmd, "d=$(mktemp -d) && %s tests/models/hand/small_mlp -o $d/m.c "
			 "--name %s && cc -std=c11 -O1 -Wall -Wextra -Werror -c -o $d/m.o $d/m.c; "
			 "rc=$?; rm -rf $d; exit $rc", mkc_bin(), good[i]);
		cr_expect_eq(mkc_shell(cmd, out, sizeof out), 0, "--name %s: %s", good[i], out);
	}
}

/* reserved_names.h against this machine's C headers, with cc. */
Test(names, reserved_list_is_complete_and_true_for_the_c_target, .timeout = 120)
{
	const rc_tools cc = {"c", "c", 1, "cc -std=c11 -E -P %s", "cc -std=c11 -E -dM %s",
			     "cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -fmax-errors=0 %s"};
	rc_check_in_scratch(&cc);
}

/*
 * test_mutants.c - a test of the tests: the emitted C of a golden model,
 * broken on purpose in one place (`mkc test --edit`, a perl substitution
 * applied after emission), must FAIL `mkc test`, every one. The edit itself
 * must match (mkc test refuses an edit that leaves the file unchanged, with
 * a line naming --edit), so a mutant that no longer applies after a change
 * to the emitter fails here instead of passing quietly.
 *
 * The mutants are the bugs the fast tile bodies could bring: a skipped
 * write, an off-by-one loop bound, a truncating bf16 conversion, a cache
 * append lost after the first step, a missing event signal.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../mkc_run.h"

#define OP23 "tests/models/tiny_llama_decode_op23"

static char out[1 << 16];

/*
 * Runs `mkc test --edit 'perl -0pi -e SUBST' ARGS` and requires a FAIL that
 * the edit did not cause.
 */
static void
must_fail(const char *subst, const char *args)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "%s test --edit \"perl -0pi -e '%s'\" %s", mkc_bin(), subst, args);
	int rc = mkc_shell(cmd, out, sizeof out);
	cr_assert(strstr(out, "edited the emitted file"), "the edit did not run: %s", out);
	cr_assert_null(strstr(out, "--edit:"), "the edit did not apply: %s", out);
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "0 passed, 1 failed"), "the broken code passed: %s", out);
}

/* The control: an edit that changes nothing the code does passes. */
Test(mutants, a_harmless_edit_passes, .timeout = 300)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s test --edit \"perl -0pi -e 's/^/\\/* edited *\\/\\n/'\" %s",
		 mkc_bin(), OP23);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed"), "%s", out);
	snprintf(cmd, sizeof cmd, "%s test --edit \"perl -0pi -e 's/no such text//'\" %s", mkc_bin(),
		 OP23);
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 1, "%s", out);
	cr_assert(strstr(out, "left the emitted file as it was"), "%s", out);
}

/*
 * The residual Adds (flat walks: no operand broadcasts) skip element i == 3
 * of their outputs: the edit is the flat walk of backends/c/elementwise.h.
 */
Test(mutants, a_skipped_write, .timeout = 300)
{
	must_fail("s/(a\\.i = i;\\s*)(mkc_ew_put\\()/\\$1if (i != 3 || op != MKC_EW_ADD) \\$2/", OP23);
}

/* The products' dot products stop one term short (the float32 walk of matmul.h's mkc_matmul). */
Test(mutants, an_off_by_one_loop_bound, .timeout = 300)
{
	must_fail("s/(mkc_matmul\\(const mkc_view \\*y.*?const float \\*pb = .*?k < )K/\\$1K - 1/s", OP23);
}

/* bf16 weights truncated instead of rounded: only a bf16-weight reference sees it at 1e-5. */
Test(mutants, a_truncating_bf16_conversion, .timeout = 300)
{
	must_fail("s/\\tx \\+= 0x7fffu \\+ \\(\\(x >> 16\\) & 1\\);\\n//",
		  "--weights bf16 tests/models/bf16_ref/tiny_llama_decode_op23");
}

/*
 * The first cache append writes on the first step only: the later steps
 * find its slot poisoned (NaN) and the decoy past around it, not the value
 * the first step left there. (The edit is the call of the body,
 * backends/c/cache.h's mkc_cache_append_box, in the first CacheAppend's tile
 * function.)
 */
Test(mutants, a_cache_append_lost_after_the_first_step, .timeout = 300)
{
	must_fail("s/(CacheAppend\\) \\*\\/.*?)(mkc_cache_append_box\\()/\\$1if (m->epoch == 1) \\$2/s",
		  OP23);
	cr_assert(strstr(out, "step 1: "), "the first step wrote the cache, the second must fail: %s",
		  out);
}

/* Task 0 (the embedding) never signals its event: the watchdog must end the step. */
Test(mutants, a_missing_event_signal, .timeout = 300)
{
	must_fail("s/(for \\(int k = mkc_task_sig_start\\[task\\])/\\$1 + (task == 0)/",
		  "--timeout 1 --steps 1 " OP23);
	cr_assert(strstr(out, "watchdog: task "), "%s", out);
}

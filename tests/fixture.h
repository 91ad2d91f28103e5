/*
 * fixture.h - the Criterion fixture of the unit tests: a fresh mkc context
 * for every test, destroyed after it with every graph made in it. Include it
 * in one test file each (its functions are static), then
 *
 *   TestSuite(infer, .init = setup, .fini = teardown);
 *   cr_assert_eq(mkc_pass_infer(g), 0, "%s", errs());
 */
#ifndef MKC_TEST_FIXTURE_H
#define MKC_TEST_FIXTURE_H

#include "../ir/base.h"

static mkc_ctx *ctx;

static void
setup(void)
{
	ctx = mkc_ctx_create();
}

static void
teardown(void)
{
	mkc_ctx_destroy(ctx);
}

/* the context's errors, or "" (inline: a file may not use it) */
static inline const char *
errs(void)
{
	return ctx->errors ? ctx->errors : "";
}

#endif

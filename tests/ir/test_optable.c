/*
 * test_optable.c - the README's supported-op table must list exactly the
 * ops of ir/ops.def, each once, with the right fold mark.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "graph.h"

static char readme[1 << 16];

static void
load_readme(void)
{
	FILE *f = fopen("README.md", "r");
	cr_assert_not_null(f, "run the tests from the repository root");
	size_t n = fread(readme, 1, sizeof readme - 1, f);
	readme[n] = 0;
	fclose(f);
}

/* The row of the supported-op table that names op, or NULL. */
static const char *
row_of(const char *op, int *count)
{
	const char *table = strstr(readme, "| ops | fold |");
	cr_assert_not_null(table, "README has no '| ops | fold |' table");
	const char *end = strstr(table, "\n\n");
	const char *found = NULL;
	*count = 0;
	size_t n = strlen(op);
	for (const char *p = table; (p = strstr(p, op)) && p < end; p += n) {
		char before = p[-1], after = p[n];
		if ((before == ' ' || before == '|') && (after == ',' || after == ' ')) {
			found = p;
			(*count)++;
		}
	}
	return found;
}

Test(optable, readme_matches_ops_def)
{
	load_readme();
	for (int op = 0; op < MKC_OP_UNKNOWN; op++) {
		const mkc_op_info *oi = mkc_op_info_of((mkc_op)op);
		if (!strcmp(oi->domain, "mkc.internal"))
			continue;   /* made by mkc's passes; the README lists what models may use */
		int count;
		const char *p = row_of(oi->name, &count);
		cr_assert_eq(count, 1, "README lists %s %d times", oi->name, count);
		const char *eol = strchr(p, '\n');
		const char *last = eol;
		while (last > p && last[-1] != '|')
			last--;
		while (last > p && last[-2] != '|')
			last--;
		bool marked = strstr(last, "fold") && strstr(last, "fold") < eol;
		cr_assert_eq(marked, oi->folds, "README's fold mark for %s is wrong", oi->name);
	}
}

Test(optable, lookup_is_by_name_and_domain)
{
	cr_assert_eq(mkc_op_lookup("", "MatMul"), MKC_OP_MATMUL);
	cr_assert_eq(mkc_op_lookup("ai.onnx", "MatMul"), MKC_OP_MATMUL);
	cr_assert_eq(mkc_op_lookup("com.microsoft", "MatMul"), MKC_OP_UNKNOWN);
	cr_assert(mkc_op_info_of(MKC_OP_ADD)->folds);
	cr_assert_not(mkc_op_info_of(MKC_OP_MATMUL)->folds);
}

/*
 * test_optable.c - the README's supported-op table must list exactly the
 * ops of ir/ops.def, each once, with the right fold mark; the kernel
 * column must agree with the elementwise bodies it names.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "graph.h"
#include "kernel.h"

static char readme[1 << 18];

static void
load_readme(void)
{
	FILE *f = fopen("README.md", "r");
	cr_assert_not_null(f, "run the tests from the repository root");
	size_t n = fread(readme, 1, sizeof readme - 1, f);
	readme[n] = 0;
	cr_assert(feof(f), "README.md is longer than this test reads");
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

Test(optable, kernel_column)
{
	cr_assert_eq(mkc_op_kernel_of(MKC_OP_ADD)->kind, MKC_KERN_ELEMENTWISE);
	cr_assert_not(mkc_op_kernel_of(MKC_OP_ADD)->one_operand);
	cr_assert_eq(mkc_op_kernel_of(MKC_OP_EXPAND)->kind, MKC_KERN_ELEMENTWISE);
	cr_assert(mkc_op_kernel_of(MKC_OP_EXPAND)->one_operand);
	cr_assert(mkc_op_kernel_of(MKC_OP_CASTLIKE)->one_operand);
	cr_assert_eq(mkc_op_kernel_of(MKC_OP_UNSQUEEZE)->kind, MKC_KERN_COPY);
	cr_assert_eq(mkc_op_kernel_of(MKC_OP_NORM_GLU)->kind, MKC_KERN_MATMUL);
	cr_assert_eq(mkc_op_kernel_of(MKC_OP_SHAPE)->kind, MKC_KERN_OTHER);
	cr_assert_eq(mkc_op_kernel_of(MKC_OP_UNKNOWN)->kind, MKC_KERN_OTHER);
}

/* The body of the function named by sig in text, up to the next blank line. */
static const char *
body_of(const char *text, const char *sig, char *buf, size_t n)
{
	const char *p = strstr(text, sig);
	cr_assert_not_null(p, "no %s in elementwise.h", sig);
	const char *end = strstr(p, "\n}\n");
	cr_assert_not_null(end);
	size_t len = (size_t)(end - p) < n - 1 ? (size_t)(end - p) : n - 1;
	memcpy(buf, p, len);
	buf[len] = 0;
	return buf;
}

/*
 * Every EW row's code is one of elementwise.h's, and the forms the row
 * claims are the ones its functions compute: a case in mkc_ew_f for the
 * float form, in mkc_ew_i for the integer form (Identity is their default;
 * Where picks an operand before either).
 */
Test(optable, elementwise_codes_and_forms_are_the_bodies)
{
	static const struct {
		const char *code;
		bool ew, f, i;
	} rows[] = {
#define K(kind) {NULL, false, false, false}
#define EW(code, f, i) {#code, true, f, i}
#define EW1 EW
#define OP(e, nm, dom, i0, i1, o0, o1, inf, fld, cin, opt, kern) kern,
#include "ops.def"
#undef OP
#undef EW1
#undef EW
#undef K
	};
	static char text[1 << 16], fbody[1 << 13], ibody[1 << 13];
	FILE *fp = fopen("backends/c/elementwise.h", "r");
	cr_assert_not_null(fp, "run the tests from the repository root");
	text[fread(text, 1, sizeof text - 1, fp)] = 0;
	fclose(fp);
	body_of(text, "mkc_ew_f(int op", fbody, sizeof fbody);
	body_of(text, "mkc_ew_i(int op", ibody, sizeof ibody);
	int n = 0;
	for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
		if (!rows[r].ew)
			continue;
		n++;
		char name[64], label[72];
		snprintf(name, sizeof name, "MKC_EW_%s,", rows[r].code);
		cr_assert_not_null(strstr(text, name), "elementwise.h has no %s", name);
		snprintf(label, sizeof label, "case MKC_EW_%s:", rows[r].code);
		bool any = !strcmp(rows[r].code, "IDENTITY") || !strcmp(rows[r].code, "WHERE");
		cr_assert_eq(rows[r].f, any || strstr(fbody, label) != NULL,
			     "ops.def's float form of %s is not mkc_ew_f's", rows[r].code);
		cr_assert_eq(rows[r].i, any || strstr(ibody, label) != NULL,
			     "ops.def's integer form of %s is not mkc_ew_i's", rows[r].code);
	}
	cr_assert_gt(n, 30);
}

/* test_graph.c - dimensions, the op and type tables, building and sorting graphs. */
#include "graph.h"

#include <criterion/criterion.h>
#include <string.h>

#include "../graph_builder.h"

static mkc_ctx *ctx;
static mkc_graph *g;

static void
setup(void)
{
	ctx = mkc_ctx_create();
	g = mkc_graph_create(ctx, "dir/test.onnx");
}

static void
teardown(void)
{
	mkc_ctx_destroy(ctx);
}

/* c + k * sym, with sym -1 for a constant */
static mkc_dim
dim(int64_t c, int64_t k, int sym)
{
	mkc_dim d = mkc_dim_const(c);
	d.k[0] = k;
	d.sym[0] = k ? sym : -1;
	return d;
}

/* c + k1 * s1 + k2 * s2 */
static mkc_dim
dim2(int64_t c, int64_t k1, int s1, int64_t k2, int s2)
{
	mkc_dim a = dim(c, k1, s1), b = dim(0, k2, s2), r;
	cr_assert(mkc_dim_add(a, b, &r));
	return r;
}

static void
expect_dim(mkc_dim got, mkc_dim want)
{
	cr_expect(mkc_dim_eq(got, want),
		  "got %lld + %lld*s%d + %lld*s%d, want %lld + %lld*s%d + %lld*s%d",
		  (long long)got.c, (long long)got.k[0], got.sym[0], (long long)got.k[1], got.sym[1],
		  (long long)want.c, (long long)want.k[0], want.sym[0], (long long)want.k[1],
		  want.sym[1]);
}

/* Dimension arithmetic: p is symbol 0, q symbol 1. */

Test(dim, const_and_sym)
{
	mkc_dim c = mkc_dim_const(5), s = mkc_dim_sym(3);
	cr_expect(mkc_dim_is_const(c));
	cr_expect_eq(c.c, 5);
	cr_expect(!mkc_dim_is_const(s));
	cr_expect_eq(s.sym[0], 3);
	cr_expect_eq(s.k[0], 1);
	cr_expect_eq(s.c, 0);
}

Test(dim, eq)
{
	cr_expect(mkc_dim_eq(mkc_dim_const(5), (mkc_dim){5, {0, 0}, {7, 3}}), "sym of a constant is ignored");
	cr_expect(!mkc_dim_eq(mkc_dim_const(5), mkc_dim_const(6)));
	cr_expect(!mkc_dim_eq(mkc_dim_sym(0), mkc_dim_sym(1)));
	cr_expect(!mkc_dim_eq(mkc_dim_sym(0), dim(1, 1, 0)));
	cr_expect(!mkc_dim_eq(mkc_dim_sym(0), dim(0, 2, 0)));
	cr_expect(mkc_dim_eq(dim(2, 3, 1), dim(2, 3, 1)));
}

Test(dim, add)
{
	mkc_dim r;
	cr_assert(mkc_dim_add(mkc_dim_const(2), mkc_dim_const(3), &r));
	expect_dim(r, mkc_dim_const(5));
	cr_assert(mkc_dim_add(mkc_dim_sym(0), mkc_dim_const(1), &r));
	expect_dim(r, dim(1, 1, 0));
	cr_assert(mkc_dim_add(mkc_dim_const(1), mkc_dim_sym(0), &r));
	expect_dim(r, dim(1, 1, 0));
	cr_assert(mkc_dim_add(dim(1, 1, 0), dim(2, 3, 0), &r));
	expect_dim(r, dim(3, 4, 0));
	cr_assert(mkc_dim_add(dim(1, 1, 0), dim(2, -1, 0), &r));
	expect_dim(r, mkc_dim_const(3));
	cr_expect(mkc_dim_is_const(r));
}

Test(dim, add_two_symbols)
{
	mkc_dim r, back;
	cr_assert(mkc_dim_add(mkc_dim_sym(1), mkc_dim_sym(0), &r));
	cr_expect_eq(r.sym[0], 0, "terms in symbol order");
	cr_expect_eq(r.sym[1], 1);
	cr_assert(mkc_dim_add(dim(1, 2, 0), dim(0, -1, 1), &r));
	expect_dim(r, dim2(1, 2, 0, -1, 1));
	cr_assert(mkc_dim_sub(r, dim(0, -1, 1), &back), "a term that cancels leaves one symbol");
	expect_dim(back, dim(1, 2, 0));
	cr_expect_eq(mkc_dim_nterms(back), 1);
	cr_expect(!mkc_dim_add(r, mkc_dim_sym(2), &back), "a third symbol has no room");
	cr_expect(!mkc_dim_mul(r, mkc_dim_sym(0), &back), "products of symbols are not affine");
	cr_assert(mkc_dim_mul(r, mkc_dim_const(3), &back));
	expect_dim(back, dim2(3, 6, 0, -3, 1));
	cr_assert(mkc_dim_div(back, mkc_dim_const(3), &back));
	expect_dim(back, r);
	cr_expect(!mkc_dim_div(r, mkc_dim_const(2), &back), "(1 + 2p - q) / 2 has no affine form");
	cr_assert(mkc_dim_div(dim2(2, 4, 0, -2, 1), r, &back), "a multiple of r by r");
	expect_dim(back, mkc_dim_const(2));
	int64_t val[2] = {5, 7}, v;
	cr_assert(mkc_dim_value(r, val, &v));
	cr_expect_eq(v, 1 + 10 - 7);
	cr_assert(mkc_dim_max(r, val, &v));
	cr_expect_eq(v, 11, "a falling term is largest at 0");
}

Test(dim, sub)
{
	mkc_dim r;
	cr_assert(mkc_dim_sub(mkc_dim_const(2), mkc_dim_const(7), &r));
	expect_dim(r, mkc_dim_const(-5));
	cr_assert(mkc_dim_sub(dim(1, 1, 0), mkc_dim_const(1), &r));
	expect_dim(r, mkc_dim_sym(0));
	cr_assert(mkc_dim_sub(dim(1, 1, 0), mkc_dim_sym(0), &r));
	expect_dim(r, mkc_dim_const(1));
	cr_assert(mkc_dim_sub(mkc_dim_const(4), mkc_dim_sym(0), &r));
	expect_dim(r, dim(4, -1, 0));
	cr_assert(mkc_dim_sub(mkc_dim_sym(0), mkc_dim_sym(1), &r));
	expect_dim(r, dim2(0, 1, 0, -1, 1));
}

Test(dim, mul)
{
	mkc_dim r;
	cr_assert(mkc_dim_mul(mkc_dim_const(6), mkc_dim_const(7), &r));
	expect_dim(r, mkc_dim_const(42));
	cr_assert(mkc_dim_mul(mkc_dim_const(3), dim(2, 1, 0), &r));
	expect_dim(r, dim(6, 3, 0));
	cr_assert(mkc_dim_mul(dim(2, 1, 0), mkc_dim_const(3), &r));
	expect_dim(r, dim(6, 3, 0));
	cr_assert(mkc_dim_mul(mkc_dim_sym(1), mkc_dim_const(0), &r));
	expect_dim(r, mkc_dim_const(0));
	cr_expect(mkc_dim_is_const(r));
}

Test(dim, mul_symbolic_by_symbolic_fails)
{
	mkc_dim r;
	cr_expect(!mkc_dim_mul(mkc_dim_sym(0), mkc_dim_sym(0), &r));
	cr_expect(!mkc_dim_mul(mkc_dim_sym(0), mkc_dim_sym(1), &r));
	cr_expect(!mkc_dim_mul(dim(1, 1, 0), dim(1, 1, 0), &r));
}

Test(dim, div_constants_floor)
{
	mkc_dim r;
	cr_assert(mkc_dim_div(mkc_dim_const(8), mkc_dim_const(2), &r));
	expect_dim(r, mkc_dim_const(4));
	cr_assert(mkc_dim_div(mkc_dim_const(7), mkc_dim_const(2), &r));
	expect_dim(r, mkc_dim_const(3));
	cr_assert(mkc_dim_div(mkc_dim_const(-7), mkc_dim_const(2), &r));
	expect_dim(r, mkc_dim_const(-4));
	cr_assert(mkc_dim_div(mkc_dim_const(7), mkc_dim_const(-2), &r));
	expect_dim(r, mkc_dim_const(-4));
}

Test(dim, div_symbolic)
{
	mkc_dim r;
	cr_assert(mkc_dim_div(dim(6, 4, 0), mkc_dim_const(2), &r));
	expect_dim(r, dim(3, 2, 0));
	cr_assert(mkc_dim_div(dim(2, 2, 0), dim(1, 1, 0), &r), "(2p+2)/(p+1)");
	expect_dim(r, mkc_dim_const(2));
	cr_assert(mkc_dim_div(mkc_dim_sym(0), mkc_dim_sym(0), &r));
	expect_dim(r, mkc_dim_const(1));
}

Test(dim, div_failures)
{
	mkc_dim r;
	cr_expect(!mkc_dim_div(mkc_dim_const(7), mkc_dim_const(0), &r), "7/0");
	cr_expect(!mkc_dim_div(mkc_dim_sym(0), mkc_dim_const(0), &r), "p/0");
	cr_expect(!mkc_dim_div(dim(1, 3, 0), mkc_dim_const(2), &r), "(3p+1)/2");
	cr_expect(!mkc_dim_div(dim(1, 2, 0), mkc_dim_const(2), &r), "(2p+1)/2");
	cr_expect(!mkc_dim_div(dim(3, 2, 0), dim(1, 1, 0), &r), "(2p+3)/(p+1)");
	cr_expect(!mkc_dim_div(dim(2, 3, 0), dim(1, 2, 0), &r), "(3p+2)/(2p+1)");
	cr_expect(!mkc_dim_div(mkc_dim_sym(0), mkc_dim_sym(1), &r), "p/q");
	cr_expect(!mkc_dim_div(mkc_dim_const(6), mkc_dim_sym(0), &r), "6/p");
}

/* Parsing. */

TestSuite(parse, .init = setup, .fini = teardown);

static mkc_dim
parse_ok(const char *s, bool add)
{
	mkc_dim d = mkc_dim_const(-999);
	cr_assert(mkc_dim_parse(g, s, add, &d), "'%s' does not parse", s);
	return d;
}

Test(parse, symbol_added)
{
	expect_dim(parse_ok("past_len", true), mkc_dim_sym(0));
	cr_assert_eq(g->syms.n, 1);
	cr_expect_str_eq(MKC_SYM(g, 0), "past_len");
	expect_dim(parse_ok("past_len", true), mkc_dim_sym(0));
	cr_expect_eq(g->syms.n, 1, "a known name is not added again");
}

Test(parse, affine_forms)
{
	expect_dim(parse_ok("past_len + 1", true), dim(1, 1, 0));
	expect_dim(parse_ok("2*past_len - 3", true), dim(-3, 2, 0));
	expect_dim(parse_ok("past_len*2", true), dim(0, 2, 0));
	expect_dim(parse_ok("2 * 3 * past_len", true), dim(0, 6, 0));
	expect_dim(parse_ok("1 + past_len", true), dim(1, 1, 0));
	expect_dim(parse_ok("past_len - past_len + 4", true), mkc_dim_const(4));
	cr_expect_eq(g->syms.n, 1);
}

Test(parse, constants)
{
	expect_dim(parse_ok("7", false), mkc_dim_const(7));
	expect_dim(parse_ok("3*4", false), mkc_dim_const(12));
	expect_dim(parse_ok("10 - 12", false), mkc_dim_const(-2));
	cr_expect_eq(g->syms.n, 0);
}

Test(parse, spaces_around)
{
	expect_dim(parse_ok(" p+1 ", true), dim(1, 1, 0));
	cr_assert_eq(g->syms.n, 1);
	cr_expect_str_eq(MKC_SYM(g, 0), "p");
}

Test(parse, dotted_name)
{
	expect_dim(parse_ok("x.dim0", true), mkc_dim_sym(0));
	cr_expect_str_eq(MKC_SYM(g, 0), "x.dim0");
}

Test(parse, second_symbol_gets_next_index)
{
	parse_ok("batch", true);
	expect_dim(parse_ok("past_len+1", true), dim(1, 1, 1));
	cr_expect_eq(g->syms.n, 2);
	cr_expect_str_eq(MKC_SYM(g, 1), "past_len");
}

Test(parse, unknown_name_without_add_fails)
{
	mkc_dim d;
	cr_expect(!mkc_dim_parse(g, "past_len", false, &d));
	cr_expect(!mkc_dim_parse(g, "past_len + 1", false, &d));
	cr_expect_eq(g->syms.n, 0, "a failed parse added a symbol");
	mkc_graph_sym(g, "past_len");
	expect_dim(parse_ok("past_len + 1", false), dim(1, 1, 0));
	cr_expect(!mkc_dim_parse(g, "batch", false, &d));
	cr_expect_eq(g->syms.n, 1);
}

Test(parse, failed_parse_adds_no_symbols)
{
	mkc_dim d;
	cr_assert(!mkc_dim_parse(g, "batch*seq", true, &d));
	cr_assert(!mkc_dim_parse(g, "p + q + r", true, &d));
	cr_expect_eq(g->syms.n, 0, "a rejected dimension left %d symbol(s) behind",
		     g->syms.n);
}

Test(parse, malformed_fails)
{
	static const char *bad[] = {
		"p*q", "p+", "(p)", "", "   ", "p q", "7x", "p+q+r", "p*p",
		"2*p*p", "-1", "p/2", "+1", "p--1",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		mkc_dim d;
		cr_expect(!mkc_dim_parse(g, bad[i], true, &d), "'%s' parsed", bad[i]);
	}
}

/* Printing. */

TestSuite(print, .init = setup, .fini = teardown);

static void
expect_dim_str(mkc_dim d, const char *want)
{
	char buf[64];
	cr_expect_str_eq(mkc_dim_str(g, d, buf, sizeof buf), want);
}

Test(print, dims)
{
	mkc_graph_sym(g, "past_len");
	expect_dim_str(mkc_dim_const(5), "5");
	expect_dim_str(mkc_dim_const(-3), "-3");
	expect_dim_str(mkc_dim_const(0), "0");
	expect_dim_str(mkc_dim_sym(0), "past_len");
	expect_dim_str(dim(1, 1, 0), "past_len+1");
	expect_dim_str(dim(-3, 2, 0), "2*past_len-3");
	expect_dim_str(dim(0, -1, 0), "-past_len");
	expect_dim_str(dim(4, -1, 0), "-past_len+4");
	expect_dim_str(dim(0, -2, 0), "-2*past_len");
	expect_dim_str(mkc_dim_unknown(), "?");
}

Test(print, dim_str_round_trips_through_parse)
{
	mkc_graph_sym(g, "past_len");
	mkc_graph_sym(g, "seq_len");
	const mkc_dim dims[] = {
		dim(1, 1, 0), dim(-3, 2, 0), dim(0, 1, 0), dim(7, 0, -1), dim(0, 5, 0),
		dim2(0, 1, 0, 1, 1), dim2(-1, 2, 0, -1, 1), dim2(4, 3, 0, -1, 1),
	};
	for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
		char buf[64];
		mkc_dim back;
		mkc_dim_str(g, dims[i], buf, sizeof buf);
		cr_assert(mkc_dim_parse(g, buf, false, &back), "'%s'", buf);
		expect_dim(back, dims[i]);
	}
}

static mkc_tensor *
shaped(const char *name, int rank, const mkc_dim *dims)
{
	mkc_tensor *t = mkc_graph_tensor(g, name);
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		t->shape[i] = dims[i];
	return t;
}

Test(print, shapes)
{
	char buf[128];
	mkc_graph_sym(g, "past_len");
	mkc_tensor *unknown = mkc_graph_tensor(g, "u");
	cr_expect_str_eq(mkc_shape_str(g, unknown, buf, sizeof buf), "[?]");
	mkc_tensor *scalar = shaped("s", 0, NULL);
	cr_expect_str_eq(mkc_shape_str(g, scalar, buf, sizeof buf), "[]");
	mkc_dim kv[] = {mkc_dim_const(1), mkc_dim_const(2), dim(1, 1, 0), mkc_dim_const(32)};
	mkc_tensor *t = shaped("kv", 4, kv);
	cr_expect_str_eq(mkc_shape_str(g, t, buf, sizeof buf), "[1,2,past_len+1,32]");
	mkc_dim part[] = {mkc_dim_sym(0), mkc_dim_unknown(), mkc_dim_const(4)};
	mkc_tensor *p = shaped("p", 3, part);
	cr_expect_str_eq(mkc_shape_str(g, p, buf, sizeof buf), "[past_len,?,4]");
}

Test(print, shape_str_truncates_safely)
{
	char buf[8];
	memset(buf, 'Z', sizeof buf);
	mkc_graph_sym(g, "past_len");
	mkc_dim kv[] = {mkc_dim_const(1), mkc_dim_const(2), dim(1, 1, 0), mkc_dim_const(32)};
	mkc_tensor *t = shaped("kv", 4, kv);
	mkc_shape_str(g, t, buf, sizeof buf);
	cr_expect_str_eq(buf, "[1,2,pa");
	char one[1] = {'Z'};
	mkc_shape_str(g, t, one, sizeof one);
	cr_expect_eq(one[0], 0);
}

/* The op table. */

Test(ops, lookup_default_domain)
{
	cr_expect_eq(mkc_op_lookup("", "Add"), MKC_OP_ADD);
	cr_expect_eq(mkc_op_lookup("ai.onnx", "Add"), MKC_OP_ADD);
	cr_expect_eq(mkc_op_lookup(NULL, "Add"), MKC_OP_ADD);
	cr_expect_eq(mkc_op_lookup("", "RMSNormalization"), MKC_OP_RMS_NORM);
	cr_expect_eq(mkc_op_lookup("", "MatMul"), MKC_OP_MATMUL);
	cr_expect_eq(mkc_op_lookup("", "LessOrEqual"), MKC_OP_LESS_EQUAL);
	cr_expect_eq(mkc_op_lookup("", "Attention"), MKC_OP_ATTENTION);
}

Test(ops, lookup_unknown)
{
	cr_expect_eq(mkc_op_lookup("", "Frobnicate"), MKC_OP_UNKNOWN);
	cr_expect_eq(mkc_op_lookup("", "add"), MKC_OP_UNKNOWN, "op names are case sensitive");
	cr_expect_eq(mkc_op_lookup("", ""), MKC_OP_UNKNOWN);
	cr_expect_eq(mkc_op_lookup("", "(unknown)"), MKC_OP_UNKNOWN);
	cr_expect_eq(mkc_op_lookup("com.microsoft", "Add"), MKC_OP_UNKNOWN);
	cr_expect_eq(mkc_op_lookup("com.microsoft", "FusedMatMul"), MKC_OP_UNKNOWN);
	cr_expect_eq(mkc_op_lookup("ai.onnx.ml", "Add"), MKC_OP_UNKNOWN);
}

Test(ops, table_round_trips)
{
	for (int i = 0; i < MKC_OP_UNKNOWN; i++) {
		const mkc_op_info *oi = mkc_op_info_of((mkc_op)i);
		cr_assert_not_null(oi->name, "op %d", i);
		cr_expect_eq(mkc_op_lookup(oi->domain, oi->name), (mkc_op)i,
			     "'%s' does not look up to itself (a duplicate row?)", oi->name);
		cr_expect_leq(oi->min_in, oi->max_in < 0 ? oi->min_in : oi->max_in, "%s", oi->name);
		cr_expect_leq(oi->min_out, oi->max_out < 0 ? oi->min_out : oi->max_out, "%s", oi->name);
	}
}

Test(ops, info)
{
	const mkc_op_info *add = mkc_op_info_of(MKC_OP_ADD);
	cr_expect_str_eq(add->name, "Add");
	cr_expect_str_eq(add->domain, "");
	cr_expect_eq(add->min_in, 2);
	cr_expect_eq(add->max_in, 2);
	cr_expect_eq(mkc_op_info_of(MKC_OP_MAX)->max_in, -1);
	cr_expect_eq(mkc_op_info_of(MKC_OP_CONSTANT)->max_in, 0);
	cr_expect_eq(mkc_op_info_of(MKC_OP_SPLIT)->max_out, -1);
	cr_expect_str_eq(mkc_op_info_of(MKC_OP_UNKNOWN)->name, "(unknown)");
}

/* Element types. */

Test(dtype, names_and_sizes)
{
	cr_expect_str_eq(mkc_dtype_name(MKC_DT_FLOAT), "float32");
	cr_expect_str_eq(mkc_dtype_name(MKC_DT_FLOAT16), "float16");
	cr_expect_str_eq(mkc_dtype_name(MKC_DT_BFLOAT16), "bfloat16");
	cr_expect_str_eq(mkc_dtype_name(MKC_DT_DOUBLE), "float64");
	cr_expect_str_eq(mkc_dtype_name(MKC_DT_INT64), "int64");
	cr_expect_str_eq(mkc_dtype_name(MKC_DT_BOOL), "bool");
	cr_expect_str_eq(mkc_dtype_name(MKC_DT_UINT8), "uint8");
	cr_expect_eq(mkc_dtype_size(MKC_DT_FLOAT), 4);
	cr_expect_eq(mkc_dtype_size(MKC_DT_FLOAT16), 2);
	cr_expect_eq(mkc_dtype_size(MKC_DT_BFLOAT16), 2);
	cr_expect_eq(mkc_dtype_size(MKC_DT_DOUBLE), 8);
	cr_expect_eq(mkc_dtype_size(MKC_DT_INT64), 8);
	cr_expect_eq(mkc_dtype_size(MKC_DT_INT32), 4);
	cr_expect_eq(mkc_dtype_size(MKC_DT_INT8), 1);
	cr_expect_eq(mkc_dtype_size(MKC_DT_BOOL), 1);
	cr_expect_eq(mkc_dtype_size(MKC_DT_STRING), 0);
}

Test(dtype, onnx_numbers)
{
	cr_expect_eq(MKC_DT_FLOAT, 1);
	cr_expect_eq(MKC_DT_INT64, 7);
	cr_expect_eq(MKC_DT_FLOAT16, 10);
	cr_expect_eq(MKC_DT_BFLOAT16, 16);
}

Test(dtype, invalid)
{
	static const int bad[] = {0, -1, 14, 15, 17, 1000};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_expect(!mkc_dtype_valid(bad[i]), "%d", bad[i]);
		cr_expect_str_eq(mkc_dtype_name((mkc_dtype)bad[i]), "undefined");
		cr_expect_eq(mkc_dtype_size((mkc_dtype)bad[i]), 0);
	}
	cr_expect(mkc_dtype_valid(1));
	cr_expect(mkc_dtype_valid(16));
}

Test(dtype, is_float)
{
	cr_expect(mkc_dtype_is_float(MKC_DT_FLOAT));
	cr_expect(mkc_dtype_is_float(MKC_DT_FLOAT16));
	cr_expect(mkc_dtype_is_float(MKC_DT_BFLOAT16));
	cr_expect(mkc_dtype_is_float(MKC_DT_DOUBLE));
	cr_expect(!mkc_dtype_is_float(MKC_DT_INT64));
	cr_expect(!mkc_dtype_is_float(MKC_DT_BOOL));
	cr_expect(!mkc_dtype_is_float(MKC_DT_UNDEF));
}

/* Building graphs. */

TestSuite(graph, .init = setup, .fini = teardown);

Test(graph, create)
{
	cr_expect_str_eq(g->path, "dir/test.onnx");
	cr_expect_str_eq(g->dir, "dir");
	cr_expect_eq(g->ctx, ctx);
	cr_expect_eq(g->nodes.n, 0);
	mkc_graph *h = mkc_graph_create(ctx, "model.onnx");
	cr_expect_str_eq(h->dir, ".");
}

Test(graph, tensor_find_or_add)
{
	mkc_tensor *a = mkc_graph_tensor(g, "a");
	mkc_tensor *b = mkc_graph_tensor(g, "b");
	cr_expect_neq(a, b);
	cr_expect_eq(mkc_graph_tensor(g, "a"), a);
	cr_expect_eq(mkc_graph_find(g, "b"), b);
	cr_expect_null(mkc_graph_find(g, "c"));
	cr_expect_eq(g->tensors.n, 2);
	cr_expect_eq(a->id, 0);
	cr_expect_eq(b->id, 1);
	cr_expect_eq(a->rank, -1);
	cr_expect_str_eq(a->name, "a");
	cr_expect_eq(MKC_TENSOR(g, 1), b);
}

Test(graph, tensor_name_is_copied)
{
	char name[] = "abc";
	mkc_tensor *t = mkc_graph_tensor(g, name);
	name[0] = 'x';
	cr_expect_str_eq(t->name, "abc");
	cr_expect_eq(mkc_graph_find(g, "abc"), t);
	cr_expect_null(mkc_graph_find(g, "xbc"));
}

Test(graph, syms)
{
	cr_expect_eq(mkc_graph_sym(g, "batch"), 0);
	cr_expect_eq(mkc_graph_sym(g, "past_len"), 1);
	cr_expect_eq(mkc_graph_sym(g, "batch"), 0);
	cr_expect_eq(g->syms.n, 2);
}

Test(graph, add_node)
{
	mkc_node *n = mkc_graph_add_node(g, "n0", "", "Add", 2, 1, 1);
	cr_expect_str_eq(n->name, "n0");
	cr_expect_eq(n->op, MKC_OP_ADD);
	cr_expect_eq(n->nin, 2);
	cr_expect_eq(n->nout, 1);
	cr_expect_null(n->in[0]);
	cr_expect_null(n->in[1]);
	cr_expect_eq(n->id, 0);
	mkc_node *m = mkc_graph_add_node(g, "", "com.microsoft", "Add", 2, 1, 0);
	cr_expect_eq(m->op, MKC_OP_UNKNOWN);
	cr_expect_str_eq(m->domain, "com.microsoft");
	cr_expect_eq(m->id, 1);
	cr_expect(m->name && *m->name, "an empty name is made up");
	cr_expect_str_neq(m->name, n->name);
	mkc_node *k = mkc_graph_add_node(g, NULL, NULL, "Neg", 1, 1, 0);
	cr_expect_eq(k->op, MKC_OP_NEG);
	cr_expect_str_eq(k->domain, "");
	cr_expect(k->name && *k->name);
	cr_expect_eq(g->nodes.n, 3);
}

Test(graph, opset)
{
	mkc_opset os[] = {{"", 18}, {"com.microsoft", 1}};
	g->opsets = os;
	g->nopsets = 2;
	cr_expect_eq(mkc_graph_opset(g, ""), 18);
	cr_expect_eq(mkc_graph_opset(g, "ai.onnx"), 18);
	cr_expect_eq(mkc_graph_opset(g, "com.microsoft"), 1);
	cr_expect_eq(mkc_graph_opset(g, "test.attrs"), 0);
	g->opsets = NULL;
	g->nopsets = 0;
}

/* A node of one or two named inputs, named as the sort tests need. */
static mkc_node *
add_op(const char *name, const char *op, const char *a, const char *b, const char *out)
{
	mkc_tensor *in[2] = {mkc_graph_tensor(g, a), b ? mkc_graph_tensor(g, b) : NULL};
	return gb_node_as(g, name, op, out, b ? 2 : 1, in);
}

static void
expect_order(const char *const *names, int n)
{
	cr_assert_eq(g->nodes.n, n);
	for (int i = 0; i < n; i++) {
		cr_expect_str_eq(MKC_NODE(g, i)->name, names[i], "position %d", i);
		cr_expect_eq(MKC_NODE(g, i)->id, i);
	}
}

/* Every input of a node comes from an earlier node or from outside. */
static void
expect_topological(void)
{
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		for (int j = 0; j < n->nin; j++)
			if (n->in[j] && n->in[j]->producer)
				cr_expect_lt(n->in[j]->producer->id, i, "node '%s'", n->name);
	}
}

Test(graph, sort_keeps_ordered_graph)
{
	gb_input(g, "x", MKC_DT_FLOAT, 0, NULL);
	add_op("a", "Identity", "x", NULL, "t1");
	add_op("b", "Neg", "t1", NULL, "t2");
	add_op("c", "Add", "t1", "t2", "t3");
	add_op("d", "Abs", "x", NULL, "t4");
	cr_assert_eq(mkc_graph_sort(g), 0, "%s", ctx->errors);
	static const char *const want[] = {"a", "b", "c", "d"};
	expect_order(want, 4);
	cr_expect_eq(ctx->nerrors, 0);
}

Test(graph, sort_orders_reversed_graph)
{
	gb_input(g, "x", MKC_DT_FLOAT, 0, NULL);
	add_op("c", "Abs", "t2", NULL, "y");
	add_op("b", "Neg", "t1", NULL, "t2");
	add_op("a", "Identity", "x", NULL, "t1");
	cr_assert_eq(mkc_graph_sort(g), 0, "%s", ctx->errors);
	static const char *const want[] = {"a", "b", "c"};
	expect_order(want, 3);
	expect_topological();
}

Test(graph, sort_is_stable)
{
	gb_input(g, "x", MKC_DT_FLOAT, 0, NULL);
	add_op("d", "Add", "tb", "tc", "y");
	add_op("c", "Neg", "ta", NULL, "tc");
	add_op("b", "Abs", "ta", NULL, "tb");
	add_op("a", "Identity", "x", NULL, "ta");
	add_op("e", "Relu", "x", NULL, "te");
	cr_assert_eq(mkc_graph_sort(g), 0, "%s", ctx->errors);
	/* among ready nodes the one earlier in the file goes first */
	static const char *const want[] = {"a", "c", "b", "d", "e"};
	expect_order(want, 5);
	expect_topological();
}

Test(graph, sort_skips_missing_optional_inputs)
{
	gb_input(g, "x", MKC_DT_FLOAT, 0, NULL);
	mkc_tensor *z = mkc_graph_tensor(g, "z");
	gb_node_as(g, "s", "Slice", "y", 3, (mkc_tensor *[]){z, NULL, gb_find(g, "x")});   /* 1 left out */
	add_op("first", "Neg", "x", NULL, "z");
	cr_assert_eq(mkc_graph_sort(g), 0, "%s", ctx->errors);
	static const char *const want[] = {"first", "s"};
	expect_order(want, 2);
}

Test(graph, sort_empty_graph)
{
	cr_expect_eq(mkc_graph_sort(g), 0);
	cr_expect_eq(g->nodes.n, 0);
}

Test(graph, sort_cycle_names_nodes)
{
	gb_input(g, "x", MKC_DT_FLOAT, 0, NULL);
	add_op("free", "Neg", "x", NULL, "f");
	add_op("cyc_a", "Add", "x", "tb", "ta");
	add_op("cyc_b", "Add", "x", "ta", "tb");
	add_op("behind", "Abs", "tb", NULL, "y");
	cr_assert_eq(mkc_graph_sort(g), -1);
	cr_assert_eq(ctx->nerrors, 1);
	cr_assert_not_null(ctx->errors);
	cr_expect_not_null(strstr(ctx->errors, "dir/test.onnx"), "%s", ctx->errors);
	cr_expect_not_null(strstr(ctx->errors, "cycle"), "%s", ctx->errors);
	cr_expect_not_null(strstr(ctx->errors, "'cyc_a'"), "%s", ctx->errors);
	cr_expect_not_null(strstr(ctx->errors, "'cyc_b'"), "%s", ctx->errors);
	cr_expect_null(strstr(ctx->errors, "'free'"), "%s", ctx->errors);
}

Test(graph, sort_self_loop)
{
	add_op("loop", "Neg", "t", NULL, "t");
	cr_assert_eq(mkc_graph_sort(g), -1);
	cr_expect_not_null(strstr(ctx->errors, "'loop'"), "%s", ctx->errors);
}

Test(graph, sort_long_cycle_message_is_bounded)
{
	char in[32], out[32], name[32];
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof name, "a_rather_long_node_name_%d", i);
		snprintf(in, sizeof in, "t%d", (i + 99) % 100);
		snprintf(out, sizeof out, "t%d", i);
		add_op(name, "Neg", in, NULL, out);
	}
	cr_assert_eq(mkc_graph_sort(g), -1);
	cr_expect_eq(ctx->nerrors, 1);
	cr_expect_not_null(strstr(ctx->errors, "100 node"), "%s", ctx->errors);
	cr_expect_not_null(strstr(ctx->errors, "'a_rather_long_node_name_0'"), "%s", ctx->errors);
}

Test(graph, count_uses)
{
	gb_input(g, "x", MKC_DT_FLOAT, 0, NULL);
	add_op("a", "Add", "x", "x", "t");
	add_op("b", "Neg", "t", NULL, "y");
	mkc_vec_push(ctx->arena, &g->outputs, mkc_graph_find(g, "y"));
	mkc_graph_count_uses(g);
	cr_expect_eq(mkc_graph_find(g, "x")->nconsumers, 2);
	cr_expect_eq(mkc_graph_find(g, "t")->nconsumers, 1);
	cr_expect_eq(mkc_graph_find(g, "y")->nconsumers, 1);
	mkc_graph_count_uses(g);
	cr_expect_eq(mkc_graph_find(g, "x")->nconsumers, 2, "counts are reset first");
}

Test(graph, node_attrs_and_error)
{
	mkc_node *n = mkc_graph_add_node(g, "/model/MatMul", "", "MatMul", 2, 1, 2);
	n->attr[0] = (mkc_attr){.name = "axis", .type = MKC_AT_INT, .i = -1};
	n->attr[1] = (mkc_attr){.name = "alpha", .type = MKC_AT_FLOAT, .f = 0.5f};
	cr_expect_eq(mkc_node_attr(n, "axis"), &n->attr[0]);
	cr_expect_null(mkc_node_attr(n, "beta"));
	cr_expect_eq(mkc_node_attr_int(n, "axis", 7), -1);
	cr_expect_eq(mkc_node_attr_int(n, "alpha", 7), 7, "a float is not an int");
	cr_expect_eq(mkc_node_attr_int(n, "beta", 7), 7);
	cr_expect_eq(mkc_node_attr_float(n, "alpha", 2.0f), 0.5f);
	cr_expect_eq(mkc_node_attr_float(n, "axis", 2.0f), 2.0f);
	cr_expect_eq(mkc_node_error(g, n, "inner dimensions %d and %d differ", 256, 512), -1);
	cr_expect_str_eq(ctx->errors,
			 "dir/test.onnx: node '/model/MatMul' (MatMul): inner dimensions 256 and 512 differ\n");
}

Test(graph, tensor_numel_and_const)
{
	mkc_graph_sym(g, "p");
	mkc_dim d23[] = {mkc_dim_const(2), mkc_dim_const(3)};
	mkc_dim dp[] = {mkc_dim_const(2), mkc_dim_sym(0)};
	cr_expect_eq(mkc_tensor_numel(shaped("a", 2, d23)), 6);
	cr_expect_eq(mkc_tensor_numel(shaped("s", 0, NULL)), 1);
	cr_expect_eq(mkc_tensor_numel(shaped("p", 2, dp)), -1);
	cr_expect_eq(mkc_tensor_numel(mkc_graph_tensor(g, "u")), -1);
	mkc_tensor *t = mkc_graph_tensor(g, "w");
	cr_expect(!mkc_tensor_is_const(t));
	static const float one = 1.0f;
	t->data = &one;
	t->nbytes = sizeof one;
	cr_expect(mkc_tensor_is_const(t));
}

Test(graph, numel_with_unknown_dim)
{
	/* a declared output dimension the frontend could not read */
	mkc_dim du[] = {mkc_dim_const(2), mkc_dim_unknown(), mkc_dim_const(4)};
	mkc_tensor *t = shaped("du", 3, du);
	cr_expect_eq(mkc_tensor_numel(t), -1, "numel %lld for [2,?,4]",
		     (long long)mkc_tensor_numel(t));
}

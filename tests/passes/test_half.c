/*
 * test_half.c - passes/half.c on graphs built here: float16 kept at the
 * interface behind Casts, weights widened exactly (an initializer marked as
 * float16 in its file, for the loader), a Cast to float16 inside the graph
 * made a Cast to float32; a float16 past/present pair made float32 state,
 * and the compile refused, naming the cache and --kv-io, when the state
 * pass cannot keep it in place.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../fixture.h"
#include "../graph_builder.h"
#include "numeric.h"
#include "passes.h"

TestSuite(half, .init = setup, .fini = teardown);

Test(half, interface_cast_weights_widened)
{
	mkc_graph *g = gb_graph(ctx, "half.onnx", 18);
	mkc_tensor *x = gb_input(g, "x", MKC_DT_FLOAT16, 1, (const int64_t[]){4});
	mkc_tensor *w = gb_weight(g, "w", MKC_DT_FLOAT16, 1, (const int64_t[]){4});
	w->initializer = true;
	/* 1.5, -2, the largest half and the smallest subnormal: each a float32 exactly */
	static const uint16_t bits[4] = {0x3e00, 0xc000, 0x7bff, 0x0001};
	memcpy((void *)w->data, bits, sizeof bits);
	mkc_tensor *s = gb_node(g, "Add", "s", 2, (mkc_tensor *[]){x, w})->out[0];
	mkc_node *c = gb_node(g, "Cast", "c", 1, (mkc_tensor *[]){s});
	gb_attr_int(g, c, "to", MKC_DT_FLOAT16);
	gb_output(g, gb_node(g, "Neg", "y", 1, (mkc_tensor *[]){c->out[0]})->out[0]);
	cr_assert_eq(mkc_pass_infer(g), 0, "%s", errs());
	cr_assert_eq(mkc_pass_half(g), 0, "%s", errs());
	cr_assert_eq(mkc_verify_graph(g, true), 0, "%s", errs());

	mkc_tensor *y = mkc_graph_find(g, "y");
	cr_expect_eq(x->dtype, MKC_DT_FLOAT16, "the interface keeps its type");
	cr_expect_eq(y->dtype, MKC_DT_FLOAT16);
	mkc_node *add = s->producer, *out = y->producer;
	cr_assert_eq(add->in[0]->producer->op, MKC_OP_CAST);
	cr_expect_eq(add->in[0]->producer->in[0], x);
	cr_expect_eq(add->in[0]->dtype, MKC_DT_FLOAT);
	cr_expect_str_eq(add->in[0]->name, "x_f32");
	cr_assert_eq(out->op, MKC_OP_CAST);
	cr_expect_str_eq(out->in[0]->name, "y_f32");
	cr_expect_eq(out->in[0]->producer->op, MKC_OP_NEG);
	cr_expect_eq(mkc_node_attr_int(out, "to", 0), MKC_DT_FLOAT16);
	/* inside: float32, the model's own Cast to float16 one to float32 */
	cr_expect_eq(s->dtype, MKC_DT_FLOAT);
	cr_expect_eq(c->out[0]->dtype, MKC_DT_FLOAT);
	cr_expect_eq(mkc_node_attr_int(c, "to", 0), MKC_DT_FLOAT);
	cr_expect_eq(w->dtype, MKC_DT_FLOAT);
	cr_expect_eq(w->file_dtype, MKC_DT_FLOAT16, "the loader widens the file's float16");
	cr_assert_eq(w->nbytes, 16u);
	static const float want[4] = {1.5f, -2.0f, 65504.0f, 5.9604644775390625e-8f};
	cr_expect_eq(memcmp(w->data, want, sizeof want), 0, "widened exactly");
	/* a float32 model is left alone */
	mkc_graph *f = gb_graph(ctx, "f32.onnx", 18);
	mkc_tensor *fx = gb_input(f, "x", MKC_DT_FLOAT, 1, (const int64_t[]){4});
	gb_output(f, gb_node(f, "Neg", "y", 1, (mkc_tensor *[]){fx})->out[0]);
	cr_assert_eq(mkc_pass_infer(f), 0, "%s", errs());
	int n = f->nodes.n;
	cr_assert_eq(mkc_pass_half(f), 0, "%s", errs());
	cr_expect_eq(f->nodes.n, n);
}

/*
 * past [1, 2, P, 4] and present = Concat(past, new): float32 state, no Cast.
 * A present read by something that is not an attention (a Neg here) stays
 * an output: the state pass refuses, naming the cache and --kv-io; with
 * --kv-io (kv_cap 0) the pair is cast at the boundary instead.
 */
Test(half, a_cache_not_kept_in_place_is_refused)
{
	for (int kvio = 0; kvio < 2; kvio++) {
		mkc_graph *g = gb_graph(ctx, "cache.onnx", 18);
		g->kv_cap = kvio ? 0 : 16;
		mkc_tensor *past = gb_input_dims(g, "past", MKC_DT_FLOAT16, 4,
						 (const char *const[]){"1", "2", "P", "4"});
		mkc_tensor *k = gb_input(g, "k", MKC_DT_FLOAT16, 4, (const int64_t[]){1, 2, 1, 4});
		mkc_node *cat = gb_node(g, "Concat", "present", 2, (mkc_tensor *[]){past, k});
		gb_attr_int(g, cat, "axis", 2);
		gb_output(g, cat->out[0]);
		gb_output(g, gb_node(g, "Neg", "y", 1, (mkc_tensor *[]){cat->out[0]})->out[0]);
		cr_assert_eq(mkc_pass_infer(g), 0, "%s", errs());
		cr_assert_eq(mkc_pass_half(g), 0, "%s", errs());
		mkc_tensor *present = mkc_graph_find(g, "present");
		if (kvio) {
			cr_expect_eq(past->dtype, MKC_DT_FLOAT16);
			cr_expect_eq(present->dtype, MKC_DT_FLOAT16);
			cr_expect_eq(present->producer->op, MKC_OP_CAST);
			cr_expect_eq(g->half_caches.n, 0);
			continue;
		}
		cr_expect_eq(past->dtype, MKC_DT_FLOAT, "the model's own state: float32");
		cr_expect_eq(present->dtype, MKC_DT_FLOAT);
		cr_expect_eq(present->producer, cat, "no Cast");
		cr_expect_eq(g->half_caches.n, 2, "%d", g->half_caches.n);
		cr_assert_eq(mkc_pass_dce(g), 0, "%s", errs());
		cr_assert_eq(mkc_pass_state(g), -1, "a float32 interface for a float16 one");
		cr_expect(strstr(errs(), "cache.onnx: the float16 KV cache 'past' cannot be kept in "
				 "place (every reader of the present must be an attention); compile "
				 "with --kv-io"), "%s", errs());
	}
}

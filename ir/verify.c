/*
 * verify.c - the IR checker the driver runs after every pass. A failure
 * here is a bug in mkc, not in the model, but it is reported as an error
 * (naming the node) rather than an abort, so that --dump-after still shows
 * the IR that broke.
 */
#include "graph.h"

static int
broken(mkc_graph *g, const mkc_node *n, const char *what, const char *name)
{
	return mkc_error(g->ctx, "%s: internal IR check failed at node '%s' (%s): %s '%s'",
			 g->path, n ? n->name : "-", n ? n->op_type : "-", what, name);
}

static bool
defined_before(const mkc_tensor *t, int id)
{
	/* a folded node's outputs are weights: known whether or not it runs; a
	 * weight stored transposed (passes/layout.c) is made by the loader */
	if (t->kind == MKC_TK_INPUT || (t->kind == MKC_TK_WEIGHT && (mkc_tensor_is_const(t) || t->xk)))
		return true;
	return t->producer && t->producer->id < id && !t->producer->dead;
}

int
mkc_verify_graph(mkc_graph *g, bool shapes)
{
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->id != i)
			return broken(g, n, "node id out of order at", n->name);
		if (n->dead)
			continue;
		if (n->op != MKC_OP_UNKNOWN) {
			const mkc_op_info *oi = mkc_op_info_of(n->op);
			if (n->nout < oi->min_out || (oi->max_in >= 0 && n->nin > oi->max_in))
				return broken(g, n, "arity outside the op table for", n->op_type);
			for (int j = 0; j < n->nin; j++)
				if (!n->in[j] && mkc_op_input_required(oi, j))
					return broken(g, n, "a required input is left out:", n->op_type);
		}
		for (int j = 0; j < n->nin; j++) {
			const mkc_tensor *t = n->in[j];
			if (t && !defined_before(t, i))
				return broken(g, n, "reads a tensor not defined before it:", t->name);
			if (t && shapes && (t->rank < 0 || !t->dtype))
				return broken(g, n, "reads a tensor without dtype or shape:", t->name);
		}
		for (int j = 0; j < n->nout; j++) {
			const mkc_tensor *t = n->out[j];
			if (t && t->producer != n)
				return broken(g, n, "output's producer is another node:", t->name);
			if (t && shapes && (t->rank < 0 || !t->dtype))
				return broken(g, n, "writes a tensor without dtype or shape:", t->name);
		}
	}
	for (int i = 0; i < g->outputs.n; i++) {
		const mkc_tensor *t = MKC_OUTPUT(g, i);
		if (!t->producer && !t->data)
			return broken(g, NULL, "graph output has no producer:", t->name);
	}
	return 0;
}

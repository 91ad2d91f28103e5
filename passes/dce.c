/*
 * dce.c - dead node removal.
 *
 * requires: infer (folded nodes are marked dead).
 * provides: only live nodes, each with at least one output that a live node
 *           or the graph's outputs read, or a check (LengthCheck: it fails
 *           the step, which is its effect); folded tensors lose their
 *           producer (they are weights now); use counts are current.
 *
 * Walks the nodes backwards so that a chain feeding only dead nodes goes in
 * one sweep.
 */
#include "passes.h"

int
mkc_pass_dce(mkc_graph *g)
{
	mkc_graph_count_uses(g);
	for (int i = g->nodes.n - 1; i >= 0; i--) {
		mkc_node *n = MKC_NODE(g, i);
		bool used = n->op == MKC_OP_LENGTH_CHECK && !n->dead;
		for (int j = 0; j < n->nout; j++)
			used |= n->out[j] && n->out[j]->nconsumers > 0;
		if (!used)
			n->dead = true;
		if (!n->dead)
			continue;
		for (int j = 0; j < n->nin; j++)
			if (n->in[j])
				n->in[j]->nconsumers--;
	}
	int kept = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		if (n->dead) {
			for (int j = 0; j < n->nout; j++)
				if (n->out[j] && n->out[j]->producer == n)
					n->out[j]->producer = NULL;
			continue;
		}
		n->id = kept;
		g->nodes.v[kept++] = n;
	}
	mkc_progress(g->ctx, "dce: %d of %d nodes left", kept, g->nodes.n);
	g->nodes.n = kept;
	mkc_graph_count_uses(g);
	return 0;
}

/*
 * dump.c - the graph as text, one line per tensor of note and per node:
 *
 *   input  past_key_values.0.key: float32[1,2,past_len,32]
 *   weight m.lm_head.weight: float32[1024,256] (external model.bin+0)
 *   node   node_add_16 Add(sym_size_int_15, val_7) -> add_16: int64[]
 *          kernel elementwise
 *
 * (the kernel line once passes/lower.c has described the node)
 * Stable across runs, so tests and humans can diff it.
 */
#include "kernel.h"

static void
tensor_type(FILE *f, const mkc_graph *g, const mkc_tensor *t)
{
	char b[512];
	fprintf(f, "%s%s", mkc_dtype_name(t->dtype), mkc_shape_str(g, t, b, sizeof b));
	if (t->storage && t->storage != t->dtype)
		fprintf(f, " stored %s", mkc_dtype_name(t->storage));
}

static void
values(FILE *f, const mkc_graph *g, const mkc_tensor *t)
{
	if (!t->symval || t->nsymval > 16)
		return;
	fputs(" = {", f);
	for (int64_t i = 0; i < t->nsymval; i++) {
		char b[64];
		fprintf(f, "%s%s", i ? "," : "", mkc_dim_str(g, t->symval[i], b, sizeof b));
	}
	fputc('}', f);
}

void
mkc_dump_graph(FILE *f, const mkc_graph *g)
{
	fprintf(f, "graph %s (%s)\n", *g->name ? g->name : "-", g->path);
	for (int i = 0; i < g->inputs.n; i++) {
		fprintf(f, "input  %s: ", MKC_INPUT(g, i)->name);
		tensor_type(f, g, MKC_INPUT(g, i));
		fputc('\n', f);
	}
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		fprintf(f, "node   %s %s%s%s(", n->name, n->domain,
			*n->domain ? "." : "", n->op_type);
		for (int j = 0; j < n->nin; j++)
			fprintf(f, "%s%s", j ? ", " : "", n->in[j] ? n->in[j]->name : "");
		fputs(") ->", f);
		for (int j = 0; j < n->nout; j++) {
			const mkc_tensor *t = n->out[j];
			if (!t)
				continue;
			fprintf(f, "%s %s: ", j ? "," : "", t->name);
			tensor_type(f, g, t);
			values(f, g, t);
		}
		fputs(n->dead ? " (folded)\n" : "\n", f);
		if (n->kern) {
			fputs("       kernel ", f);
			mkc_kernel_print(f, g, n);
			fputc('\n', f);
		}
	}
	for (int i = 0; i < g->outputs.n; i++) {
		fprintf(f, "output %s: ", MKC_OUTPUT(g, i)->name);
		tensor_type(f, g, MKC_OUTPUT(g, i));
		fputc('\n', f);
	}
}

/* graph.c - building, finding and ordering the graph IR. See graph.h. */
#include "graph.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* the fold column is a function name or 0; "0" is the only 2-byte spelling */
static const mkc_op_info op_table[MKC_OP_COUNT] = {
#define OP(e, nm, dom, i0, i1, o0, o1, inf, fld, cin, opt, kern) \
	[MKC_OP_##e] = {nm, dom, i0, i1, o0, o1, sizeof(#fld) > 2, cin, opt},
#include "ops.def"
#undef OP
	[MKC_OP_UNKNOWN] = {"(unknown)", "", 0, -1, 0, -1, false, 0, 0},
};

const mkc_op_info *
mkc_op_info_of(mkc_op op)
{
	MKC_ASSERT(op >= 0 && op < MKC_OP_COUNT);
	return &op_table[op];
}

static bool
is_default_domain(const char *d)
{
	return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

static bool
same_domain(const char *a, const char *b)
{
	if (is_default_domain(a) || is_default_domain(b))
		return is_default_domain(a) && is_default_domain(b);
	return strcmp(a, b) == 0;
}

mkc_op
mkc_op_lookup(const char *domain, const char *op_type)
{
	for (int i = 0; i < MKC_OP_UNKNOWN; i++)
		if (strcmp(op_table[i].name, op_type) == 0 &&
		    same_domain(op_table[i].domain, domain))
			return (mkc_op)i;
	return MKC_OP_UNKNOWN;
}

static const struct {
	const char *name;
	size_t size;
} dtype_table[] = {
#define DT(e, id, size, nm) [id] = {nm, size},
#include "dtypes.def"
#undef DT
};

enum { NDTYPES = sizeof dtype_table / sizeof dtype_table[0] };

bool
mkc_dtype_valid(int id)
{
	return id > 0 && id < NDTYPES && dtype_table[id].name;
}

const char *
mkc_dtype_name(mkc_dtype t)
{
	return mkc_dtype_valid((int)t) ? dtype_table[t].name : "undefined";
}

size_t
mkc_dtype_size(mkc_dtype t)
{
	return mkc_dtype_valid((int)t) ? dtype_table[t].size : 0;
}

bool
mkc_dtype_is_float(mkc_dtype t)
{
	return t == MKC_DT_FLOAT || t == MKC_DT_FLOAT16 ||
	       t == MKC_DT_BFLOAT16 || t == MKC_DT_DOUBLE;
}

/* Dimensions. */

mkc_dim
mkc_dim_const(int64_t c)
{
	return (mkc_dim){c, {0, 0}, {-1, -1}};
}

mkc_dim
mkc_dim_sym(int sym)
{
	return (mkc_dim){0, {1, 0}, {sym, -1}};
}

mkc_dim
mkc_dim_unknown(void)
{
	return (mkc_dim){0, {0, 0}, {MKC_DIM_UNKNOWN, -1}};
}

bool
mkc_dim_is_unknown(mkc_dim d)
{
	return d.sym[0] == MKC_DIM_UNKNOWN;
}

/* Drops terms of coefficient 0 and sorts the others by symbol. */
static mkc_dim
norm(mkc_dim d)
{
	if (mkc_dim_is_unknown(d))
		return mkc_dim_unknown();
	mkc_dim r = mkc_dim_const(d.c);
	int n = 0;
	for (int i = 0; i < MKC_DIM_TERMS; i++)
		if (d.k[i]) {
			r.k[n] = d.k[i];
			r.sym[n++] = d.sym[i];
		}
	if (n == 2 && r.sym[0] > r.sym[1]) {
		mkc_dim t = r;
		r.k[0] = t.k[1], r.sym[0] = t.sym[1];
		r.k[1] = t.k[0], r.sym[1] = t.sym[0];
	}
	return r;
}

bool
mkc_dim_is_const(mkc_dim d)
{
	return mkc_dim_nterms(d) == 0 && !mkc_dim_is_unknown(d);
}

int
mkc_dim_nterms(mkc_dim d)
{
	int n = 0;
	for (int i = 0; i < MKC_DIM_TERMS; i++)
		n += d.k[i] != 0;
	return n;
}

bool
mkc_dim_uses(mkc_dim d, int sym, int64_t *k)
{
	for (int i = 0; i < MKC_DIM_TERMS; i++)
		if (d.k[i] && d.sym[i] == sym) {
			if (k)
				*k = d.k[i];
			return true;
		}
	return false;
}

int
mkc_dim_bare_sym(mkc_dim d)
{
	d = norm(d);
	return d.sym[0] >= 0 && mkc_dim_eq(d, mkc_dim_sym(d.sym[0])) ? d.sym[0] : -1;
}

bool
mkc_dim_negative(mkc_dim d)
{
	for (int i = 0; i < MKC_DIM_TERMS; i++)
		if (d.k[i] < 0)
			return true;
	return mkc_dim_is_const(d) && d.c < 0;
}

bool
mkc_dim_eq(mkc_dim a, mkc_dim b)
{
	a = norm(a);
	b = norm(b);
	if (mkc_dim_is_unknown(a) || mkc_dim_is_unknown(b))
		return mkc_dim_is_unknown(a) && mkc_dim_is_unknown(b);
	for (int i = 0; i < MKC_DIM_TERMS; i++)
		if (a.k[i] != b.k[i] || (a.k[i] && a.sym[i] != b.sym[i]))
			return false;
	return a.c == b.c;
}

bool
mkc_dim_add(mkc_dim a, mkc_dim b, mkc_dim *r)
{
	if (mkc_dim_is_unknown(a) || mkc_dim_is_unknown(b))
		return false;
	mkc_dim s = norm(a);
	if (!mkc_add_ok(s.c, b.c, &s.c))
		return false;
	for (int i = 0; i < MKC_DIM_TERMS; i++) {
		if (!b.k[i])
			continue;
		int j = 0;
		while (j < MKC_DIM_TERMS && s.k[j] && s.sym[j] != b.sym[i])
			j++;
		if (j == MKC_DIM_TERMS)
			return false;   /* a third symbol */
		if (!s.k[j])
			s.sym[j] = b.sym[i];
		if (!mkc_add_ok(s.k[j], b.k[i], &s.k[j]))
			return false;
		s = norm(s);
	}
	*r = s;
	return true;
}

static bool
neg(mkc_dim d, mkc_dim *r)
{
	if (d.c == INT64_MIN)
		return false;
	d.c = -d.c;
	for (int i = 0; i < MKC_DIM_TERMS; i++) {
		if (d.k[i] == INT64_MIN)
			return false;
		d.k[i] = -d.k[i];
	}
	*r = d;
	return true;
}

bool
mkc_dim_sub(mkc_dim a, mkc_dim b, mkc_dim *r)
{
	return neg(b, &b) && mkc_dim_add(a, b, r);
}

bool
mkc_dim_mul(mkc_dim a, mkc_dim b, mkc_dim *r)
{
	if (mkc_dim_is_unknown(a) || mkc_dim_is_unknown(b))
		return false;
	if (!mkc_dim_is_const(a)) {
		mkc_dim t = a;
		a = b;
		b = t;
	}
	if (!mkc_dim_is_const(a))
		return false;   /* a product of symbols */
	mkc_dim p = norm(b);
	if (!mkc_mul_ok(a.c, p.c, &p.c))
		return false;
	for (int i = 0; i < MKC_DIM_TERMS; i++)
		if (!mkc_mul_ok(a.c, p.k[i], &p.k[i]))
			return false;
	*r = norm(p);
	return true;
}

static int64_t
floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

bool
mkc_dim_div(mkc_dim a, mkc_dim b, mkc_dim *r)
{
	if (mkc_dim_is_unknown(a) || mkc_dim_is_unknown(b))
		return false;
	a = norm(a);
	b = norm(b);
	if (mkc_dim_is_const(b)) {
		if (b.c == 0)
			return false;
		if (mkc_dim_is_const(a)) {
			if (b.c == -1 && a.c == INT64_MIN)
				return false;   /* does not fit (and traps on x86) */
			*r = mkc_dim_const(floordiv(a.c, b.c));
			return true;
		}
		/* every part must divide: (2s + 1) / 2 has no affine form */
		if (a.c % b.c || (b.c == -1 && a.c == INT64_MIN))
			return false;
		mkc_dim q = mkc_dim_const(a.c / b.c);
		for (int i = 0; i < MKC_DIM_TERMS; i++) {
			if (a.k[i] % b.c || (b.c == -1 && a.k[i] == INT64_MIN))
				return false;
			q.k[i] = a.k[i] / b.c;
			q.sym[i] = a.sym[i];
		}
		*r = norm(q);
		return true;
	}
	/* a symbolic quotient is a constant q only when a is exactly q * b */
	if (b.k[0] == -1 && a.k[0] == INT64_MIN)
		return false;
	if (a.sym[0] != b.sym[0] || !a.k[0] || a.k[0] % b.k[0])
		return false;
	mkc_dim q = mkc_dim_const(a.k[0] / b.k[0]), qb;
	if (!mkc_dim_mul(q, b, &qb) || !mkc_dim_eq(qb, a))
		return false;
	*r = q;
	return true;
}

/* d with symbol s at val[s], its falling terms left out when rising_only */
static bool
evaluate(mkc_dim d, const int64_t *val, bool rising_only, int64_t *r)
{
	int64_t v = d.c, t;
	if (mkc_dim_is_unknown(d))
		return false;
	for (int i = 0; i < MKC_DIM_TERMS; i++)
		if ((rising_only ? d.k[i] > 0 : d.k[i] != 0) &&
		    (!mkc_mul_ok(d.k[i], val[d.sym[i]], &t) || !mkc_add_ok(v, t, &v)))
			return false;
	*r = v;
	return true;
}

bool
mkc_dim_value(mkc_dim d, const int64_t *val, int64_t *r)
{
	return evaluate(d, val, false, r);
}

bool
mkc_dim_max(mkc_dim d, const int64_t *max, int64_t *r)
{
	return evaluate(d, max, true, r);   /* a falling term is largest at 0 */
}

char *
mkc_dim_str(const mkc_graph *g, mkc_dim d, char *buf, size_t n)
{
	if (mkc_dim_is_unknown(d)) {
		snprintf(buf, n, "?");
		return buf;
	}
	d = norm(d);
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < MKC_DIM_TERMS && d.k[i] && used < n; i++) {
		const char *sign = d.k[i] < 0 ? "-" : i ? "+" : "";
		const char *s = MKC_SYM(g, d.sym[i]);
		if (d.k[i] == 1 || d.k[i] == -1)
			used += (size_t)snprintf(buf + used, n - used, "%s%s", sign, s);
		else if (d.k[i] == INT64_MIN)
			used += (size_t)snprintf(buf + used, n - used, "%lld*%s", (long long)d.k[i], s);
		else
			used += (size_t)snprintf(buf + used, n - used, "%s%lld*%s", sign,
						 (long long)(d.k[i] < 0 ? -d.k[i] : d.k[i]), s);
	}
	if (used < n && (d.c || !d.k[0]))
		snprintf(buf + used, n - used, d.k[0] && d.c > 0 ? "+%lld" : "%lld", (long long)d.c);
	return buf;
}

char *
mkc_shape_str(const mkc_graph *g, const mkc_tensor *t, char *buf, size_t n)
{
	if (t->rank < 0) {
		snprintf(buf, n, "[?]");
		return buf;
	}
	size_t used = 0;
	buf[0] = 0;
	used += (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < t->rank && used < n; i++) {
		char d[96];
		used += (size_t)snprintf(buf + used, n - used, "%s%s",
					 i ? "," : "",
					 mkc_dim_str(g, t->shape[i], d, sizeof d));
	}
	if (used < n)
		snprintf(buf + used, n - used, "]");
	return buf;
}

/*
 * dim := term (('+'|'-') term)*
 * term := int | name | int '*' name | name '*' int
 */
static const char *
skip(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

static bool
parse_atom(mkc_graph *g, const char **sp, bool add, mkc_dim *d)
{
	const char *s = skip(*sp);
	if (isdigit((unsigned char)*s)) {
		char *end;
		errno = 0;
		long long v = strtoll(s, &end, 10);
		if (errno == ERANGE)
			return false;   /* 9223372036854775808 */
		*d = mkc_dim_const(v);
		*sp = end;
		return true;
	}
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	const char *b = s;
	while (isalnum((unsigned char)*s) || *s == '_' || *s == '.')
		s++;
	char *name = mkc_arena_strndup(g->ctx->arena, b, (size_t)(s - b));
	int sym = -1;
	for (int i = 0; i < g->syms.n; i++)
		if (strcmp(MKC_SYM(g, i), name) == 0)
			sym = i;
	if (sym < 0) {
		if (!add)
			return false;
		sym = mkc_graph_sym(g, name);
	}
	*d = mkc_dim_sym(sym);
	*sp = s;
	return true;
}

static bool
parse_term(mkc_graph *g, const char **sp, bool add, mkc_dim *d)
{
	if (!parse_atom(g, sp, add, d))
		return false;
	for (;;) {
		const char *s = skip(*sp);
		if (*s != '*')
			return true;
		s++;
		mkc_dim r;
		if (!parse_atom(g, &s, add, &r) || !mkc_dim_mul(*d, r, d))
			return false;
		*sp = s;
	}
}

static bool
parse_dim(mkc_graph *g, const char *s, bool add_syms, mkc_dim *d)
{
	if (!parse_term(g, &s, add_syms, d))
		return false;
	for (;;) {
		s = skip(s);
		if (!*s)
			return true;
		char op = *s++;
		if (op != '+' && op != '-')
			return false;
		mkc_dim r;
		if (!parse_term(g, &s, add_syms, &r))
			return false;
		if (!(op == '+' ? mkc_dim_add(*d, r, d) : mkc_dim_sub(*d, r, d)))
			return false;
	}
}

bool
mkc_dim_parse(mkc_graph *g, const char *str, bool add_syms, mkc_dim *d)
{
	int nsyms = g->syms.n;
	if (parse_dim(g, str, add_syms, d))
		return true;
	g->syms.n = nsyms;   /* a rejected dimension leaves no symbols behind */
	return false;
}

/* The graph. */

mkc_graph *
mkc_graph_create(mkc_ctx *c, const char *path)
{
	mkc_graph *g = mkc_arena_alloc(c->arena, sizeof *g);
	g->ctx = c;
	g->path = mkc_arena_strdup(c->arena, path ? path : "(memory)");
	const char *slash = strrchr(g->path, '/');
	g->dir = slash ? mkc_arena_strndup(c->arena, g->path,
					   (size_t)(slash - g->path))
		       : ".";
	g->name = "";
	g->producer = "";
	g->chunk_sym = -1;
	return g;
}

mkc_tensor *
mkc_graph_find(const mkc_graph *g, const char *name)
{
	return mkc_map_get(&g->by_name, name);
}

mkc_node *
mkc_graph_find_node(const mkc_graph *g, const char *name)
{
	for (int i = 0; i < g->nodes.n; i++)
		if (strcmp(MKC_NODE(g, i)->name, name) == 0)
			return MKC_NODE(g, i);
	return NULL;
}

mkc_tensor *
mkc_graph_tensor(mkc_graph *g, const char *name)
{
	mkc_tensor *t = mkc_graph_find(g, name);
	if (t)
		return t;
	mkc_arena *a = g->ctx->arena;
	t = mkc_arena_alloc(a, sizeof *t);
	t->name = mkc_arena_strdup(a, name);
	t->rank = -1;
	t->id = g->tensors.n;
	mkc_vec_push(a, &g->tensors, t);
	mkc_map_put(a, &g->by_name, t->name, t);
	return t;
}

mkc_node *
mkc_graph_add_node(mkc_graph *g, const char *name, const char *domain,
		   const char *op_type, int nin, int nout, int nattr)
{
	mkc_arena *a = g->ctx->arena;
	mkc_node *n = mkc_arena_alloc(a, sizeof *n);
	n->op_type = mkc_arena_strdup(a, op_type);
	n->domain = mkc_arena_strdup(a, domain ? domain : "");
	n->name = name && *name ? mkc_arena_strdup(a, name)
				: mkc_arena_printf(a, "%s_%d", op_type, g->nodes.n);
	n->op = mkc_op_lookup(n->domain, n->op_type);
	n->nin = nin;
	n->nout = nout;
	n->nattr = nattr;
	n->in = mkc_arena_alloc(a, (size_t)(nin + 1) * sizeof *n->in);
	n->out = mkc_arena_alloc(a, (size_t)(nout + 1) * sizeof *n->out);
	n->attr = mkc_arena_alloc(a, (size_t)(nattr + 1) * sizeof *n->attr);
	n->id = g->nodes.n;
	mkc_vec_push(a, &g->nodes, n);
	return n;
}

/* See graph.h. */
const char *
mkc_graph_fresh_name(mkc_graph *g, const char *base, const char *suffix)
{
	mkc_arena *a = g->ctx->arena;
	const char *first = mkc_arena_printf(a, "%s_%s", base, suffix), *name = first;
	for (int k = 1; mkc_graph_find(g, name); k++)
		name = mkc_arena_printf(a, "%s_%d", first, k);
	return name;
}

/* See graph.h. */
mkc_tensor *
mkc_graph_ints(mkc_graph *g, const char *name, int n, const mkc_dim *v)
{
	mkc_arena *a = g->ctx->arena;
	mkc_tensor *t = mkc_graph_tensor(g, name);
	t->kind = MKC_TK_WEIGHT;
	t->dtype = MKC_DT_INT64;
	t->rank = 1;
	t->shape[0] = mkc_dim_const(n);
	t->symval = mkc_arena_alloc(a, (size_t)n * sizeof *t->symval);
	t->nsymval = n;
	memcpy(t->symval, v, (size_t)n * sizeof *v);
	int64_t *c = mkc_arena_alloc(a, (size_t)n * sizeof *c);
	for (int i = 0; i < n; i++) {
		if (!mkc_dim_is_const(v[i]))
			return t;
		c[i] = v[i].c;
	}
	t->data = c;
	t->nbytes = (size_t)n * sizeof *c;
	return t;
}

/* See graph.h. */
void
mkc_node_add_attr(mkc_graph *g, mkc_node *n, mkc_attr a)
{
	mkc_attr *at = mkc_arena_alloc(g->ctx->arena, (size_t)(n->nattr + 1) * sizeof *at);
	if (n->nattr)
		memcpy(at, n->attr, (size_t)n->nattr * sizeof *at);
	at[n->nattr] = a;
	n->attr = at;
	n->nattr++;
}

/* See graph.h. */
void
mkc_graph_move_before(mkc_graph *g, mkc_node *n, const mkc_node *at)
{
	int pos = at->id;
	MKC_ASSERT(n->id == g->nodes.n - 1 && pos < n->id);
	for (int i = n->id; i > pos; i--) {
		g->nodes.v[i] = g->nodes.v[i - 1];
		MKC_NODE(g, i)->id = i;
	}
	g->nodes.v[pos] = n;
	n->id = pos;
}

int
mkc_graph_find_sym(const mkc_graph *g, const char *name, size_t len)
{
	for (int i = 0; i < g->syms.n; i++)
		if (strlen(MKC_SYM(g, i)) == len && strncmp(MKC_SYM(g, i), name, len) == 0)
			return i;
	return -1;
}

int
mkc_graph_sym(mkc_graph *g, const char *name)
{
	int s = mkc_graph_find_sym(g, name, strlen(name));
	if (s >= 0)
		return s;
	mkc_vec_push(g->ctx->arena, &g->syms, mkc_arena_strdup(g->ctx->arena, name));
	return g->syms.n - 1;
}

int64_t
mkc_graph_sym_max(const mkc_graph *g, int s, int64_t dflt)
{
	int64_t mx = dflt;
	if (s == g->chunk_sym && g->max_chunk)
		mx = g->max_chunk;
	for (int k = 0; k < g->states.n; k++) {
		const mkc_state *st = MKC_STATE(g, k);
		/* a step appends at least one position: a constant count, or S >= 1 */
		int64_t least = mkc_dim_is_const(st->nnew) ? st->nnew.c : 1;
		if (st->sym == s && g->kv_cap - least < mx)
			mx = g->kv_cap - least;
		if (mkc_dim_uses(st->nnew, s, NULL) && g->kv_cap < mx)
			mx = g->kv_cap;
	}
	return mx;
}

/* The symbol of input_ids' second axis, when it is [B, S] with S a symbol; else -1. */
static int
ids_sym(const mkc_graph *g)
{
	const mkc_tensor *ids = mkc_graph_find(g, "input_ids");
	return ids && ids->kind == MKC_TK_INPUT && ids->rank == 2 ? mkc_dim_bare_sym(ids->shape[1])
								  : -1;
}

int
mkc_graph_chunk_sym(const mkc_graph *g)
{
	int own = -1;   /* the S of a present whose length is a symbol of its own */
	for (int o = 0; o < g->outputs.n; o++) {
		const mkc_tensor *y = MKC_OUTPUT(g, o);
		for (int d = 0; d < y->rank; d++) {
			mkc_dim x = y->shape[d];
			int t0 = mkc_dim_bare_sym(x);
			if (t0 < 0 && (mkc_dim_nterms(x) != 2 || x.c || x.k[0] != 1 || x.k[1] != 1))
				continue;
			/* the past: an input shaped as y but P along d */
			for (int i = 0; i < g->inputs.n; i++) {
				const mkc_tensor *in = MKC_INPUT(g, i);
				bool same = in->rank == y->rank;
				for (int e = 0; same && e < y->rank; e++)
					same = e == d || mkc_dim_eq(in->shape[e], y->shape[e]);
				int p = same ? mkc_dim_bare_sym(in->shape[d]) : -1;
				if (t0 >= 0) {
					if (p >= 0 && p != t0 && ids_sym(g) != p && ids_sym(g) != t0)
						own = ids_sym(g);
					continue;
				}
				for (int t = 0; same && t < 2; t++)
					if (mkc_dim_eq(in->shape[d], mkc_dim_sym(x.sym[t])))
						return x.sym[1 - t];
			}
		}
	}
	return own;
}

/* by's symbols as they are numbered once s is dropped (keep: as before) */
static mkc_dim
renumbered(mkc_dim by, int s, bool keep)
{
	for (int i = 0; i < MKC_DIM_TERMS; i++)
		if (by.k[i] && !keep && by.sym[i] > s)
			by.sym[i]--;
	return by;
}

bool
mkc_dim_subst(mkc_dim *d, int s, mkc_dim by, bool keep)
{
	if (mkc_dim_is_unknown(*d))
		return true;
	mkc_dim r = mkc_dim_const(d->c), b = renumbered(by, s, keep);
	for (int i = 0; i < MKC_DIM_TERMS; i++) {
		if (!d->k[i])
			continue;
		mkc_dim t;
		if (d->sym[i] == s) {
			if (!mkc_dim_mul(b, mkc_dim_const(d->k[i]), &t))
				return false;
		} else {
			t = mkc_dim_sym(d->sym[i] - (!keep && d->sym[i] > s));
			t.k[0] = d->k[i];
		}
		if (!mkc_dim_add(r, t, &r))
			return false;
	}
	*d = r;
	return true;
}

bool
mkc_graph_subst_sym(mkc_graph *g, int s, mkc_dim by, bool keep)
{
	MKC_ASSERT(!mkc_dim_uses(by, s, NULL));
	/* every dimension first, so that a failure changes nothing */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < g->tensors.n; i++) {
			mkc_tensor *t = MKC_TENSOR(g, i);
			for (int d = 0; d < t->rank + (int)t->nsymval; d++) {
				mkc_dim *x = d < t->rank ? &t->shape[d] : &t->symval[d - t->rank];
				mkc_dim y = *x;
				if (!mkc_dim_subst(&y, s, by, keep))
					return false;
				if (pass)
					*x = y;
			}
		}
	}
	if (!keep) {
		for (int i = s + 1; i < g->syms.n; i++)
			g->syms.v[i - 1] = g->syms.v[i];
		g->syms.n--;
	}
	return true;
}

void
mkc_graph_fix_sym(mkc_graph *g, int s, int64_t v, bool keep)
{
	bool ok = mkc_graph_subst_sym(g, s, mkc_dim_const(v), keep);
	MKC_ASSERT(ok);
}

int64_t
mkc_graph_opset(const mkc_graph *g, const char *domain)
{
	for (int i = 0; i < g->nopsets; i++)
		if (same_domain(g->opsets[i].domain, domain))
			return g->opsets[i].version;
	return 0;
}

void
mkc_graph_count_uses(mkc_graph *g)
{
	for (int i = 0; i < g->tensors.n; i++)
		MKC_TENSOR(g, i)->nconsumers = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		for (int j = 0; j < n->nin; j++)
			if (n->in[j])
				n->in[j]->nconsumers++;
	}
	for (int i = 0; i < g->outputs.n; i++)
		MKC_OUTPUT(g, i)->nconsumers++;
}

void
mkc_graph_count_live_uses(mkc_graph *g)
{
	for (int i = 0; i < g->tensors.n; i++)
		MKC_TENSOR(g, i)->nconsumers = 0;
	for (int i = 0; i < g->nodes.n; i++)
		if (!MKC_NODE(g, i)->dead)
			mkc_node_count_reads(MKC_NODE(g, i), 1);
	for (int i = 0; i < g->outputs.n; i++)
		MKC_OUTPUT(g, i)->nconsumers++;
}

void
mkc_node_count_reads(mkc_node *n, int delta)
{
	for (int j = 0; j < n->nin; j++)
		if (n->in[j])
			n->in[j]->nconsumers += delta;
}

bool
mkc_tensor_same_shape(const mkc_tensor *a, const mkc_tensor *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (!mkc_dim_eq(a->shape[i], b->shape[i]))
			return false;
	return true;
}

/*
 * Kahn's algorithm, stable: among ready nodes the one that came first in the
 * file goes first, so a graph that is already ordered keeps its order. A node
 * left over sits on a cycle or behind one; the error names the nodes.
 */
int
mkc_graph_sort(mkc_graph *g)
{
	mkc_arena *a = g->ctx->arena;
	int nn = g->nodes.n;
	int *pending = mkc_arena_alloc(a, (size_t)(nn + 1) * sizeof *pending);
	mkc_vec *users = mkc_arena_alloc(a, (size_t)(g->tensors.n + 1) * sizeof *users);
	for (int i = 0; i < nn; i++) {
		mkc_node *n = MKC_NODE(g, i);
		n->id = i;
		for (int j = 0; j < n->nin; j++) {
			mkc_tensor *t = n->in[j];
			if (t && t->producer) {
				pending[i]++;
				mkc_vec_push(a, &users[t->id], n);
			}
		}
	}
	/* a min-heap would be O(n log n); a ready list scanned in id order is
	 * fine for graphs of a few thousand nodes and keeps the file order */
	mkc_node **order = mkc_arena_alloc(a, (size_t)(nn + 1) * sizeof *order);
	char *done = mkc_arena_alloc(a, (size_t)nn + 1);
	int *ready = mkc_arena_alloc(a, (size_t)(nn + 1) * sizeof *ready);
	int nready = 0, norder = 0;
	for (int i = 0; i < nn; i++)
		if (!pending[i])
			ready[nready++] = i;
	while (nready) {
		/* take the smallest id: keeps an ordered file as it is */
		int best = 0;
		for (int r = 1; r < nready; r++)
			if (ready[r] < ready[best])
				best = r;
		int i = ready[best];
		ready[best] = ready[--nready];
		mkc_node *n = MKC_NODE(g, i);
		order[norder++] = n;
		done[i] = 1;
		for (int j = 0; j < n->nout; j++) {
			mkc_tensor *t = n->out[j];
			if (!t)
				continue;
			mkc_vec *u = &users[t->id];
			for (int k = 0; k < u->n; k++) {
				mkc_node *m = u->v[k];
				if (--pending[m->id] == 0)
					ready[nready++] = m->id;
			}
		}
	}
	if (norder < nn) {
		char list[512] = "";
		size_t len = 0;
		int shown = 0;
		for (int i = 0; i < nn && shown < 8; i++)
			if (!done[i]) {
				len += (size_t)snprintf(list + len, sizeof list - len,
					"%s'%s'", shown ? ", " : "", MKC_NODE(g, i)->name);
				if (len >= sizeof list)
					break;
				shown++;
			}
		return mkc_error(g->ctx, "%s: the graph has a cycle through %d node(s): %s%s",
				 g->path, nn - norder, list,
				 nn - norder > shown ? ", ..." : "");
	}
	for (int i = 0; i < nn; i++) {
		order[i]->id = i;
		g->nodes.v[i] = order[i];
	}
	return 0;
}

const mkc_attr *
mkc_node_attr(const mkc_node *n, const char *name)
{
	for (int i = 0; i < n->nattr; i++)
		if (strcmp(n->attr[i].name, name) == 0)
			return &n->attr[i];
	return NULL;
}

int64_t
mkc_node_attr_int(const mkc_node *n, const char *name, int64_t dflt)
{
	const mkc_attr *a = mkc_node_attr(n, name);
	return a && a->type == MKC_AT_INT ? a->i : dflt;
}

float
mkc_node_attr_float(const mkc_node *n, const char *name, float dflt)
{
	const mkc_attr *a = mkc_node_attr(n, name);
	return a && a->type == MKC_AT_FLOAT ? a->f : dflt;
}

/*
 * A norm's epsilon: its attribute, or the op's default, which is 1e-5
 * except for com.microsoft's SkipSimplifiedLayerNormalization, where
 * onnxruntime takes 1e-12 (found by tools/difftest.py).
 */
float
mkc_node_epsilon(const mkc_node *n)
{
	return mkc_node_attr_float(n, "epsilon", n->op == MKC_OP_MS_SKIP_SIMPLIFIED_LN ? 1e-12f : 1e-5f);
}

int
mkc_node_error(const mkc_graph *g, const mkc_node *n, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return mkc_error(g->ctx, "%s: node '%s' (%s): %s", g->path, n->name,
			 n->op_type, msg);
}

bool
mkc_op_input_required(const mkc_op_info *oi, int i)
{
	if (oi->max_in < 0)
		return true;   /* Concat, Max, Min: every input counts */
	return i < oi->min_in && !(oi->optional_in >> i & 1);
}

/*
 * The type of each attribute the supported ops read, by name: ONNX gives
 * each name one type across these ops. A name not listed is not read.
 */
static const struct {
	const char *name;
	mkc_attr_type type;
} attr_types[] = {
	{"alpha", MKC_AT_FLOAT}, {"beta", MKC_AT_FLOAT}, {"epsilon", MKC_AT_FLOAT},
	{"scale", MKC_AT_FLOAT}, {"softcap", MKC_AT_FLOAT}, {"value_float", MKC_AT_FLOAT},
	{"qk_norm_epsilon", MKC_AT_FLOAT},
	{"allowzero", MKC_AT_INT}, {"axis", MKC_AT_INT}, {"do_rotary", MKC_AT_INT},
	{"end", MKC_AT_INT}, {"interleaved", MKC_AT_INT}, {"is_causal", MKC_AT_INT},
	{"keepdims", MKC_AT_INT}, {"kv_num_heads", MKC_AT_INT}, {"q_num_heads", MKC_AT_INT},
	{"local_window_size", MKC_AT_INT}, {"noop_with_empty_axes", MKC_AT_INT},
	{"num_heads", MKC_AT_INT}, {"qk_output", MKC_AT_INT}, {"rotary_embedding_dim", MKC_AT_INT},
	{"rotary_interleaved", MKC_AT_INT}, {"smooth_softmax", MKC_AT_INT}, {"start", MKC_AT_INT},
	{"stash_type", MKC_AT_INT}, {"to", MKC_AT_INT}, {"transA", MKC_AT_INT},
	{"transB", MKC_AT_INT}, {"value_int", MKC_AT_INT}, {"mkc_trans_b", MKC_AT_INT},
	{"axes", MKC_AT_INTS}, {"ends", MKC_AT_INTS}, {"perm", MKC_AT_INTS}, {"split", MKC_AT_INTS},
	{"starts", MKC_AT_INTS}, {"value_ints", MKC_AT_INTS}, {"value_floats", MKC_AT_FLOATS},
	{"value", MKC_AT_TENSOR},
};

static const char *
attr_type_name(mkc_attr_type t)
{
	static const char *const names[] = {"FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS",
					    "INTS", "STRINGS", "TENSORS", "GRAPHS", "SPARSE_TENSOR",
					    "TYPE_PROTO", "another type"};
	return names[t];
}

int
mkc_node_check_schema(const mkc_graph *g, const mkc_node *n)
{
	if (n->op == MKC_OP_UNKNOWN)
		return 0;
	const mkc_op_info *oi = mkc_op_info_of(n->op);
	for (int i = 0; i < n->nin; i++)
		if (!n->in[i] && mkc_op_input_required(oi, i))
			return mkc_node_error(g, n, "input %d is left out (\"\"), but %s requires it", i,
					      n->op_type);
	if (n->nin < oi->min_in || (oi->max_in >= 0 && n->nin > oi->max_in))
		return mkc_node_error(g, n, "has %d inputs; %s takes %d to %d", n->nin, n->op_type,
				      oi->min_in, oi->max_in);
	if (n->nout < oi->min_out || (oi->max_out >= 0 && n->nout > oi->max_out))
		return mkc_node_error(g, n, "has %d outputs; %s gives %d to %d", n->nout, n->op_type,
				      oi->min_out, oi->max_out);
	for (int i = 0; i < n->nout; i++)
		if (!n->out[i] && i < oi->min_out)
			return mkc_node_error(g, n, "output %d is left out (\"\"), but %s gives it", i,
					      n->op_type);
	for (int i = 0; i < n->nattr; i++) {
		const mkc_attr *a = &n->attr[i];
		for (size_t k = 0; k < sizeof attr_types / sizeof *attr_types; k++)
			if (strcmp(a->name, attr_types[k].name) == 0 && a->type != attr_types[k].type)
				return mkc_node_error(g, n, "attribute '%s' must be %s, not %s", a->name,
						      attr_type_name(attr_types[k].type),
						      attr_type_name(a->type));
		for (int k = 0; k < i; k++)
			if (strcmp(a->name, n->attr[k].name) == 0)
				return mkc_node_error(g, n, "attribute '%s' is given twice", a->name);
	}
	return 0;
}

int64_t
mkc_tensor_numel(const mkc_tensor *t)
{
	if (t->rank < 0)
		return -1;
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++) {
		if (!mkc_dim_is_const(t->shape[i]) || !mkc_mul_ok(n, t->shape[i].c, &n))
			return -1;
	}
	return n;
}

bool
mkc_tensor_is_const(const mkc_tensor *t)
{
	return t->data != NULL || t->symval != NULL ||
	       (t->kind == MKC_TK_WEIGHT && t->nbytes == 0);
}

int
mkc_graph_bind_input(mkc_graph *g, const char *name, const mkc_tensor *value)
{
	mkc_tensor *t = mkc_graph_find(g, name);
	int at = -1;
	for (int i = 0; i < g->inputs.n; i++)
		if (MKC_INPUT(g, i) == t)
			at = i;
	if (!t || at < 0)
		return mkc_error(g->ctx, "%s: no graph input is called '%s'", g->path, name);
	if (t->dtype != value->dtype || t->rank != value->rank)
		return mkc_error(g->ctx, "%s: input '%s' is %s of rank %d; the value given is %s of rank %d",
				 g->path, name, mkc_dtype_name(t->dtype), t->rank,
				 mkc_dtype_name(value->dtype), value->rank);
	for (int i = 0; i < t->rank; i++) {
		if (mkc_dim_is_const(t->shape[i]) && !mkc_dim_eq(t->shape[i], value->shape[i]))
			return mkc_error(g->ctx, "%s: input '%s' dim %d is %lld; the value has %lld",
					 g->path, name, i, (long long)t->shape[i].c,
					 (long long)value->shape[i].c);
		t->shape[i] = value->shape[i];
	}
	t->kind = MKC_TK_WEIGHT;
	t->data = value->data;
	t->nbytes = value->nbytes;
	mkc_vec_remove(&g->inputs, t);
	return 0;
}

/* The live nodes' reads of t, or -1 when one of them is not ok(node, input). */
static int
reads_if(const mkc_graph *g, const mkc_tensor *t, bool (*ok)(const mkc_node *n, int input))
{
	int reads = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		for (int j = 0; !n->dead && j < n->nin; j++) {
			if (n->in[j] != t)
				continue;
			if (!ok(n, j))
				return -1;
			reads++;
		}
	}
	return reads;
}

bool
mkc_graph_readers_all(const mkc_graph *g, const mkc_tensor *t,
		      bool (*ok)(const mkc_node *n, int input))
{
	return reads_if(g, t, ok) >= 0;
}

bool
mkc_graph_read_only_by(const mkc_graph *g, const mkc_tensor *t,
		       bool (*ok)(const mkc_node *n, int input))
{
	return reads_if(g, t, ok) > 0;
}

mkc_node *
mkc_graph_sole_reader(const mkc_graph *g, const mkc_tensor *t)
{
	mkc_node *r = NULL;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		for (int j = 0; !n->dead && j < n->nin; j++) {
			if (n->in[j] != t)
				continue;
			if (r || j != 0)
				return NULL;
			r = n;
		}
	}
	return r;
}

static bool
runtime_input(const mkc_node *n, int input)
{
	return input >= 32 || !(mkc_op_info_of(n->op)->const_inputs >> input & 1);
}

bool
mkc_graph_needs_const(const mkc_graph *g, const mkc_tensor *t)
{
	return !mkc_graph_readers_all(g, t, runtime_input);
}

/* See graph.h. */
int64_t
mkc_const_dims(mkc_graph *g, const mkc_node *n, int input, mkc_dim *v,
	       int64_t max, bool allow_sym)
{
	const mkc_tensor *t = n->in[input];
	if (!t || !mkc_tensor_is_const(t) || t->rank < 0 ||
	    (t->dtype != MKC_DT_INT64 && t->dtype != MKC_DT_INT32))
		return mkc_node_error(g, n, "input %d ('%s') must be an integer tensor known at compile time",
				      input, t ? t->name : "");
	int64_t cnt = mkc_tensor_numel(t);
	if (cnt < 0 || cnt > max)
		return mkc_node_error(g, n, "input '%s' holds too many values", t->name);
	for (int64_t i = 0; i < cnt; i++) {
		if (t->symval) {
			v[i] = t->symval[i];
		} else if (t->dtype == MKC_DT_INT64) {
			int64_t x;
			memcpy(&x, (const char *)t->data + 8 * i, 8);
			v[i] = mkc_dim_const(x);
		} else {
			int32_t x;
			memcpy(&x, (const char *)t->data + 4 * i, 4);
			v[i] = mkc_dim_const(x);
		}
		if (!allow_sym && !mkc_dim_is_const(v[i])) {
			char b[64];
			return mkc_node_error(g, n, "input '%s' must be a constant but holds %s",
					      t->name, mkc_dim_str(g, v[i], b, sizeof b));
		}
	}
	return cnt;
}

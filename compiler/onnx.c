/*
 * onnx.c - the ONNX frontend: a binary ModelProto into the graph IR.
 *
 * The protobuf reader is generated at build time by protoc-c from the
 * onnx.proto that Debian's libonnx-dev ships. protobuf-c unpacks into memory
 * from the compilation's arena (a custom allocator whose free does nothing),
 * so the unpacked message and every raw_data block it holds live exactly as
 * long as the graph that points into them: inline weights are not copied a
 * second time. External data files are mapped, not read. The ONNX-JSON
 * frontend (onnx_json.c) decodes into the same structs and builds the graph
 * through mkc_onnx_read_model (reader.h).
 *
 * What is checked here, each with an error naming the file (and the node or
 * tensor): that the bytes are a model with a graph; element types and shapes
 * of inputs, outputs and initializers; that stored data matches its declared
 * size; that external data stays inside the model's folder and fits in its
 * file; that every node input is defined; that no tensor has two producers;
 * the input and output counts of known ops; cycles (mkc_graph_sort). Nodes of
 * ops outside the op table are kept (mkc info reports them); the compile
 * driver refuses them.
 */
#include "files.h"
#include "reader.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mkc reads ONNX tensors as little-endian bytes; port the byte swaps first"
#endif

typedef struct {
	mkc_graph *g;
	mkc_ctx *c;
	const char *what;   /* "initializer 'w'", "node 'n' attribute 'value'" */
} reader;

static void *
pb_alloc(void *data, size_t n)
{
	return mkc_arena_alloc(data, n);
}

static void
pb_free(void *data, void *p)
{
	(void)data;
	(void)p;   /* the arena frees everything at once */
}

static const char *
str(const char *s)
{
	return s ? s : "";
}

static int
fail(reader *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = mkc_verror_at(r->c, mkc_arena_printf(r->c->arena, "%s: %s: ", r->g->path, r->what),
			       fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * External data: the location must be a relative path below the model's
 * folder (no absolute path, no '..', and after resolving links still inside
 * it), and offset + length must lie within the file.
 */
static int
read_external(reader *r, const Onnx__TensorProto *tp, size_t want,
	      mkc_tensor *t)
{
	const char *loc = NULL;
	uint64_t offset = 0, length = 0;
	bool has_length = false;
	for (size_t i = 0; i < tp->n_external_data; i++) {
		const char *k = str(tp->external_data[i]->key);
		const char *v = str(tp->external_data[i]->value);
		char *end;
		if (strcmp(k, "location") == 0) {
			loc = v;
		} else if (strcmp(k, "offset") == 0 || strcmp(k, "length") == 0) {
			errno = 0;
			unsigned long long x = strtoull(v, &end, 10);
			if (!*v || *end || errno || *v == '-')
				return fail(r, "external data %s '%s' is not a byte count", k, v);
			if (k[0] == 'o') {
				offset = x;
			} else {
				length = x;
				has_length = true;
			}
		}
	}
	if (!loc || !*loc)
		return fail(r, "external data has no location");
	if (loc[0] == '/')
		return fail(r, "external data location '%s' is an absolute path; it must lie inside the model's folder", loc);
	for (const char *p = loc; *p;) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return fail(r, "external data location '%s' leaves the model's folder", loc);
		p += n + (e != NULL);
	}
	char *path = mkc_arena_printf(r->c->arena, "%s/%s", r->g->dir, loc);
	char real_dir[PATH_MAX], real_file[PATH_MAX];
	if (!realpath(path, real_file))
		return fail(r, "external data file '%s': %s", path, strerror(errno));
	if (!realpath(r->g->dir, real_dir))
		return fail(r, "model folder '%s': %s", r->g->dir, strerror(errno));
	size_t dl = strlen(real_dir);
	if (strncmp(real_file, real_dir, dl) != 0 ||
	    (real_file[dl] != '/' && strcmp(real_dir, "/") != 0))
		return fail(r, "external data location '%s' resolves outside the model's folder", loc);
	if (has_length && length != want)
		return fail(r, "external data length %llu does not match the %zu bytes its shape and type need",
			    (unsigned long long)length, want);
	const void *data;
	size_t size;
	const char *err;
	if (mkc_file_map(r->c->arena, path, &data, &size, &err) != 0)
		return fail(r, "external data file '%s': %s", path, err);
	if (offset > size || size - offset < want)
		return fail(r, "external data file '%s' holds %zu bytes, too short for %zu bytes at offset %llu",
			    path, size, want, (unsigned long long)offset);
	t->data = (const unsigned char *)data + offset;
	t->nbytes = want;
	t->ext_file = path;
	t->ext_offset = offset;
	return 0;
}

/* Narrows the int32_data form (one element per int32) to dense bytes. */
static void
narrow_int32(const int32_t *src, size_t n, mkc_dtype dt, void *dst)
{
	for (size_t i = 0; i < n; i++) {
		switch (dt) {
		case MKC_DT_INT8:
		case MKC_DT_UINT8:
		case MKC_DT_BOOL:
			((uint8_t *)dst)[i] = (uint8_t)src[i];
			break;
		case MKC_DT_INT16:
		case MKC_DT_UINT16:
		case MKC_DT_FLOAT16:
		case MKC_DT_BFLOAT16:
			((uint16_t *)dst)[i] = (uint16_t)src[i];
			break;
		default:
			((int32_t *)dst)[i] = src[i];
			break;
		}
	}
}

/* Typed storage: which repeated field holds which element type. */
static int
read_typed(reader *r, const Onnx__TensorProto *tp, mkc_dtype dt, size_t numel,
	   mkc_tensor *t)
{
	size_t esz = mkc_dtype_size(dt);
	size_t have;
	const void *src;
	switch (dt) {
	case MKC_DT_FLOAT:
		have = tp->n_float_data, src = tp->float_data;
		break;
	case MKC_DT_INT64:
		have = tp->n_int64_data, src = tp->int64_data;
		break;
	case MKC_DT_DOUBLE:
		have = tp->n_double_data, src = tp->double_data;
		break;
	case MKC_DT_UINT32:
	case MKC_DT_UINT64:
		have = tp->n_uint64_data, src = tp->uint64_data;
		break;
	default:
		have = tp->n_int32_data, src = tp->int32_data;
		break;
	}
	if (have != numel)
		return fail(r, "holds %zu values but its shape needs %zu", have, numel);
	void *dst = mkc_arena_alloc(r->c->arena, numel * esz);
	if (dt == MKC_DT_UINT32) {
		for (size_t i = 0; i < numel; i++)
			((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i];
	} else if (src == tp->int32_data) {
		narrow_int32(tp->int32_data, numel, dt, dst);
	} else if (numel) {
		memcpy(dst, src, numel * esz);
	}
	t->data = dst;
	t->nbytes = numel * esz;
	return 0;
}

/* Fills t (type, shape, bytes) from a TensorProto. */
static int
read_tensor(reader *r, const Onnx__TensorProto *tp, mkc_tensor *t)
{
	if (!mkc_dtype_valid(tp->data_type))
		return fail(r, "element type %d is not one mkc reads", tp->data_type);
	mkc_dtype dt = (mkc_dtype)tp->data_type;
	if (dt == MKC_DT_STRING)
		return fail(r, "string tensors are not supported");
	if (tp->n_dims > MKC_MAX_RANK)
		return fail(r, "rank %zu exceeds mkc's limit of %d", tp->n_dims, MKC_MAX_RANK);
	if (tp->segment)
		return fail(r, "segmented tensors are not supported");
	size_t numel = 1;
	for (size_t i = 0; i < tp->n_dims; i++) {
		if (tp->dims[i] < 0)
			return fail(r, "dimension %zu is negative (%lld)", i, (long long)tp->dims[i]);
		if (tp->dims[i] && numel > SIZE_MAX / 16 / (size_t)tp->dims[i])
			return fail(r, "is too large");
		numel *= (size_t)tp->dims[i];
		t->shape[i] = mkc_dim_const(tp->dims[i]);
	}
	t->dtype = dt;
	t->rank = (int)tp->n_dims;
	size_t want = numel * mkc_dtype_size(dt);
	if (tp->has_data_location &&
	    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return read_external(r, tp, want, t);
	if (tp->has_raw_data) {
		if (tp->raw_data.len != want)
			return fail(r, "raw_data holds %zu bytes but its shape and type need %zu",
				    tp->raw_data.len, want);
		t->data = tp->raw_data.data;
		t->nbytes = want;
		return 0;
	}
	return read_typed(r, tp, dt, numel, t);
}

/* A tensor that belongs to an attribute, not to the graph's name space. */
static mkc_tensor *
attr_tensor(reader *r, const Onnx__TensorProto *tp)
{
	mkc_tensor *t = mkc_arena_alloc(r->c->arena, sizeof *t);
	t->name = mkc_arena_strdup(r->c->arena, str(tp->name));
	t->kind = MKC_TK_WEIGHT;
	t->id = -1;
	return read_tensor(r, tp, t) == 0 ? t : NULL;
}

static mkc_subgraph *
summarise(mkc_arena *a, const Onnx__GraphProto *gp)
{
	mkc_subgraph *s = mkc_arena_alloc(a, sizeof *s);
	s->name = mkc_arena_strdup(a, str(gp->name));
	s->nnodes = (int)gp->n_node;
	s->ninputs = (int)gp->n_input;
	s->noutputs = (int)gp->n_output;
	return s;
}

/* A bytes field as a NUL-terminated copy; protobuf-c leaves an empty one NULL. */
static char *
bytes_str(mkc_arena *a, ProtobufCBinaryData b)
{
	return mkc_arena_strndup(a, b.len ? (const char *)b.data : "", b.len);
}

static int
read_attr(reader *r, const Onnx__AttributeProto *ap, mkc_attr *at)
{
	mkc_arena *a = r->c->arena;
	at->name = mkc_arena_strdup(a, str(ap->name));
	at->n = 0;
	switch (ap->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
		at->type = MKC_AT_FLOAT;
		at->f = ap->f;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
		at->type = MKC_AT_INT;
		at->i = ap->i;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
		at->type = MKC_AT_STRING;
		at->s = bytes_str(a, ap->s);
		at->slen = ap->s.len;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
		at->type = MKC_AT_TENSOR;
		if (!ap->t)
			return fail(r, "attribute '%s' of type TENSOR holds no tensor", at->name);
		if (!(at->t = attr_tensor(r, ap->t)))
			return -1;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
		at->type = MKC_AT_GRAPH;
		if (!ap->g)
			return fail(r, "attribute '%s' of type GRAPH holds no graph", at->name);
		at->g = summarise(a, ap->g);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
		at->type = MKC_AT_FLOATS;
		at->n = (int)ap->n_floats;
		at->floats = mkc_arena_alloc(a, ap->n_floats * sizeof(float));
		if (ap->n_floats)   /* absent lists are NULL */
			memcpy(at->floats, ap->floats, ap->n_floats * sizeof(float));
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
		at->type = MKC_AT_INTS;
		at->n = (int)ap->n_ints;
		at->ints = mkc_arena_alloc(a, ap->n_ints * sizeof(int64_t));
		if (ap->n_ints)
			memcpy(at->ints, ap->ints, ap->n_ints * sizeof(int64_t));
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
		at->type = MKC_AT_STRINGS;
		at->n = (int)ap->n_strings;
		at->strings = mkc_arena_alloc(a, ap->n_strings * sizeof(char *));
		for (size_t i = 0; i < ap->n_strings; i++)
			at->strings[i] = bytes_str(a, ap->strings[i]);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
		at->type = MKC_AT_TENSORS;
		at->n = (int)ap->n_tensors;
		at->tensors = mkc_arena_alloc(a, ap->n_tensors * sizeof(mkc_tensor *));
		for (size_t i = 0; i < ap->n_tensors; i++)
			if (!(at->tensors[i] = attr_tensor(r, ap->tensors[i])))
				return -1;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
		at->type = MKC_AT_GRAPHS;
		at->n = (int)ap->n_graphs;
		at->graphs = mkc_arena_alloc(a, ap->n_graphs * sizeof(mkc_subgraph *));
		for (size_t i = 0; i < ap->n_graphs; i++)
			at->graphs[i] = summarise(a, ap->graphs[i]);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR:
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS:
		at->type = MKC_AT_SPARSE_TENSOR;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
		at->type = MKC_AT_TYPE_PROTO;
		break;
	default:
		if (ap->ref_attr_name)
			return fail(r, "attribute '%s' refers to a function attribute; functions are not supported", at->name);
		return fail(r, "attribute '%s' has an unknown type %d", at->name, (int)ap->type);
	}
	return 0;
}

/* Type and shape of a graph input or output. */
static int
read_value_info(reader *r, const Onnx__ValueInfoProto *vi, mkc_tensor *t,
		bool add_syms)
{
	const Onnx__TypeProto *tp = vi->type;
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
		return fail(r, "is not a tensor (sequences, maps and optionals are not supported)");
	const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
	if (!tt->has_elem_type || !mkc_dtype_valid(tt->elem_type))
		return fail(r, "has no element type mkc reads (%d)", tt->has_elem_type ? tt->elem_type : 0);
	t->dtype = (mkc_dtype)tt->elem_type;
	if (!tt->shape) {
		if (add_syms)
			return fail(r, "has no shape; mkc needs the rank of every graph input");
		return 0;   /* an output's shape comes from inference */
	}
	if (tt->shape->n_dim > MKC_MAX_RANK)
		return fail(r, "rank %zu exceeds mkc's limit of %d", tt->shape->n_dim, MKC_MAX_RANK);
	t->rank = (int)tt->shape->n_dim;
	for (size_t i = 0; i < tt->shape->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			if (d->dim_value < 0)
				return fail(r, "dimension %zu is negative", i);
			t->shape[i] = mkc_dim_const(d->dim_value);
		} else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			   mkc_dim_parse(r->g, d->dim_param, add_syms, &t->shape[i])) {
			/* a size that is negative, or shrinks as its symbol grows, is no size */
			mkc_dim p = t->shape[i];
			if (mkc_dim_negative(p))
				return fail(r, "dimension %zu ('%s') is negative", i, d->dim_param);
		} else if (add_syms) {
			/* an unnamed or unparsable dimension is a symbol of its own */
			const char *nm = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
				? d->dim_param
				: mkc_arena_printf(r->c->arena, "%s.dim%zu", t->name, i);
			t->shape[i] = mkc_dim_sym(mkc_graph_sym(r->g, nm));
		} else {
			/* a declared output dimension we cannot read: inference decides */
			t->shape[i] = mkc_dim_unknown();
		}
	}
	return 0;
}

static int
read_opsets(reader *r, const Onnx__ModelProto *m)
{
	mkc_graph *g = r->g;
	g->nopsets = (int)m->n_opset_import;
	g->opsets = mkc_arena_alloc(r->c->arena, (m->n_opset_import + 1) * sizeof *g->opsets);
	for (size_t i = 0; i < m->n_opset_import; i++) {
		g->opsets[i].domain = mkc_arena_strdup(r->c->arena, str(m->opset_import[i]->domain));
		g->opsets[i].version = m->opset_import[i]->version;
	}
	if (!mkc_graph_opset(g, "")) {
		r->what = "model";
		return fail(r, "imports no ai.onnx opset");
	}
	return 0;
}

static int
read_initializers(reader *r, const Onnx__GraphProto *gp)
{
	mkc_graph *g = r->g;
	if (gp->n_sparse_initializer) {
		r->what = "graph";
		return fail(r, "sparse initializers are not supported");
	}
	for (size_t i = 0; i < gp->n_initializer; i++) {
		const Onnx__TensorProto *tp = gp->initializer[i];
		r->what = mkc_arena_printf(r->c->arena, "initializer '%s'", str(tp->name));
		if (!tp->name || !*tp->name)
			return fail(r, "has no name");
		if (mkc_graph_find(g, tp->name))
			return fail(r, "is defined twice");
		mkc_tensor *t = mkc_graph_tensor(g, tp->name);
		t->kind = MKC_TK_WEIGHT;
		t->initializer = true;
		if (read_tensor(r, tp, t) != 0)
			return -1;
	}
	return 0;
}

static int
read_io(reader *r, const Onnx__GraphProto *gp)
{
	mkc_graph *g = r->g;
	mkc_arena *a = r->c->arena;
	for (size_t i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		r->what = mkc_arena_printf(a, "input '%s'", str(vi->name));
		mkc_tensor *t = mkc_graph_find(g, str(vi->name));
		if (t && t->kind == MKC_TK_WEIGHT)
			continue;   /* IR < 4 lists initializers as inputs too */
		if (t)
			return fail(r, "is listed twice");
		t = mkc_graph_tensor(g, str(vi->name));
		t->kind = MKC_TK_INPUT;
		if (read_value_info(r, vi, t, true) != 0)
			return -1;
		mkc_vec_push(a, &g->inputs, t);
	}
	for (size_t i = 0; i < gp->n_output; i++) {
		const Onnx__ValueInfoProto *vi = gp->output[i];
		r->what = mkc_arena_printf(a, "output '%s'", str(vi->name));
		mkc_tensor *t = mkc_graph_tensor(g, str(vi->name));
		if (t->kind == MKC_TK_INPUT || t->kind == MKC_TK_WEIGHT)
			return fail(r, "is a graph input or initializer; mkc needs outputs computed by nodes");
		if (t->kind == MKC_TK_OUTPUT)
			return fail(r, "is listed twice");
		t->kind = MKC_TK_OUTPUT;
		if (read_value_info(r, vi, t, false) != 0)
			return -1;
		mkc_vec_push(a, &g->outputs, t);
	}
	return 0;
}

static int
read_node(reader *r, const Onnx__NodeProto *np)
{
	mkc_graph *g = r->g;
	mkc_node *n = mkc_graph_add_node(g, np->name, str(np->domain),
					 str(np->op_type), (int)np->n_input,
					 (int)np->n_output, (int)np->n_attribute);
	r->what = mkc_arena_printf(r->c->arena, "node '%s' (%s)", n->name, n->op_type);
	if (!*n->op_type)
		return fail(r, "has no op_type");
	for (size_t i = 0; i < np->n_input; i++)
		n->in[i] = *str(np->input[i]) ? mkc_graph_tensor(g, np->input[i]) : NULL;
	for (size_t i = 0; i < np->n_output; i++) {
		if (!*str(np->output[i])) {
			n->out[i] = NULL;   /* an optional output nobody wants */
			continue;
		}
		mkc_tensor *t = mkc_graph_tensor(g, np->output[i]);
		if (t->kind == MKC_TK_INPUT || t->kind == MKC_TK_WEIGHT)
			return fail(r, "writes '%s', which is a graph input or initializer", t->name);
		if (t->producer)
			return fail(r, "writes '%s', which node '%s' writes too", t->name,
				    t->producer->name);
		t->producer = n;
		n->out[i] = t;
	}
	for (size_t i = 0; i < np->n_attribute; i++)
		if (read_attr(r, np->attribute[i], &n->attr[i]) != 0)
			return -1;
	return mkc_node_check_schema(g, n);
}

/* Every node input must be a graph input, an initializer or a node output. */
static int
check_defined(reader *r)
{
	mkc_graph *g = r->g;
	int bad = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		mkc_node *n = MKC_NODE(g, i);
		for (int j = 0; j < n->nin; j++) {
			mkc_tensor *t = n->in[j];
			if (t && !t->producer && t->kind != MKC_TK_INPUT &&
			    t->kind != MKC_TK_WEIGHT) {
				mkc_error(r->c, "%s: node '%s' (%s): input '%s' is not a graph input, an initializer or any node's output",
					  g->path, n->name, n->op_type, t->name);
				if (++bad == 16)
					return -1;
			}
		}
	}
	for (int i = 0; i < g->outputs.n; i++) {
		mkc_tensor *t = MKC_OUTPUT(g, i);
		if (!t->producer) {
			mkc_error(r->c, "%s: output '%s' is not produced by any node", g->path, t->name);
			bad++;
		}
	}
	return bad ? -1 : 0;
}

/*
 * Names become messages, dumps, C strings and comments: one with a control
 * byte (a newline, an escape sequence) is refused here, once, rather than
 * escaped in every place that prints it.
 */
static bool
printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static int
check_names(reader *r)
{
	mkc_graph *g = r->g;
	r->what = "graph";
	for (int i = 0; i < g->tensors.n; i++)
		if (!printable(MKC_TENSOR(g, i)->name))
			return fail(r, "tensor name '%s' holds a control byte", MKC_TENSOR(g, i)->name);
	for (int i = 0; i < g->syms.n; i++)
		if (!printable(MKC_SYM(g, i)))
			return fail(r, "dimension name '%s' holds a control byte", MKC_SYM(g, i));
	for (int i = 0; i < g->nodes.n; i++) {
		const mkc_node *n = MKC_NODE(g, i);
		bool ok = printable(n->name) && printable(n->op_type) && printable(n->domain);
		for (int k = 0; ok && k < n->nattr; k++)
			ok = printable(n->attr[k].name);
		if (!ok)
			return mkc_node_error(g, n, "a name, op type, domain or attribute name holds a "
					      "control byte");
	}
	return 0;
}

static int
read_graph(reader *r, const Onnx__ModelProto *m)
{
	mkc_graph *g = r->g;
	const Onnx__GraphProto *gp = m->graph;
	g->ir_version = m->has_ir_version ? m->ir_version : 0;
	g->producer = mkc_arena_printf(r->c->arena, "%s %s", str(m->producer_name),
				       str(m->producer_version));
	g->name = mkc_arena_strdup(r->c->arena, str(gp->name));
	if (read_opsets(r, m) || read_initializers(r, gp) || read_io(r, gp))
		return -1;
	if (!gp->n_output) {
		r->what = "graph";
		return fail(r, "has no outputs; there is nothing to compute");
	}
	for (size_t i = 0; i < gp->n_node; i++)
		if (read_node(r, gp->node[i]) != 0)
			return -1;
	if (check_names(r) != 0 || check_defined(r) != 0)
		return -1;
	return mkc_graph_sort(g);
}

/*
 * protobuf-c unpacks nested messages by recursion, and a graph attribute
 * holds a graph: a file nested thousands deep overflows the stack. So the
 * wire format is walked first, each level once, and nesting deeper than
 * MAX_NESTING messages (about 20 levels of subgraphs) is refused. Bytes
 * that are not well-formed are left for the unpacker to reject.
 */
enum { MAX_NESTING = 64 };

static bool
varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static bool
nesting_ok(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n, int depth)
{
	if (depth > MAX_NESTING)
		return false;
	const uint8_t *end = p + n;
	while (p < end) {
		uint64_t key, v;
		if (!varint(&p, end, &key))
			return true;
		switch (key & 7) {
		case 0:
			if (!varint(&p, end, &v))
				return true;
			break;
		case 1:
		case 5:
			if ((size_t)(end - p) < ((key & 7) == 1 ? 8u : 4u))
				return true;
			p += (key & 7) == 1 ? 8 : 4;
			break;
		case 2: {
			if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
				return true;
			const ProtobufCFieldDescriptor *f =
				protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3));
			if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
			    !nesting_ok(f->descriptor, p, (size_t)v, depth + 1))
				return false;
			p += v;
			break;
		}
		default:
			return true;   /* groups and bad wire types: the unpacker refuses them */
		}
	}
	return true;
}

static Onnx__ModelProto *
unpack_model(mkc_ctx *c, const char *path, const void *bytes, size_t size)
{
	if (!nesting_ok(&onnx__model_proto__descriptor, bytes, size, 0)) {
		mkc_error(c, "%s: messages nest more than %d deep (subgraphs within subgraphs); "
			  "mkc refuses such a file", path, MAX_NESTING);
		return NULL;
	}
	ProtobufCAllocator alloc = {pb_alloc, pb_free, c->arena};
	Onnx__ModelProto *m = onnx__model_proto__unpack(&alloc, size, bytes);
	if (!m)
		mkc_error(c, "%s: not an ONNX model: the protobuf data is malformed or truncated", path);
	return m;
}

mkc_graph *
mkc_onnx_read_model(mkc_ctx *c, const char *path, mkc_onnx_decoder *decode)
{
	const void *bytes;
	size_t size;
	if (mkc_file_read(c, path, &bytes, &size) != 0)
		return NULL;
	if (size == 0) {
		mkc_error(c, "%s: the file is empty", path);
		return NULL;
	}
	Onnx__ModelProto *m = decode(c, path, bytes, size);
	if (!m)
		return NULL;
	if (!m->graph) {
		mkc_error(c, "%s: not an ONNX model: it holds no graph", path);
		return NULL;
	}
	mkc_graph *g = mkc_graph_create(c, path);
	reader r = {g, c, "model"};
	mkc_progress(c, "%s: read %zu nodes, %zu initializers", path,
		     m->graph->n_node, m->graph->n_initializer);
	return read_graph(&r, m) == 0 ? g : NULL;
}

mkc_graph *
mkc_onnx_load(mkc_ctx *c, const char *path)
{
	mkc_graph *g = mkc_onnx_read_model(c, path, unpack_model);
	if (g)
		g->protobuf_weights = true;
	return g;
}

int
mkc_onnx_read_tensor(mkc_ctx *c, const char *path, mkc_tensor *t)
{
	const void *bytes;
	size_t size;
	if (mkc_file_read(c, path, &bytes, &size) != 0)
		return -1;
	if (!nesting_ok(&onnx__tensor_proto__descriptor, bytes, size, 0))
		return mkc_error(c, "%s: messages nest more than %d deep", path, MAX_NESTING);
	ProtobufCAllocator alloc = {pb_alloc, pb_free, c->arena};
	Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&alloc, size, bytes);
	if (!tp)
		return mkc_error(c, "%s: not a serialised ONNX TensorProto", path);
	mkc_graph *g = mkc_graph_create(c, path);
	reader r = {g, c, "tensor"};
	memset(t, 0, sizeof *t);
	t->name = mkc_arena_strdup(c->arena, str(tp->name));
	t->kind = MKC_TK_WEIGHT;
	t->id = -1;
	return read_tensor(&r, tp, t);
}

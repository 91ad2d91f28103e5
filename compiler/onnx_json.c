/*
 * onnx_json.c - the ONNX-JSON frontend: a ModelProto in protobuf's JSON
 * form, as onnx.save(model, path, format="json") writes it, into the graph IR.
 *
 * Approach: cJSON parses the text; the tree is then decoded into the very
 * protobuf-c structs the binary reader unpacks (Onnx__ModelProto and all
 * below it, in the compilation's arena), led by protobuf-c's generated
 * descriptors rather than by code written for each message, and onnx.c
 * builds the graph from them (mkc_onnx_read_model in reader.h). So the two
 * forms give the same IR and the same checks and messages by construction,
 * and a field that onnx.proto gains is read here without a change.
 *
 * The mapping read is protobuf's, as its own JSON parser reads it:
 *   - a field under its proto name (ir_version) or its lowerCamelCase JSON
 *     name (irVersion); null stands for an absent field; a key onnx.proto
 *     does not know is an error, at every level, as in protobuf's parser
 *     (json_format.Parse, which onnx.load uses): a misspelled key would
 *     otherwise drop what it holds ("attributes": a node's attributes)
 *     without a word. (The binary reader skips unknown fields, as protobuf's
 *     binary parser does; there a field number, not a spelling, is unknown.);
 *   - integers as JSON numbers or decimal strings (64-bit ones are written
 *     as strings; a number beyond 2^53 is refused, as it may not be exact);
 *   - floats as numbers, numeric strings, "NaN", "Infinity", "-Infinity";
 *   - bytes (raw_data, attribute s and strings) as base64, standard or
 *     URL-safe alphabet, '=' padding optional but correct when present;
 *   - enums (data_location, attribute type) as value names or numbers.
 *
 * Errors name the file, the named messages on the way (node, attribute,
 * initializer, graph input or output) and the field below the innermost one
 * as the file spells it:
 *   m.json: initializer 'w': field 'rawData' is not valid base64
 *   m.json: node 'n1' (Add): field 'input' must be an array of strings (it is a string)
 */
#include "files.h"
#include "reader.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	mkc_ctx *c;
	const char *path;
} jreader;

/*
 * Where the decoder is, kept on the C stack for error messages: a field
 * (key as spelled in the file) or an element of a repeated field (index).
 */
typedef struct frame {
	const struct frame *up;
	const char *key;                      /* NULL for an element */
	int index;
	const ProtobufCFieldDescriptor *fd;   /* the field, for elements */
	const cJSON *v;                       /* the element, for elements */
} frame;

static int decode_message(jreader *r, const frame *f, const cJSON *obj,
			  const ProtobufCMessageDescriptor *d, void *msg);

/* --------------------------------------------------------- messages */

typedef struct {
	char b[1024];
	size_t n;
} sbuf;

static void
sb_add(sbuf *s, const char *fmt, ...)
{
	if (s->n >= sizeof s->b - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(s->b + s->n, sizeof s->b - s->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		s->n += (size_t)k < sizeof s->b - s->n ? (size_t)k : sizeof s->b - 1 - s->n;
}

static const char *
member_string(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Elements of these fields name themselves in messages: "node 'n1' (Add)". */
static bool
labelled(const frame *f)
{
	static const char *const named[] = {"node", "attribute", "initializer",
					    "input", "output", "value_info"};
	if (f->key || f->fd->type != PROTOBUF_C_TYPE_MESSAGE || !cJSON_IsObject(f->v))
		return false;
	for (size_t i = 0; i < sizeof named / sizeof *named; i++)
		if (strcmp(f->fd->name, named[i]) == 0)
			return true;
	return false;
}

static void
put_label(sbuf *s, const frame *f)
{
	const char *name = member_string(f->v, "name");
	if (name && *name)
		sb_add(s, "%s '%s'", f->fd->name, name);
	else
		sb_add(s, "%s #%d", f->fd->name, f->index);
	if (strcmp(f->fd->name, "node") == 0) {
		const char *op = member_string(f->v, "op_type");
		if (!op)
			op = member_string(f->v, "opType");
		if (op)
			sb_add(s, " (%s)", op);
	}
}

/* The labels of the named messages on the way to f, outermost first. */
static void
put_labels(sbuf *s, const frame *f)
{
	if (!f)
		return;
	put_labels(s, f->up);
	if (labelled(f)) {
		put_label(s, f);
		sb_add(s, ": ");
	}
}

/* The field path from the innermost named message down to f. */
static bool
put_field(sbuf *s, const frame *f)
{
	if (!f || labelled(f))
		return false;
	bool more = put_field(s, f->up);
	if (f->key)
		sb_add(s, "%s%s", more ? "." : "", f->key);
	else
		sb_add(s, "[%d]", f->index);
	return true;
}

static int
jfail(jreader *r, const frame *f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
jfail(jreader *r, const frame *f, const char *fmt, ...)
{
	sbuf where = {.n = 0}, field = {.n = 0};
	put_labels(&where, f);
	bool has_field = put_field(&field, f);
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return mkc_error(r->c, "%s: %s%s%s%s%s", r->path, where.b,
			 has_field ? "field '" : "", field.b, has_field ? "' " : "", msg);
}

/* What a field's values must be: "a string", or "strings" for a list. */
static const char *
noun(const ProtobufCFieldDescriptor *fd, bool plural)
{
	static const char *const nouns[][2] = {
		[PROTOBUF_C_TYPE_FLOAT] = {"a number", "numbers"},
		[PROTOBUF_C_TYPE_DOUBLE] = {"a number", "numbers"},
		[PROTOBUF_C_TYPE_BOOL] = {"a boolean", "booleans"},
		[PROTOBUF_C_TYPE_ENUM] = {"an enum name or number", "enum names or numbers"},
		[PROTOBUF_C_TYPE_STRING] = {"a string", "strings"},
		[PROTOBUF_C_TYPE_BYTES] = {"a base64 string", "base64 strings"},
		[PROTOBUF_C_TYPE_MESSAGE] = {"an object", "objects"},
	};
	size_t t = (size_t)fd->type;
	if (t < sizeof nouns / sizeof *nouns && nouns[t][0])
		return nouns[t][plural];
	return plural ? "integers" : "an integer";   /* every integer type */
}

static int
wrong_type(jreader *r, const frame *f, const cJSON *v,
	   const ProtobufCFieldDescriptor *fd)
{
	return jfail(r, f, "must be %s (it is %s)", noun(fd, false), mkc_json_kind(v));
}

/* ----------------------------------------------------------- values */

typedef struct {
	bool neg;
	uint64_t mag;
} integer;

/* JSON numbers are doubles: integers below 2^53 are exact, not all above. */
#define EXACT_LIMIT 9007199254740992.0

static int
read_integer(jreader *r, const frame *f, const cJSON *v,
	     const ProtobufCFieldDescriptor *fd, integer *x)
{
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (d != floor(d))
			return jfail(r, f, "must be a whole number, not %g", d);
		if (fabs(d) >= EXACT_LIMIT)
			return jfail(r, f, "is too large to be exact as a JSON number; write it as a decimal string");
		x->neg = d < 0;
		x->mag = (uint64_t)fabs(d);
		return 0;
	}
	if (!cJSON_IsString(v))
		return wrong_type(r, f, v, fd);
	const char *s = v->valuestring;
	x->neg = *s == '-';
	char *end;
	errno = 0;
	x->mag = strtoull(s + x->neg, &end, 10);
	if (!isdigit((unsigned char)s[x->neg]) || *end)
		return jfail(r, f, "is '%s', not a decimal integer", s);
	if (errno == ERANGE)
		return jfail(r, f, "is '%s', out of range for any 64-bit integer", s);
	return 0;
}

/* Every integer type; enums given as numbers are stored as int32. */
static int
decode_int(jreader *r, const frame *f, const cJSON *v,
	   const ProtobufCFieldDescriptor *fd, void *dst)
{
	integer x = {false, 0};
	if (read_integer(r, f, v, fd, &x) != 0)
		return -1;
	ProtobufCType t = fd->type;
	bool wide = t == PROTOBUF_C_TYPE_INT64 || t == PROTOBUF_C_TYPE_SINT64 ||
		    t == PROTOBUF_C_TYPE_SFIXED64 || t == PROTOBUF_C_TYPE_UINT64 ||
		    t == PROTOBUF_C_TYPE_FIXED64;
	bool is_unsigned = t == PROTOBUF_C_TYPE_UINT32 || t == PROTOBUF_C_TYPE_FIXED32 ||
			   t == PROTOBUF_C_TYPE_UINT64 || t == PROTOBUF_C_TYPE_FIXED64;
	uint64_t pos_max = is_unsigned ? (wide ? UINT64_MAX : UINT32_MAX)
				       : (wide ? INT64_MAX : INT32_MAX);
	uint64_t neg_max = is_unsigned ? 0 : pos_max + 1;
	if (x.mag > (x.neg ? neg_max : pos_max))
		return jfail(r, f, "is %s%llu, out of range for a%s %d-bit integer",
			     x.neg ? "-" : "", (unsigned long long)x.mag,
			     is_unsigned ? "n unsigned" : " signed", wide ? 64 : 32);
	uint64_t bits = x.neg ? 0 - x.mag : x.mag;   /* two's complement */
	if (wide)
		*(uint64_t *)dst = bits;   /* an int64_t or uint64_t member */
	else
		*(uint32_t *)dst = (uint32_t)bits;
	return 0;
}

static int
decode_float(jreader *r, const frame *f, const cJSON *v,
	     const ProtobufCFieldDescriptor *fd, void *dst)
{
	double d;
	if (cJSON_IsNumber(v)) {
		d = v->valuedouble;
	} else if (!cJSON_IsString(v)) {
		return wrong_type(r, f, v, fd);
	} else if (strcmp(v->valuestring, "NaN") == 0) {
		d = NAN;
	} else if (strcmp(v->valuestring, "Infinity") == 0) {
		d = INFINITY;
	} else if (strcmp(v->valuestring, "-Infinity") == 0) {
		d = -INFINITY;
	} else {
		const char *s = v->valuestring;
		char *end;
		d = strtod(s, &end);
		if (!*s || isspace((unsigned char)*s) || *end)
			return jfail(r, f, "is '%s', not a number", s);
	}
	if (fd->type == PROTOBUF_C_TYPE_DOUBLE)
		*(double *)dst = d;
	else if (isfinite(d) && fabs(d) > FLT_MAX)
		return jfail(r, f, "is %g, out of range for a float", d);
	else
		*(float *)dst = (float)d;
	return 0;
}

static int
decode_enum(jreader *r, const frame *f, const cJSON *v,
	    const ProtobufCFieldDescriptor *fd, void *dst)
{
	const ProtobufCEnumDescriptor *ed = fd->descriptor;
	const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
	if (!s || isdigit((unsigned char)*s) || *s == '-')
		return decode_int(r, f, v, fd, dst);   /* a number, as int32 */
	const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value_by_name(ed, s);
	if (!ev)
		return jfail(r, f, "is '%s', not one of the names of %s", s, ed->short_name);
	*(int *)dst = ev->value;
	return 0;
}

static int
base64_value(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+' || ch == '-')
		return 62;
	if (ch == '/' || ch == '_')
		return 63;
	return -1;
}

/*
 * Base64 in the standard or URL-safe alphabet, '=' padding optional. -1 on
 * any other character, on padding that does not make the length a multiple
 * of four, or on a length no encoding gives (4k + 1 characters).
 */
static int
base64_decode(mkc_arena *a, const char *s, ProtobufCBinaryData *out)
{
	size_t n = strlen(s), pad = 0;
	while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
		pad++;
	n -= pad;
	if (n % 4 == 1 || (pad && (n + pad) % 4 != 0))
		return -1;
	uint8_t *dst = mkc_arena_alloc(a, n / 4 * 3 + 2);
	uint32_t acc = 0;
	int bits = 0;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int v = base64_value(s[i]);
		if (v < 0)
			return -1;
		acc = (acc << 6 | (uint32_t)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			dst[k++] = (uint8_t)(acc >> bits);
		}
	}
	out->data = dst;
	out->len = k;
	return 0;
}

static void *
new_message(jreader *r, const ProtobufCMessageDescriptor *d)
{
	void *m = mkc_arena_alloc(r->c->arena, d->sizeof_message);
	protobuf_c_message_init(d, m);
	return m;
}

/* One value of field fd into dst, where the field's C member (or element) is. */
static int
decode_value(jreader *r, const frame *f, const cJSON *v,
	     const ProtobufCFieldDescriptor *fd, void *dst)
{
	switch (fd->type) {
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
		return decode_float(r, f, v, fd, dst);
	case PROTOBUF_C_TYPE_ENUM:
		return decode_enum(r, f, v, fd, dst);
	case PROTOBUF_C_TYPE_BOOL:
		if (!cJSON_IsBool(v))
			return wrong_type(r, f, v, fd);
		*(protobuf_c_boolean *)dst = cJSON_IsTrue(v);
		return 0;
	case PROTOBUF_C_TYPE_STRING:
		if (!cJSON_IsString(v))
			return wrong_type(r, f, v, fd);
		*(char **)dst = mkc_arena_strdup(r->c->arena, v->valuestring);
		return 0;
	case PROTOBUF_C_TYPE_BYTES:
		if (!cJSON_IsString(v))
			return wrong_type(r, f, v, fd);
		if (base64_decode(r->c->arena, v->valuestring, dst) != 0)
			return jfail(r, f, "is not valid base64");
		return 0;
	case PROTOBUF_C_TYPE_MESSAGE: {
		if (!cJSON_IsObject(v))
			return wrong_type(r, f, v, fd);
		void *m = new_message(r, fd->descriptor);
		*(void **)dst = m;
		return decode_message(r, f, v, fd->descriptor, m);
	}
	default:
		return decode_int(r, f, v, fd, dst);
	}
}

/* ----------------------------------------------------------- fields */

static size_t
value_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	default:
		return 4;   /* 32-bit integers, float, enums */
	}
}

static int
decode_repeated(jreader *r, const frame *f, const cJSON *v,
		const ProtobufCFieldDescriptor *fd, uint8_t *msg)
{
	if (!cJSON_IsArray(v))
		return jfail(r, f, "must be an array of %s (it is %s)", noun(fd, true),
			     mkc_json_kind(v));
	size_t n = (size_t)cJSON_GetArraySize(v), esz = value_size(fd->type);
	uint8_t *elems = mkc_arena_alloc(r->c->arena, n * esz);
	int i = 0;
	for (const cJSON *e = v->child; e; e = e->next, i++) {
		frame ef = {f, NULL, i, fd, e};
		if (decode_value(r, &ef, e, fd, elems + (size_t)i * esz) != 0)
			return -1;
	}
	*(size_t *)(msg + fd->quantifier_offset) = n;
	*(void **)(msg + fd->offset) = elems;
	return 0;
}

static int
decode_field(jreader *r, const frame *f, const cJSON *v,
	     const ProtobufCFieldDescriptor *fd, uint8_t *msg)
{
	if (fd->label == PROTOBUF_C_LABEL_REPEATED)
		return decode_repeated(r, f, v, fd, msg);
	if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)(msg + fd->quantifier_offset) = fd->id;   /* the case */
	else if (fd->label == PROTOBUF_C_LABEL_OPTIONAL &&
		   fd->type != PROTOBUF_C_TYPE_STRING &&
		   fd->type != PROTOBUF_C_TYPE_MESSAGE)
		*(protobuf_c_boolean *)(msg + fd->quantifier_offset) = 1;   /* has_ */
	return decode_value(r, f, v, fd, msg + fd->offset);
}

/* protobuf's JSON name of a field, into b (n bytes): ir_version -> irVersion. */
static void
json_name(const char *proto, char *b, size_t n)
{
	size_t k = 0;
	for (bool up = false; *proto && k + 1 < n; proto++) {
		if (*proto == '_') {
			up = true;
			continue;
		}
		b[k++] = up ? (char)toupper((unsigned char)*proto) : *proto;
		up = false;
	}
	b[k] = 0;
}

/* Edit distance of a and b, or 3 when it is 3 or more (only near misses matter). */
static int
near_miss(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	if (na > 63 || nb > 63 || (na > nb ? na - nb : nb - na) > 2)
		return 3;
	int row[64];
	for (size_t j = 0; j <= nb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= na; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= nb; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);
			best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
			row[j] = up + 1 < best ? up + 1 : best;
			diag = up;
		}
	}
	return row[nb] < 3 ? row[nb] : 3;
}

static size_t
common_prefix(const char *a, const char *b)
{
	size_t k = 0;
	while (a[k] && a[k] == b[k])
		k++;
	return k;
}

/*
 * A key that names no field of d: an error naming the message type, and the
 * field the key is nearest to (within two edits; of two as near, the one
 * sharing a longer start with it), in the spelling nearer the key.
 */
static int
unknown_key(jreader *r, const frame *f, const ProtobufCMessageDescriptor *d, const char *key)
{
	char json[64], hint[64] = "";
	int dist = 3;
	size_t shared = 0;
	for (unsigned i = 0; i < d->n_fields; i++) {
		json_name(d->fields[i].name, json, sizeof json);
		int dp = near_miss(key, d->fields[i].name), dj = near_miss(key, json);
		const char *spelt = dj < dp ? json : d->fields[i].name;
		int di = dj < dp ? dj : dp;
		size_t si = common_prefix(key, spelt);
		if (di < dist || (di == dist && di < 3 && si > shared)) {
			dist = di;
			shared = si;
			snprintf(hint, sizeof hint, "%s", spelt);
		}
	}
	return jfail(r, f, "is not a field of %s in onnx.proto (IR version %d)%s%s%s", d->name,
		     (int)ONNX__VERSION__IR_VERSION, *hint ? "; did you mean '" : "", hint,
		     *hint ? "'?" : "");
}

static const ProtobufCFieldDescriptor *
field_of_key(const ProtobufCMessageDescriptor *d, const char *key)
{
	const ProtobufCFieldDescriptor *fd =
		protobuf_c_message_descriptor_get_field_by_name(d, key);
	char json[64];
	for (unsigned i = 0; !fd && i < d->n_fields; i++) {
		json_name(d->fields[i].name, json, sizeof json);
		if (strcmp(json, key) == 0)
			fd = &d->fields[i];
	}
	return fd;
}

/* The key of another member of fd's oneof given before it, or NULL. */
static const char *
oneof_rival(const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *fd,
	    const uint8_t *msg, const char *const *seen)
{
	if (!(fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
		return NULL;
	uint32_t which = *(const uint32_t *)(msg + fd->quantifier_offset);
	const ProtobufCFieldDescriptor *o = protobuf_c_message_descriptor_get_field(d, which);
	return o && o != fd ? seen[o - d->fields] : NULL;
}

static int
decode_message(jreader *r, const frame *f, const cJSON *obj,
	       const ProtobufCMessageDescriptor *d, void *msg)
{
	const char *seen[64] = {NULL};   /* the key each field came under */
	MKC_ASSERT(d->n_fields <= 64);
	for (const cJSON *kv = obj->child; kv; kv = kv->next) {
		const ProtobufCFieldDescriptor *fd = field_of_key(d, kv->string);
		frame ff = {f, kv->string, -1, fd, kv};
		if (!fd)
			return unknown_key(r, &ff, d, kv->string);
		const char **key = &seen[fd - d->fields];
		if (*key)
			return jfail(r, &ff, "is given twice (also as '%s')", *key);
		*key = kv->string;
		if (cJSON_IsNull(kv))
			continue;
		const char *other = oneof_rival(d, fd, msg, seen);
		if (other)
			return jfail(r, &ff, "is given together with '%s'; they are alternatives", other);
		if (decode_field(r, &ff, kv, fd, msg) != 0)
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------- file */

static Onnx__ModelProto *
decode_model(mkc_ctx *c, const char *path, const void *bytes, size_t size)
{
	cJSON *root = mkc_json_parse(c, path, bytes, size);
	if (!root)
		return NULL;
	jreader r = {c, path};
	Onnx__ModelProto *m = NULL;
	if (!cJSON_IsObject(root)) {
		mkc_error(c, "%s: not an ONNX model: the JSON is %s, not an object", path,
			  mkc_json_kind(root));
	} else {
		m = new_message(&r, &onnx__model_proto__descriptor);
		if (decode_message(&r, NULL, root, &onnx__model_proto__descriptor, m) != 0)
			m = NULL;
	}
	cJSON_Delete(root);
	return m;
}

mkc_graph *
mkc_onnx_json_load(mkc_ctx *c, const char *path)
{
	return mkc_onnx_read_model(c, path, decode_model);
}

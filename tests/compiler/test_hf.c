/*
 * test_hf.c - the Hugging Face frontend (compiler/hf.c, safetensors.c).
 * The graph of the shared tiny Llama folder has the interface of its ONNX
 * export; every folder under tests/models/hf/ (tests/models/gen_hf.py) runs
 * through `mkc test` and matches tools/hf_reference.py, whose own outputs
 * match the ONNX export's on the shared folder; weights point into their
 * safetensors files (bf16 ones stay bf16, except where a reader needs
 * float32); each broken folder under tests/models/hf_bad/ fails with one
 * error naming the file and the field or tensor, and writes nothing; the
 * config's spellings, defaults and refusals; and no corrupted header crashes
 * the reader.
 *
 * Paths are relative to the repository root, where `make test` runs the
 * test binary. No test here sets .timeout: libcriterion 2.4 leaks 48 bytes
 * when tests with timeouts run in parallel, which fails `make sanitize`;
 * `mkc test` has its own watchdog.
 */
#include "frontend.h"
#include "numeric.h"

#include "../mkc_run.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../graph_builder.h"

#define MODELS "tests/models/"
#define HF(f) MODELS "hf/" f
#define BAD(f) MODELS "hf_bad/" f
#define TINY MODELS "tiny_llama_hf"

static mkc_ctx *ctx;
static char tmp_dir[64];   /* a scratch folder, removed after each test */

static void
setup(void)
{
	ctx = mkc_ctx_create();
	strcpy(tmp_dir, "/tmp/mkc_hf_XXXXXX");
	cr_assert_not_null(mkdtemp(tmp_dir));
}

static void
teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
	cr_expect_eq(system(cmd), 0);
	mkc_ctx_destroy(ctx);
}

static const char *
errors(void)
{
	return ctx->errors ? ctx->errors : "(no errors)";
}

static mkc_graph *
load(const char *path)
{
	mkc_graph *g = mkc_load_model(ctx, path);
	cr_assert_not_null(g, "%s: %s", path, errors());
	return g;
}

/* Runs a shell command; its exit status, with stdout and stderr in out. */
static char out[1 << 16];

static int
shell(const char *cmd)
{
	return mkc_shell(cmd, out, sizeof out);
}

static int
mkc_test(const char *args)
{
	const char *bin = getenv("MKC") ? getenv("MKC") : "build/mkc";
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "%s test %s", bin, args);
	return shell(cmd);
}

/* ------------------------------------------------------ the graph */

TestSuite(hf_graph, .init = setup, .fini = teardown);

static void
same_io(const mkc_graph *a, const mkc_graph *b, const mkc_vec *va, const mkc_vec *vb)
{
	cr_assert_eq(va->n, vb->n);
	for (int i = 0; i < va->n; i++) {
		const mkc_tensor *x = va->v[i], *y = vb->v[i];
		char s1[128], s2[128];
		cr_expect_str_eq(x->name, y->name, "#%d", i);
		cr_expect_eq(x->dtype, y->dtype, "%s", x->name);
		cr_expect_str_eq(mkc_shape_str(a, x, s1, sizeof s1), mkc_shape_str(b, y, s2, sizeof s2),
				 "%s", x->name);
	}
}

Test(hf_graph, interface_of_the_op23_export)
{
	mkc_graph *hf = load(TINY);
	mkc_graph *onnx = load(MODELS "tiny_llama_decode_op23/model.onnx");
	/* a step of seq_len tokens; the decode step's (the export's) with seq_len 1 */
	cr_assert_eq(hf->syms.n, 2);
	cr_expect_str_eq(MKC_SYM(hf, 0), "seq_len");
	cr_expect_str_eq(MKC_SYM(hf, 1), "past_len");
	cr_assert_eq(mkc_graph_chunk_sym(hf), 0);
	char s[64];
	cr_expect_str_eq(mkc_shape_str(hf, mkc_graph_find(hf, "present.0.key"), s, sizeof s),
			 "[1,2,seq_len+past_len,32]");
	mkc_graph_fix_sym(hf, 0, 1, false);
	cr_assert_eq(hf->syms.n, 1);
	cr_expect_str_eq(MKC_SYM(hf, 0), "past_len");
	same_io(hf, onnx, &hf->inputs, &onnx->inputs);
	same_io(hf, onnx, &hf->outputs, &onnx->outputs);
	cr_expect_eq(mkc_graph_opset(hf, ""), 23);
	cr_expect_str_eq(hf->path, TINY "/config.json");
	cr_expect_str_eq(hf->name, "LlamaForCausalLM");
}

Test(hf_graph, nodes_named_from_the_weights)
{
	mkc_graph *g = load(TINY);
	const mkc_node *n = gb_find_node(g, "model.layers.0.self_attn.q_proj");
	cr_expect_eq(n->op, MKC_OP_GEMM);
	cr_expect_eq(mkc_node_attr_int(n, "transB", 0), 1);
	cr_expect_str_eq(n->in[1]->name, "model.layers.0.self_attn.q_proj.weight");
	n = gb_find_node(g, "model.layers.1.self_attn.attn");
	cr_expect_eq(n->op, MKC_OP_ATTENTION);
	cr_expect_str_eq(n->in[4]->name, "past_key_values.1.key");
	cr_expect_str_eq(n->out[2]->name, "present.1.value");
	cr_expect_float_eq(mkc_node_attr_float(n, "scale", 0), 1 / sqrtf(32), 1e-7);
	cr_expect_eq(mkc_node_attr_int(n, "is_causal", 0), 1);
	/* rope from the position at run time: [1,seq_len,16], no table */
	n = gb_find_node(g, "model.layers.0.self_attn.k_rope");
	cr_expect_eq(n->nin, 3);
	cr_expect_str_eq(n->in[1]->name, "model.rotary_emb.cos");
	const mkc_tensor *f = mkc_graph_find(g, "model.rotary_emb.inv_freq");
	cr_assert_not_null(f);
	cr_expect_eq(mkc_tensor_numel(f), 16);
	cr_expect_float_eq(((const float *)f->data)[1], (float)pow(500000.0, -2.0 / 32), 1e-12);
	/* tied: the head reads the embedding table */
	n = gb_find_node(g, "lm_head");
	cr_expect_str_eq(n->in[1]->name, "model.embed_tokens.weight");
	cr_expect_eq(gb_find_node(g, "model.embed_tokens")->op, MKC_OP_GATHER);
	/* heads before positions for q, k, v, and back for the output: 4 a layer */
	int transposes = 0;
	for (int i = 0; i < g->nodes.n; i++)
		transposes += MKC_NODE(g, i)->op == MKC_OP_TRANSPOSE;
	cr_expect_eq(transposes, 8);
}

/* The offset of a tensor's data as the header says, read independently. */
static uint64_t
header_offset(const char *path, const char *name)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "%s", path);
	uint64_t n;
	cr_assert_eq(fread(&n, 8, 1, f), 1);
	char *h = malloc(n + 1);
	cr_assert_eq(fread(h, 1, n, f), n);
	fclose(f);
	h[n] = 0;
	char key[256];
	snprintf(key, sizeof key, "\"%s\":", name);
	char *e = strstr(h, key);
	cr_assert_not_null(e, "%s not in %s", name, path);
	char *o = strstr(e, "\"data_offsets\":[");
	cr_assert_not_null(o);
	uint64_t begin = strtoull(o + strlen("\"data_offsets\":["), NULL, 10);
	free(h);
	return 8 + n + begin;
}

Test(hf_graph, weights_point_into_their_files)
{
	mkc_graph *g = load(HF("llama_tiny_sharded"));
	const char *names[] = {"model.embed_tokens.weight", "model.norm.weight",
			       "model.layers.1.mlp.down_proj.bias", "lm_head.weight"};
	int seen[2] = {0, 0};
	for (int i = 0; i < 4; i++) {
		const mkc_tensor *t = mkc_graph_find(g, names[i]);
		cr_assert_not_null(t, "%s", names[i]);
		cr_expect(t->initializer && t->kind == MKC_TK_WEIGHT && t->dtype == MKC_DT_FLOAT);
		cr_expect_eq(t->storage, 0);
		cr_assert_not_null(t->ext_file, "%s", names[i]);
		int shard = strstr(t->ext_file, "model-00002-of-00002") != NULL;
		seen[shard]++;
		cr_expect(strncmp(t->ext_file, HF("llama_tiny_sharded/model-0000"), 38) == 0, "%s",
			  t->ext_file);
		cr_expect_eq(t->ext_offset, header_offset(t->ext_file, names[i]), "%s", names[i]);
		FILE *f = fopen(t->ext_file, "rb");
		unsigned char buf[16];
		cr_assert(f && fseek(f, (long)t->ext_offset, SEEK_SET) == 0 && fread(buf, 1, 16, f) == 16);
		fclose(f);
		cr_expect_eq(memcmp(buf, t->data, 16), 0, "%s: bytes differ from the file", names[i]);
	}
	cr_expect(seen[0] && seen[1], "both shards are read");
}

Test(hf_graph, bf16_weights_stay_bf16_but_biases_widen)
{
	mkc_graph *g = load(HF("llama_tiny_bf16"));
	const mkc_tensor *w = mkc_graph_find(g, "model.layers.0.self_attn.q_proj.weight");
	cr_assert_not_null(w);
	cr_expect_eq(w->dtype, MKC_DT_FLOAT);
	cr_expect_eq(w->storage, MKC_DT_BFLOAT16);
	cr_expect_eq(w->file_dtype, MKC_DT_BFLOAT16);
	cr_expect_eq(w->nbytes, 64 * 64 * 2);
	cr_expect(w->initializer && w->ext_file);
	const char *kept[] = {"model.embed_tokens.weight", "model.norm.weight",
			      "model.layers.1.post_attention_layernorm.weight"};
	for (int i = 0; i < 3; i++)
		cr_expect_eq(mkc_graph_find(g, kept[i])->storage, MKC_DT_BFLOAT16, "%s", kept[i]);
	/* a Gemm's bias is read as float32: widened at compile time, embedded */
	const mkc_tensor *b = mkc_graph_find(g, "model.layers.0.self_attn.k_proj.bias");
	cr_assert_not_null(b);
	cr_expect_eq(b->storage, 0);
	cr_expect_eq(b->file_dtype, 0);
	cr_expect(!b->initializer && !b->ext_file);
	cr_expect_eq(b->nbytes, 32 * 4);
	uint64_t off = header_offset(HF("llama_tiny_bf16/model.safetensors"),
				     "model.layers.0.self_attn.k_proj.bias");
	FILE *f = fopen(HF("llama_tiny_bf16/model.safetensors"), "rb");
	uint16_t raw[32];
	cr_assert(f && fseek(f, (long)off, SEEK_SET) == 0 && fread(raw, 2, 32, f) == 32);
	fclose(f);
	for (int i = 0; i < 32; i++)
		cr_expect_eq(((const float *)b->data)[i], mkc_bf16_to_float(raw[i]), "[%d]", i);
}

Test(hf_graph, qwen_families)
{
	mkc_graph *g = load(HF("qwen3_tiny"));
	const mkc_node *n = gb_find_node(g, "model.layers.1.self_attn.q_norm");
	cr_expect_eq(n->op, MKC_OP_RMS_NORM);
	cr_expect_eq(n->in[1]->shape[0].c, 32);   /* over head_dim, not hidden */
	cr_expect_str_eq(gb_find_node(g, "model.layers.1.self_attn.q_rope")->in[0]->name,
			 "model.layers.1.self_attn.q_norm");
	cr_expect_str_eq(gb_find_node(g, "lm_head")->in[1]->name, "lm_head.weight");   /* untied */
	cr_expect_eq(gb_find_node(g, "model.layers.0.self_attn.q_proj")->nin, 2);
	g = load(HF("qwen2_tiny"));
	cr_expect_eq(gb_find_node(g, "model.layers.0.self_attn.v_proj")->nin, 3);   /* q/k/v biases */
	cr_expect_eq(gb_find_node(g, "model.layers.0.self_attn.o_proj")->nin, 2);   /* none on o_proj */
	cr_expect_eq(gb_find_node(g, "model.layers.0.mlp.up_proj")->nin, 2);
}

/* A folder holding model.onnx goes to the ONNX reader, config.json or not. */
Test(hf_graph, which_reader)
{
	char p[128], cmd[2048], cwd[512];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(cmd, sizeof cmd, "cp %s/config.json %s/ && ln -s %s/%s/model.onnx %s/model.onnx", TINY,
		 tmp_dir, cwd, MODELS "tiny_llama_decode_op23", tmp_dir);
	cr_assert_eq(shell(cmd), 0, "%s", out);
	mkc_graph *g = load(tmp_dir);
	snprintf(p, sizeof p, "%s/model.onnx", tmp_dir);
	cr_expect_str_eq(g->path, p);
	cr_expect_null(mkc_load_model(ctx, MODELS "hand/json_bad"));
	cr_expect(strstr(errors(), "a folder without model.onnx or config.json"), "%s", errors());
	/* a trailing slash names the same folder; so does its config.json */
	g = load(TINY "/");
	cr_expect_str_eq(g->path, TINY "/config.json");
	g = load(TINY "/config.json");
	cr_expect_str_eq(g->path, TINY "/config.json");
	cr_expect_str_eq(g->dir, TINY);
}

/* -------------------------------------------------- end to end */

TestSuite(hf_run, .init = setup, .fini = teardown);

#define FLOAT32 HF("qwen3_tiny") " " HF("qwen2_tiny") " " HF("llama_tiny_llama3_rope") " " \
	HF("llama_tiny_sharded")

Test(hf_run, mkc_test_passes)
{
	cr_assert_eq(mkc_test(TINY " " FLOAT32), 0, "%s", out);
	cr_assert(strstr(out, "5 passed, 0 failed\n"), "%s", out);
	cr_assert_eq(mkc_test("--embed-limit 0 " TINY " " FLOAT32), 0, "%s", out);
	cr_assert(strstr(out, "5 passed, 0 failed\n"), "%s", out);
	cr_assert_eq(mkc_test("--tolerance 1e-2 " HF("llama_tiny_bf16")), 0, "%s", out);
	/* head_dim 64 (the others' 16 and 32), bf16 weights, whose reference uses them */
	cr_assert_eq(mkc_test(HF("llama_tiny_d64")), 0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed\n"), "%s", out);
	cr_assert_eq(mkc_test("--tolerance 1e-2 --embed-limit 0 " HF("llama_tiny_bf16") "/config.json"),
		     0, "%s", out);
	cr_assert(strstr(out, "1 passed, 0 failed\n"), "%s", out);
	/* float32 weights narrowed to bf16 at load time, from safetensors too */
	cr_assert_eq(mkc_test("--weights bf16 --tolerance 1e-2 " TINY), 0, "%s", out);
}

/* Each family's differences matter: read as plain llama, the outputs are wrong. */
Test(hf_run, the_family_matters)
{
	const char *bin = getenv("MKC") ? getenv("MKC") : "build/mkc";
	const char *cases[][3] = {
		{"qwen2_tiny", "s/\"qwen2\"/\"llama\"/", "q/k/v biases"},
		{"qwen3_tiny", "s/\"qwen3\"/\"llama\"/", "q/k norms"},
		{"llama_tiny_llama3_rope", "s/\"llama3\"/\"default\"/", "llama3 rope scaling"},
		{"llama_tiny_bf16", "s/\"attention_bias\": true/\"attention_bias\": false/", "biases"},
	};
	for (int i = 0; i < 4; i++) {
		char cmd[1024];
		snprintf(cmd, sizeof cmd, "cp -r " HF("%s") " %s/ && sed -i '%s' %s/%s/config.json && %s test %s/%s",
			 cases[i][0], tmp_dir, cases[i][1], tmp_dir, cases[i][0], bin, tmp_dir,
			 cases[i][0]);
		cr_expect_eq(shell(cmd), 1, "without %s: %s", cases[i][2], out);
		cr_expect(strstr(out, "relative error"), "%s", out);
	}
}

Test(hf_run, reference_matches_the_onnx_export)
{
	cr_assert_eq(shell("python3 tools/hf_reference.py --check " TINY), 0, "%s", out);
	cr_assert(strstr(out, "ok   " TINY "/test_data_set_0 logits: relative L2 error"), "%s", out);
	cr_assert(!strstr(out, "FAIL"), "%s", out);
}

/* ------------------------------------------------- bad folders */

TestSuite(hf_bad, .init = setup, .fini = teardown);

/* Exit 1, one error line: the file, then the needle; nothing written. */
static void
expect_refused(const char *dir, const char *file, const char *needle)
{
	char o[128], want[512];
	snprintf(o, sizeof o, "%s/out.c", tmp_dir);
	mkc_result *r = mkc_run(dir, "-o", o, NULL);
	cr_expect_eq(r->status, 1, "%s: %s", dir, r->err);
	snprintf(want, sizeof want, "%s/%s: ", dir, file);
	cr_expect(strncmp(r->err, want, strlen(want)) == 0, "%s: not naming %s: %s", dir, want, r->err);
	cr_expect(strstr(r->err, needle), "%s: '%s' not in: %s", dir, needle, r->err);
	cr_expect_eq(strchr(r->err, '\n'), r->err + strlen(r->err) - 1, "%s: more than one line: %s",
		     dir, r->err);
	struct stat st;
	cr_expect_neq(stat(o, &st), 0, "%s: wrote %s", dir, o);
	snprintf(o, sizeof o, "%s/out.h", tmp_dir);
	cr_expect_neq(stat(o, &st), 0, "%s: wrote %s", dir, o);
	/* the same through the library: exactly one error */
	mkc_ctx_clear_errors(ctx);
	cr_expect_null(mkc_load_model(ctx, dir));
	cr_expect_eq(ctx->nerrors, 1, "%s: %s", dir, errors());
}

/*
 * A weights file linked out of the folder (a Hugging Face hub cache links
 * to ../../blobs) is refused at compile time, as the emitted loader refuses
 * it at load; a link inside the folder is fine.
 */
Test(hf_bad, weights_linked_out_of_the_folder)
{
	char cmd[1024], dir[128];
	snprintf(dir, sizeof dir, "%s/m", tmp_dir);
	snprintf(cmd, sizeof cmd,
		 "mkdir -p %s/m %s/blobs %s/in && cp " MODELS "hf/qwen3_tiny/config.json %s/m/ && "
		 "cp " MODELS "hf/qwen3_tiny/config.json %s/in/ && "
		 "cp " MODELS "hf/qwen3_tiny/model.safetensors %s/blobs/w && "
		 "cp " MODELS "hf/qwen3_tiny/model.safetensors %s/in/w && "
		 "ln -s ../blobs/w %s/m/model.safetensors && ln -s w %s/in/model.safetensors",
		 tmp_dir, tmp_dir, tmp_dir, tmp_dir, tmp_dir, tmp_dir, tmp_dir, tmp_dir, tmp_dir);
	cr_assert_eq(shell(cmd), 0, "%s", out);
	expect_refused(dir, "model.safetensors", "a link out of the model's folder");
	snprintf(dir, sizeof dir, "%s/in", tmp_dir);
	mkc_result *r = mkc_run(dir, NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
}

Test(hf_bad, safetensors_headers)
{
	expect_refused(BAD("header_beyond_file"), "model.safetensors",
		       "the header length 7520 runs past the end of the file (4544 bytes)");
	expect_refused(BAD("header_not_json"), "model.safetensors", "header: not valid JSON near line 1");
	expect_refused(BAD("offsets_vs_shape"), "model.safetensors",
		       "tensor 'model.norm.weight': field 'data_offsets' [3392, 3424] holds 32 bytes, but 9 elements of F32 need 36");
	expect_refused(BAD("dtype_unknown"), "model.safetensors",
		       "tensor 'model.norm.weight': field 'dtype' is 'Q4_K', not a safetensors dtype mkc knows");
}

Test(hf_bad, weights)
{
	expect_refused(BAD("dtype_f16"), "model.safetensors",
		       "tensor 'model.norm.weight' is F16; mkc reads F32 and BF16 weights (F16 not yet)");
	expect_refused(BAD("missing_weight"), "model.safetensors",
		       "tensor 'model.layers.0.mlp.up_proj.weight' is missing (a llama with this config.json has one)");
	expect_refused(BAD("shape_vs_config"), "model.safetensors",
		       "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [8,4], but config.json implies [4,8]");
	expect_refused(BAD("missing_shard"), "model-00002-of-00002.safetensors",
		       "cannot read: No such file or directory");
}

Test(hf_bad, config)
{
	expect_refused(BAD("model_type"), "config.json",
		       "field 'model_type' is 'gpt2'; mkc reads the families 'llama', 'qwen2' and 'qwen3'");
	expect_refused(BAD("no_hidden_size"), "config.json", "field 'hidden_size' is missing");
	expect_refused(BAD("rope_yarn"), "config.json",
		       "field 'rope_scaling.rope_type' is 'yarn'; mkc reads the rope types 'default' and 'llama3'");
}

/* ------------------------------------------- config variations */

TestSuite(hf_config, .init = setup, .fini = teardown);

/* A tiny llama (hidden 8, 2 heads, 1 kv head, ffn 16, vocab 16) with this config text. */
static mkc_graph *
with_config(const char *json)
{
	char path[256], cwd[512];
	snprintf(path, sizeof path, "%s/config.json", tmp_dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(json, f);
	fclose(f);
	/* a copy: a link out of the folder is refused (weights_linked_out_of_the_folder) */
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "cp %s/" BAD("model_type/model.safetensors") " %s/model.safetensors",
		 getcwd(cwd, sizeof cwd), tmp_dir);
	cr_assert_eq(shell(cmd), 0, "%s", out);
	mkc_ctx_clear_errors(ctx);
	return mkc_load_model(ctx, tmp_dir);
}

#define TINY_DIMS "\"hidden_size\": 8, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, " \
	"\"intermediate_size\": 16, \"vocab_size\": 16, \"num_key_value_heads\": 1"

static void
config_error(const char *json, const char *needle)
{
	cr_expect_null(with_config(json), "%s loaded", json);
	cr_expect_eq(ctx->nerrors, 1, "%s", errors());
	cr_expect(strstr(errors(), "/config.json: "), "%s", errors());
	cr_expect(strstr(errors(), needle), "'%s' not in: %s", needle, errors());
}

static const float *
inv_freq_of(const mkc_graph *g)
{
	const mkc_tensor *t = mkc_graph_find(g, "model.rotary_emb.inv_freq");
	cr_assert_not_null(t);
	return t->data;
}

Test(hf_config, spellings_and_defaults)
{
	/* defaults: head_dim = hidden / heads, theta 10000, eps 1e-6, untied */
	mkc_graph *g = with_config("{\"model_type\": \"llama\", " TINY_DIMS ", \"head_dim\": null}");
	cr_assert_not_null(g, "%s", errors());
	cr_expect_eq(mkc_graph_find(g, "past_key_values.0.key")->shape[3].c, 4);
	cr_expect_float_eq(inv_freq_of(g)[1], 0.01f, 1e-9);
	const mkc_attr *eps = NULL;
	for (int i = 0; !eps && i < g->nodes.n; i++)
		eps = mkc_node_attr(MKC_NODE(g, i), "epsilon");
	cr_assert_not_null(eps);
	cr_expect_float_eq(eps->f, 1e-6f, 1e-12);
	/* both spellings of theta, alone or agreeing */
	g = with_config("{\"model_type\": \"llama\", " TINY_DIMS ", \"rope_theta\": 100.0}");
	cr_assert_not_null(g, "%s", errors());
	cr_expect_float_eq(inv_freq_of(g)[1], 0.1f, 1e-8);
	g = with_config("{\"model_type\": \"llama\", " TINY_DIMS
			", \"rope_parameters\": {\"rope_theta\": 100.0, \"rope_type\": \"default\"}}");
	cr_assert_not_null(g, "%s", errors());
	cr_expect_float_eq(inv_freq_of(g)[1], 0.1f, 1e-8);
	g = with_config("{\"model_type\": \"llama\", " TINY_DIMS ", \"rope_theta\": 100.0, "
			"\"rope_scaling\": null, \"rope_parameters\": {\"rope_theta\": 100.0}}");
	cr_assert_not_null(g, "%s", errors());
	/* num_key_value_heads defaults to the heads */
	g = with_config("{\"model_type\": \"llama\", \"hidden_size\": 8, \"num_hidden_layers\": 1, "
			"\"num_attention_heads\": 2, \"intermediate_size\": 16, \"vocab_size\": 16}");
	cr_expect_null(g);   /* the file's k_proj is for one kv head */
	cr_expect(strstr(errors(), "'model.layers.0.self_attn.k_proj.weight' has shape [4,8], but config.json implies [8,8]"),
		  "%s", errors());
}

/* llama3 scaling of inv_freq, computed here by hand for head_dim 4 and theta 10000:
 * frequencies 1 and 0.01, wavelengths 6.28 and 628 */
Test(hf_config, llama3_inv_freq)
{
	mkc_graph *g = with_config("{\"model_type\": \"llama\", " TINY_DIMS ", \"rope_scaling\": "
				   "{\"type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
				   "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 100}}");
	cr_assert_not_null(g, "%s", errors());
	/* 6.28 < 100/4: kept; 628 > 100/1: divided by 8 */
	cr_expect_float_eq(inv_freq_of(g)[0], 1.0f, 1e-9);
	cr_expect_float_eq(inv_freq_of(g)[1], 0.01f / 8, 1e-10);
	/* original 1000: 628 lies between 250 and 1000; smooth = (1000/628.3 - 1) / 3 */
	g = with_config("{\"model_type\": \"llama\", " TINY_DIMS ", \"rope_parameters\": "
			"{\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
			"\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 1000, "
			"\"rope_theta\": 10000.0}}");
	cr_assert_not_null(g, "%s", errors());
	double s = (1000 / (2 * M_PI / 0.01) - 1) / 3;
	cr_expect_float_eq(inv_freq_of(g)[1], (float)((1 - s) * 0.01 / 8 + s * 0.01), 1e-9);
}

Test(hf_config, refusals)
{
	config_error("[1, 2]", "the JSON is an array, not an object");
	config_error("{\"model_type\": \"llama\", ", "not valid JSON near line 1");
	config_error("{\"hidden_size\": 8}", "field 'model_type' is missing");
	config_error("{\"model_type\": 3}", "field 'model_type' must be a string (it is a number)");
	config_error("{\"model_type\": \"llama\", \"hidden_size\": 8.5}",
		     "field 'hidden_size' must be a positive integer below 2^31 (it is 8.5)");
	config_error("{\"model_type\": \"llama\", " TINY_DIMS ", \"num_key_value_heads\": 3}",
		     "field 'num_key_value_heads' is 3, which does not divide num_attention_heads 2");
	config_error("{\"model_type\": \"llama\", " TINY_DIMS ", \"hidden_act\": \"gelu\"}",
		     "field 'hidden_act' is 'gelu'; mkc reads 'silu'");
	config_error("{\"model_type\": \"qwen2\", " TINY_DIMS ", \"use_sliding_window\": true}",
		     "field 'use_sliding_window' is true; sliding-window attention is not supported");
	config_error("{\"model_type\": \"qwen3\", " TINY_DIMS
		     ", \"layer_types\": [\"full_attention\", \"sliding_attention\"]}",
		     "field 'layer_types' holds 'sliding_attention'");
	config_error("{\"model_type\": \"llama\", " TINY_DIMS ", \"tie_word_embeddings\": 1}",
		     "field 'tie_word_embeddings' must be true or false (it is a number)");
	config_error("{\"model_type\": \"llama\", " TINY_DIMS ", \"rope_theta\": 10.0, "
		     "\"rope_parameters\": {\"rope_theta\": 20.0}}",
		     "field 'rope_theta' is 10 but 'rope_parameters.rope_theta' is 20");
	config_error("{\"model_type\": \"llama\", " TINY_DIMS ", \"rope_scaling\": {\"rope_type\": "
		     "\"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0}}",
		     "field 'rope_scaling.original_max_position_embeddings' is missing");
	config_error("{\"model_type\": \"llama\", " TINY_DIMS ", \"rope_scaling\": \"llama3\"}",
		     "field 'rope_scaling' must be an object (it is a string)");
	config_error("{\"model_type\": \"llama\", " TINY_DIMS ", \"partial_rotary_factor\": 0.5}",
		     "field 'partial_rotary_factor' is 0.5");
	/* a fine config that asks for weights the file lacks */
	cr_expect_null(with_config("{\"model_type\": \"llama\", " TINY_DIMS ", \"attention_bias\": true}"));
	cr_expect_eq(ctx->nerrors, 1, "%s", errors());
	cr_expect(strstr(errors(), "/model.safetensors: tensor 'model.layers.0.self_attn.q_proj.bias' is missing"),
		  "%s", errors());
}

/* ----------------------------------------- no header crashes it */

Test(hf_config, corrupted_headers_fail_cleanly)
{
	FILE *f = fopen(BAD("model_type/model.safetensors"), "rb");
	cr_assert_not_null(f);
	static unsigned char file[8192];
	size_t n = fread(file, 1, sizeof file, f);
	fclose(f);
	char dir_cfg[256], st[256];
	snprintf(dir_cfg, sizeof dir_cfg, "%s/config.json", tmp_dir);
	snprintf(st, sizeof st, "%s/model.safetensors", tmp_dir);
	FILE *c = fopen(dir_cfg, "w");
	cr_assert_not_null(c);
	fputs("{\"model_type\": \"llama\", " TINY_DIMS "}", c);
	fclose(c);
	uint64_t hl;
	memcpy(&hl, file, 8);
	srand(5);
	for (int round = 0; round < 300; round++) {
		static unsigned char bad[8192];
		memcpy(bad, file, n);
		int edits = 1 + rand() % 4;
		for (int e = 0; e < edits; e++)
			bad[rand() % (int)(8 + hl)] = (unsigned char)(round % 3 ? "{}[]\",:0123456789 aF"[rand() % 21]
									  : rand());
		size_t len = round % 7 ? n : (size_t)rand() % n;   /* some truncated */
		FILE *w = fopen(st, "wb");
		cr_assert_not_null(w);
		fwrite(bad, 1, len, w);
		fclose(w);
		mkc_ctx_destroy(ctx);
		ctx = mkc_ctx_create();
		if (mkc_load_model(ctx, tmp_dir))
			continue;
		cr_assert_geq(ctx->nerrors, 1, "round %d: failed without an error", round);
		for (const char *line = ctx->errors; *line; line = strchr(line, '\n') + 1)
			cr_assert(strncmp(line, tmp_dir, strlen(tmp_dir)) == 0,
				  "round %d: an error without the file: %s", round, line);
	}
}

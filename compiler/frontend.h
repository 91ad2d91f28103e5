/*
 * frontend.h - model readers. Each turns one input form into the graph IR
 * (ir/graph.h) and reports problems through the context's diagnostics,
 * naming the file and, where there is one, the node or tensor.
 *
 *   mkc_ctx *c = mkc_ctx_create();
 *   mkc_graph *g = mkc_load_model(c, "model.onnx");
 *   if (!g) fputs(c->errors, stderr);
 *   mkc_ctx_destroy(c);   // frees the graph and unmaps weight files
 */
#ifndef MKC_FRONTEND_H
#define MKC_FRONTEND_H

#include "../ir/graph.h"

/* Picks the reader by what the path is. NULL on error. */
mkc_graph *mkc_load_model(mkc_ctx *c, const char *path);

/*
 * The same, with all_logits: a Hugging Face folder's step gives every new
 * position's logits [1, seq_len, vocab] (mkc --all-logits), not the last
 * one's; an ONNX model gives what its graph gives either way.
 */
mkc_graph *mkc_load_model_logits(mkc_ctx *c, const char *path, bool all_logits);

/* A binary ONNX ModelProto. NULL on error. */
mkc_graph *mkc_onnx_load(mkc_ctx *c, const char *path);

/*
 * An ONNX model in protobuf's JSON form, as onnx.save(model, path,
 * format="json") writes it (compiler/onnx_json.c). NULL on error.
 */
mkc_graph *mkc_onnx_json_load(mkc_ctx *c, const char *path);

/*
 * A Hugging Face model folder: config.json (model_type llama, qwen2 or
 * qwen3) and model.safetensors, or model.safetensors.index.json and its
 * shards; the graph of one decode step with a KV cache, with the interface
 * of the decode-step ONNX exports (compiler/hf.c); all_logits as above.
 * NULL on error.
 */
mkc_graph *mkc_hf_load(mkc_ctx *c, const char *dir, bool all_logits);

/* A serialised TensorProto (test data's input_K.pb); 0 or -1. */
int mkc_onnx_read_tensor(mkc_ctx *c, const char *path, mkc_tensor *t);

#endif

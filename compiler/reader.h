/*
 * reader.h - internal to the ONNX frontends (onnx.c, onnx_json.c), not a
 * public header. Both forms of a model, binary protobuf and protobuf's JSON
 * mapping, are decoded into the same protobuf-c message (Onnx__ModelProto,
 * every block in the compilation's arena), and onnx.c builds the graph IR
 * from it: so both forms get the same checks, the same error messages and
 * the same IR.
 *
 *   static Onnx__ModelProto *decode(mkc_ctx *c, const char *path,
 *                                   const void *bytes, size_t size);
 *   return mkc_onnx_read_model(c, path, decode);
 */
#ifndef MKC_READER_H
#define MKC_READER_H

#include "frontend.h"

#include "onnx.pb-c.h"

/* The model in a file's bytes, or NULL after an error naming path. */
typedef Onnx__ModelProto *mkc_onnx_decoder(mkc_ctx *c, const char *path,
					   const void *bytes, size_t size);

/*
 * Maps the file at path (an empty file is an error), decodes it and builds
 * the graph IR. NULL on error.
 */
mkc_graph *mkc_onnx_read_model(mkc_ctx *c, const char *path,
			       mkc_onnx_decoder *decode);

#endif

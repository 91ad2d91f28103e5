/*
 * fuzz_onnx.c - a libFuzzer target for the ONNX (protobuf) reader alone
 * (compiler/onnx.c, with the protobuf-c code generated from onnx.proto): the
 * input is the file. Faster per input than fuzz_pipeline.c, which runs
 * every pass after the reader.
 *
 *   make fuzz FUZZ_SECONDS=600    # also builds and runs this target
 *
 * Crashes it finds go into tests/fuzz/crashes_onnx/ (by hand, once fixed),
 * which make fuzz-replay (part of make test) replays.
 */
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_file(data, size, "m.onnx", mkc_onnx_load);
}

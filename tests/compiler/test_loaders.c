/*
 * test_loaders.c - the emitted run time does not trust its files (issue 14,
 * class 8). A model is compiled with the C target from a copy in a scratch
 * folder, tests/loaders/load.c is built against it (with AddressSanitizer
 * and UBSan), the copy is damaged (tests/loaders/damage.py) and the loader
 * run on it: every hostile file must end in `load: -1` and one sentence
 * naming the file and the weight, never in a crash, a sanitizer report, a
 * hang on a FIFO, or a silent load of the wrong bytes.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../mkc_run.h"

static char dir[64];
static char out[16384];

static void
setup(void)
{
	strcpy(dir, "/tmp/mkc_load_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[128], o[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	mkc_shell(cmd, o, sizeof o);
}

TestSuite(loaders, .init = setup, .fini = teardown, .timeout = 120);

/* Runs a shell command in dir (printf-style); its status, output in out. */
static int
sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
sh(const char *fmt, ...)
{
	char cmd[4096], body[3900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(body, sizeof body, fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof cmd, "cd '%s' && %s", dir, body);
	return mkc_shell(cmd, out, sizeof out);
}

/* The repository's root (the tests run there), for paths used from dir. */
static const char *
root(void)
{
	static char buf[4096];
	cr_assert_not_null(getcwd(buf, sizeof buf));
	return buf;
}

/*
 * Compiles the model in dir/m (C target, prefix model, mkc's options
 * flags) and builds dir/load against it.
 */
static void
compile_loader(const char *flags)
{
	char mkc[4200];
	const char *bin = mkc_bin();
	snprintf(mkc, sizeof mkc, "%s%s%s", bin[0] == '/' ? "" : root(), bin[0] == '/' ? "" : "/",
		 bin);
	int rc = sh("'%s' m -o model.c --name model %s && "
		    "cc -std=c11 -O1 -g -Wall -Wextra -Werror "
		    "-fsanitize=address,undefined -fno-sanitize-recover=all -pthread -I. -o load "
		    "'%s/tests/loaders/load.c' model.c -lm",
		    mkc, flags, root());
	cr_assert_eq(rc, 0, "%s", out);
}

/* Copies tests/models/SRC to dir/m, then compile_loader(flags). */
static void
build_with(const char *src, const char *flags)
{
	cr_assert_eq(sh("cp -r '%s/tests/models/%s' m", root(), src), 0, "%s", out);
	compile_loader(flags);
}

/* Every weight loaded at run time: none compiled in. */
static void
build(const char *src)
{
	build_with(src, "--embed-limit 0");
}

/* Damages a file in dir with tests/loaders/damage.py. */
static void
damage(const char *args)
{
	cr_assert_eq(sh("python3 '%s/tests/loaders/damage.py' %s", root(), args), 0, "%s", out);
}

/*
 * Runs the loader on path: it must exit cleanly with `load: -1` and an
 * error holding each needle (NULL-terminated), on one line.
 */
static void
refused(const char *path, ...)
{
	int rc = sh("timeout 30 ./load '%s'", path);
	cr_assert_null(strstr(out, "Sanitizer"), "%s", out);
	cr_assert_null(strstr(out, "runtime error"), "%s", out);
	cr_assert_eq(rc, 1, "status %d: %s", rc, out);
	cr_assert(strncmp(out, "load: -1 ", 9) == 0, "%s", out);
	cr_assert_eq(mkc_lines(out), 1, "one line: %s", out);
	va_list ap;
	va_start(ap, path);
	for (const char *n = va_arg(ap, const char *); n; n = va_arg(ap, const char *))
		cr_assert(strstr(out, n), "error lacks '%s': %s", n, out);
	va_end(ap);
}

static void
loads(const char *path)
{
	int rc = sh("timeout 30 ./load '%s'", path);
	cr_assert_eq(rc, 0, "status %d: %s", rc, out);
	cr_assert_str_eq(out, "load: 0\n");
}

#define Q "model.layers.0.self_attn.q_proj.weight"

/* ------------------------------------------------ safetensors: the header */

Test(loaders, safetensors_garbage_header)
{
	build("hf/llama_tiny_bf16");
	loads("m");
	damage("garbage m/model.safetensors");
	refused("m", "m/model.safetensors: the header is not valid JSON near byte 8", NULL);
}

Test(loaders, safetensors_reordered_tensors)
{
	build("hf/llama_tiny_bf16");
	damage("reorder m/model.safetensors");
	refused("m", "m/model.safetensors: tensor '", "' starts at byte ",
		"but the model was compiled for byte", "(the file was rewritten since", NULL);
}

Test(loaders, safetensors_wrong_shape)
{
	build("hf/llama_tiny_bf16");
	damage("field m/model.safetensors " Q " shape '[32,128]'");
	refused("m", "m/model.safetensors: tensor '" Q "' has shape [32, 128], but the model was "
		"compiled for [64, 64]", NULL);
}

Test(loaders, safetensors_wrong_dtype)
{
	build("hf/llama_tiny_bf16");
	damage("field m/model.safetensors " Q " dtype '\"F16\"'");
	refused("m", "m/model.safetensors: tensor '" Q "' is F16, but the model was compiled for "
		"BF16", NULL);
}

Test(loaders, safetensors_offsets_that_disagree_with_the_size)
{
	build("hf/llama_tiny_bf16");
	damage("field m/model.safetensors " Q " data_offsets '[0,2]'");
	refused("m", "m/model.safetensors: tensor '" Q "' has data_offsets [0, 2], 2 bytes, but its "
		"shape and dtype need 8192", NULL);
}

Test(loaders, safetensors_missing_tensor_and_bad_fields)
{
	build("hf/llama_tiny_bf16");
	sh("cp m/model.safetensors keep");
	damage("field m/model.safetensors " Q " shape '\"64x64\"'");
	refused("m", "m/model.safetensors: tensor '" Q "' has a field 'shape' that is not an array",
		NULL);
	sh("cp keep m/model.safetensors");
	/* the header no longer lists q_proj: its name is spelt differently */
	sh("sed -i 's/layers.0.self_attn.q_proj.weight/layers.0.self_attn.q_proj.weighs/' "
	   "m/model.safetensors");
	refused("m", "m/model.safetensors: the header lists no tensor '" Q "'", NULL);
}

Test(loaders, safetensors_truncated)
{
	build("hf/llama_tiny_bf16");
	damage("truncate m/model.safetensors 50000");
	refused("m", "m/model.safetensors: tensor '", "not a range within the", NULL);
	damage("truncate m/model.safetensors 100");
	refused("m", "m/model.safetensors: the header length ", "runs past the end of the file",
		NULL);
	damage("truncate m/model.safetensors 3");
	refused("m", "m/model.safetensors: not a safetensors file: 3 bytes", NULL);
}

/* ------------------------------------------------ safetensors: the files */

Test(loaders, safetensors_shard_symlinked_out_of_the_folder)
{
	build("hf/llama_tiny_sharded");
	loads("m");
	sh("mv m/model-00002-of-00002.safetensors outside.safetensors && "
	   "ln -s ../outside.safetensors m/model-00002-of-00002.safetensors");
	refused("m", "m/model-00002-of-00002.safetensors: the file of weight '",
		"' resolves outside the model's folder", NULL);
	/* a symlink that stays inside the folder is fine */
	sh("rm m/model-00002-of-00002.safetensors && mkdir m/sub && mv outside.safetensors m/sub/s && "
	   "ln -s sub/s m/model-00002-of-00002.safetensors");
	loads("m");
}

Test(loaders, safetensors_fifo_is_refused_not_waited_on, .timeout = 60)
{
	build("hf/llama_tiny_bf16");
	sh("rm m/model.safetensors && mkfifo m/model.safetensors");
	refused("m", "m/model.safetensors: is a FIFO, not a regular file (weight '", NULL);
	sh("rm m/model.safetensors && mkdir m/model.safetensors");
	refused("m", "m/model.safetensors: is a folder, not a regular file (weight '", NULL);
}

/* ------------------------------------------------ ONNX external data */

/* Compiled with its external data: the file is named in the tensor table. */
Test(loaders, external_data_compiled_in, .timeout = 60)
{
	build("hand/small_mlp_ext");
	loads("m/model.onnx");
	sh("cp m/weights.bin keep.bin && truncate -s 900 m/weights.bin");
	refused("m/model.onnx", "m/weights.bin: holds 900 bytes, too short for weight 'b1' (64 bytes "
		"at offset 896)", NULL);
	sh("rm m/weights.bin && ln -s ../keep.bin m/weights.bin");
	refused("m/model.onnx", "m/weights.bin: the file of weight '",
		"' resolves outside the model's folder", NULL);
	sh("rm m/weights.bin && mkfifo m/weights.bin");
	refused("m/model.onnx", "m/weights.bin: is a FIFO, not a regular file (weight '", NULL);
}

/*
 * Compiled with its weights inline, loaded from an ONNX file whose
 * initializers are external data: the locations come from the file read at
 * run time, and the compiler's rules apply to them.
 */
Test(loaders, external_data_locations_read_at_run_time, .timeout = 60)
{
	build("hand/small_mlp");
	sh("mkdir x && cp '%s/tests/models/hand/small_mlp_ext/model.onnx' "
	   "'%s/tests/models/hand/small_mlp_ext/weights.bin' x/ && cp x/weights.bin .", root(),
	   root());
	loads("x/model.onnx");
	damage("location x/model.onnx W1 ../weights.bin");
	refused("x/model.onnx", "x/../weights.bin: the file of weight 'W1' leaves the model's "
		"folder ('..')", NULL);
	damage("location x/model.onnx W1 sub/../../weights.bin");
	refused("x/model.onnx", "leaves the model's folder ('..')", NULL);
	char abs[300];
	snprintf(abs, sizeof abs, "location x/model.onnx W1 %s/weights.bin", dir);
	damage(abs);
	refused("x/model.onnx", "/weights.bin: weight 'W1' must be read from a file inside the "
		"model's folder, not from an absolute path", NULL);
	damage("location x/model.onnx W1 link.bin");
	sh("ln -s ../weights.bin x/link.bin");
	refused("x/model.onnx", "x/link.bin: the file of weight 'W1' resolves outside the model's "
		"folder", NULL);
	damage("location x/model.onnx W1 fifo.bin");
	sh("mkfifo x/fifo.bin");
	refused("x/model.onnx", "x/fifo.bin: is a FIFO, not a regular file (weight 'W1')", NULL);
	damage("location x/model.onnx W1 weights.bin");
	sh("truncate -s 600 x/weights.bin");
	refused("x/model.onnx", "x/weights.bin: holds 600 bytes, too short for weight 'W1' (512 "
		"bytes at offset 320)", NULL);
	/* no location at all (found by tools/mutate_weights.py: memchr on NULL) */
	damage("location x/model.onnx W1 -");
	refused("x/model.onnx", "weight 'W1': its external data has no file name", NULL);
}

/* The ONNX file named at run time must itself be a regular file. */
Test(loaders, onnx_file_must_be_regular, .timeout = 60)
{
	build("hand/small_mlp");
	loads("m/model.onnx");
	sh("mkfifo fifo.onnx");
	refused("fifo.onnx", "fifo.onnx: is a FIFO, not a regular file", NULL);
	refused("m", "m: a folder, not the ONNX file that holds 3 weight(s)", NULL);
}

/* ------------------------------------------------ initializers compiled in */

/*
 * Initializers small enough to be compiled into the file (--embed-limit,
 * default 4096 bytes) were never read at load at 7959f0e: a checkpoint
 * rewritten since compiling loaded with status 0 and the model mixed the
 * old compiled-in values with the new ones read, and a truncated file
 * loaded as long as the cut fell in those tensors. Each is now read and
 * compared: in external data, inline in the ONNX file, and in safetensors.
 */
Test(loaders, compiled_in_external_data_is_compared_with_the_file, .timeout = 60)
{
	build_with("hand/small_mlp_ext", "");
	loads("m/model.onnx");
	sh("cp m/weights.bin keep.bin");
	/* inside b1, bytes 896..960 (W1, a MatMul's weight, is stored transposed:
	 * passes/layout.c; the loader makes it from the file, never compiled in) */
	damage("poke m/weights.bin 900");
	refused("m/model.onnx", "m/model.onnx: weight 'b1' differs from the value compiled into "
		"this file (an initializer of at most --embed-limit bytes is compiled in): the "
		"checkpoint changed since it was compiled; compile it again", NULL);
	sh("cp keep.bin m/weights.bin && truncate -s 900 m/weights.bin");
	refused("m/model.onnx", "m/weights.bin: holds 900 bytes, too short for weight 'b1' (64 bytes "
		"at offset 896)", NULL);
	sh("cp keep.bin m/weights.bin");
	loads("m/model.onnx");
}

Test(loaders, compiled_in_inline_initializers_are_compared_with_the_onnx_file, .timeout = 60)
{
	build_with("hand/small_mlp", "");
	loads("m/model.onnx");
	damage("double m/model.onnx W1");
	refused("m/model.onnx", "m/model.onnx: weight 'W1' differs from the value compiled into "
		"this file", NULL);
}

Test(loaders, compiled_in_safetensors_tensors_are_compared_with_the_file, .timeout = 60)
{
	build_with("hf/llama_tiny_bf16", "");
	loads("m");
	damage("poke m/model.safetensors model.norm.weight");
	refused("m", "m: weight 'model.norm.weight' differs from the value compiled into this file",
		NULL);
}

/*
 * An initializer in ONNX's uint64_data (uint32 and uint64 values): the
 * loader's reader knew float, int32, int64 and double data only, so such a
 * weight read at load failed ("cannot read its typed data") at 7959f0e,
 * and so would the comparison of one compiled in.
 */
Test(loaders, uint64_data_initializers_are_read, .timeout = 60)
{
	cr_assert_eq(sh("mkdir m && python3 -c \"import onnx; from onnx import helper as h, "
			"TensorProto as T; c = h.make_tensor('c', T.UINT64, [3], [1, 2, 1 << 40]); "
			"assert len(c.uint64_data) == 3; "
			"g = h.make_graph([h.make_node('Add', ['x', 'c'], ['y'], name='add')], 'g', "
			"[h.make_tensor_value_info('x', T.UINT64, [3])], "
			"[h.make_tensor_value_info('y', T.UINT64, [3])], initializer=[c]); "
			"onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 18)]), "
			"'m/model.onnx')\""), 0, "%s", out);
	compile_loader("--embed-limit 0");
	loads("m/model.onnx");
	compile_loader("");
	loads("m/model.onnx");
}

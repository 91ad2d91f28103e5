/*
 * test_runtime.c - the runtime texts compile without a model: for each
 * written target in the registry, against the hand-written plan of
 * stub_plan.h (with --profile, the profiled one serving several sequences
 * as --max-seqs does), each text is compiled with what precedes it in an
 * emitted file and nothing after it (then the stub tile functions of
 * stub_nodes.h), and the whole file without --profile too; the head, up
 * to the tables, is the emitter's own (mkc_emit_head). A text that needs something from a later
 * one, or from the plan that the plan does not promise, fails on its own
 * name. The whole file, the API included, compiles with warnings as errors;
 * a prefix only has to be free of errors (it uses functions that a later
 * text defines).
 *
 * C with cc -fsyntax-only; CUDA with nvcc for sm_90a (no GPU needed; a
 * prefix to PTX only, unoptimised: the front end's errors without ptxas,
 * 2 s a prefix where the whole compile took 3-5); HIP with clang-19 for
 * gfx942, host and device sides parsed (-fsyntax-only, Debian's HIP
 * headers, no device libraries); or a printed note when the compiler is
 * missing.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mkc_run.h"
#include "../../backends/core/emit.h"

static char out[1 << 16];

/* How a target's text is compiled without linking: $S the source, $F the
 * strict flags (the whole file), else $F the prefix's own (if any). */
typedef struct {
	const char *target, *ext, *compile, *strict, *prefix;
} checker;

static const checker checkers[] = {
	{"c", "c", "${CC:-cc} -std=c11 -pthread -fsyntax-only -Werror=implicit-function-declaration "
		   "-I tests/backends $F $S", "-Wall -Wextra -Werror", ""},
	{"cuda", "cu", "${NVCC:-nvcc} -I tests/backends -c -o /dev/null $F $S",
	 "-gencode=arch=compute_90a,code=sm_90a -Xcompiler -Wall,-Wextra -Werror all-warnings",
	 "-gencode=arch=compute_90a,code=compute_90a -Xcicc -O0"},
	{"hip", "hip", "${CLANG19:-clang-19} -x hip --offload-arch=gfx942 -nogpulib -fsyntax-only "
		       "-I tests/backends $F $S", "-Wall -Wextra -Werror", ""},
};

static const checker *
checker_of(const mkc_target *t)
{
	for (size_t i = 0; i < sizeof checkers / sizeof *checkers; i++)
		if (!strcmp(checkers[i].target, t->name))
			return &checkers[i];
	return NULL;
}

/* text with every $P the API prefix "stub", as the emitter writes it */
static void
put_text(FILE *f, const char *text)
{
	for (const char *s = text; *s; s++)
		if (s[0] == '$' && s[1] == 'P') {
			fputs("stub", f);
			s++;
		} else {
			fputc(*s, f);
		}
}

/* The emitted file's shape up to runtime text n (of names), then the stub nodes. */
static void
write_source(const char *path, const mkc_target *t, const char **names, int n, int profile)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "cannot write %s", path);
	mkc_emit_head(f, t, NULL, "stub");
	/* the profiled plan also serves several sequences (runtime/seqs.h) */
	fprintf(f, "#define MKC_STUB_FN %s\n#define MKC_STUB_UPLOAD %d\n#define MKC_STUB_PROFILE %d\n"
		"#define MKC_STUB_SEQS %d\n#include \"stub_plan.h\"\n", t->fn_qual, t->upload_tables,
		profile, profile ? 2 : 0);
	for (int i = 0; i < n; i++)
		put_text(f, mkc_runtime_text(names[i]));
	fputs("#include \"stub_nodes.h\"\n", f);
	cr_assert_eq(fclose(f), 0);
}

/* cmd with $S and $F replaced, run; its exit status (output in out) */
static int
compile(const checker *c, const char *src, bool strict)
{
	char cmd[2048];
	size_t k = 0;
	for (const char *s = c->compile; *s && k < sizeof cmd - 512; s++) {
		const char *v = s[0] == '$' && s[1] == 'S' ? src
			: s[0] == '$' && s[1] == 'F' ? (strict ? c->strict : c->prefix) : NULL;
		if (v) {
			k += (size_t)snprintf(cmd + k, sizeof cmd - k, "%s", v);
			s++;
		} else {
			cmd[k++] = *s;
		}
	}
	cmd[k] = 0;
	return mkc_shell(cmd, out, sizeof out);
}

static void
check_target(const char *name, const char *tool)
{
	const mkc_target *t = mkc_target_find(name);
	cr_assert(t && !t->unwritten, "%s is no written target", name);
	if (mkc_shell(tool, out, sizeof out) != 0) {
		printf("test_runtime: no %s here; the %s runtime texts were not compiled\n", tool, name);
		return;
	}
	const checker *c = checker_of(t);
	cr_assert_not_null(c, "no compile command for target %s in test_runtime.c", name);
	const char *names[MKC_MAX_TEXTS + 1];
	int n = mkc_target_runtime(t, names);
	names[n++] = t->api;
	char dir[] = "/tmp/mkc_runtime_XXXXXX", src[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(src, sizeof src, "%s/stub.%s", dir, t->ext);
	/* the prefixes once, in the profiled plan (whose texts compile the most
	 * code: the timeline, several sequences); the whole file in both */
	for (int profile = 0; profile <= 1; profile++)
		for (int k = profile ? 1 : n; k <= n; k++) {
			write_source(src, t, names, k, profile);
			int rc = compile(c, src, k == n);
			if (rc != 0) {
				unlink(src);
				rmdir(dir);
			}
			cr_assert_eq(rc, 0, "%s (target %s, profile %d) does not compile after what "
				     "precedes it:\n%s", names[k - 1], name, profile, out);
		}
	unlink(src);
	rmdir(dir);
}

Test(runtime, c_texts_compile_against_a_stub_plan, .timeout = 300)
{
	check_target("c", "command -v ${CC:-cc}");
}

Test(runtime, cuda_texts_compile_against_a_stub_plan, .timeout = 300)
{
	check_target("cuda", "command -v ${NVCC:-nvcc}");
}

Test(runtime, hip_texts_compile_against_a_stub_plan, .timeout = 300)
{
	check_target("hip", "command -v ${CLANG19:-clang-19}");
}

/* Every text a written target names is in the generated table. */
Test(runtime, every_named_text_is_embedded)
{
	for (const mkc_target *const *t = mkc_targets; *t; t++) {
		if ((*t)->unwritten)
			continue;
		const char *names[MKC_MAX_TEXTS];
		mkc_target_runtime(*t, names);
		for (const char **r = names; *r; r++)
			cr_assert_not_null(mkc_runtime_text(*r));
		cr_assert_not_null(mkc_runtime_text((*t)->api));
	}
}

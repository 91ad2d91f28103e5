/*
 * mkc_run.h - runs the mkc command for the command-line tests, capturing
 * its exit status, stdout and stderr. The binary comes from $MKC (make test
 * sets it), else build/mkc. Include it in one test file only each; its
 * functions are static.
 *
 *   mkc_result *r = mkc_run("info", "model.onnx", NULL);
 *   cr_assert_eq(r->status, 0, "%s", r->err);
 */
#ifndef MKC_RUN_H
#define MKC_RUN_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
	int status;
	char out[65536], err[8192];
} mkc_result;

static void
mkc_slurp(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	size_t k = f ? fread(buf, 1, n - 1, f) : 0;
	buf[k] = 0;
	if (f)
		fclose(f);
}

/* Runs mkc with a NULL-terminated argument list; the result is reused. */
static mkc_result *
mkc_run(const char *first, ...)
{
	static mkc_result r;
	const char *argv[32];
	const char *bin = getenv("MKC") ? getenv("MKC") : "build/mkc";
	int argc = 0;
	argv[argc++] = bin;
	va_list ap;
	va_start(ap, first);
	for (const char *a = first; a && argc < 31; a = va_arg(ap, const char *))
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	char out[] = "/tmp/mkc_cli_outXXXXXX", err[] = "/tmp/mkc_cli_errXXXXXX";
	int fo = mkstemp(out), fe = mkstemp(err);
	cr_assert(fo >= 0 && fe >= 0);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(fo, 1);
		dup2(fe, 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	close(fo);
	close(fe);
	mkc_slurp(out, r.out, sizeof r.out);
	mkc_slurp(err, r.err, sizeof r.err);
	unlink(out);
	unlink(err);
	cr_assert(WIFEXITED(st), "mkc died with a signal; stderr: %s", r.err);
	r.status = WEXITSTATUS(st);
	cr_assert_neq(r.status, 127, "cannot run %s", bin);
	return &r;
}

#endif

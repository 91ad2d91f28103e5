/*
 * mkc_run.h - runs the mkc command for the command-line tests, capturing
 * its exit status, stdout and stderr. The binary comes from $MKC (make test
 * sets it), else build/mkc; or runs any shell command with its output
 * captured. Its functions are static (and marked unused: a file may need
 * only one of them).
 *
 *   mkc_result *r = mkc_run("info", "model.onnx", NULL);
 *   cr_assert_eq(r->status, 0, "%s", r->err);
 *   int rc = mkc_shell("make something", buf, sizeof buf);   // stdout + stderr
 *   rc = mkc_test_run("--steps 2 tests/models/hand/small_mlp", buf, sizeof buf);
 */
#ifndef MKC_RUN_H
#define MKC_RUN_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
	int status;
	char out[65536], err[8192];
} mkc_result;

static const char *
mkc_bin(void)
{
	return getenv("MKC") ? getenv("MKC") : "build/mkc";
}

/* Runs cmd through the shell; its stdout and stderr go to out. Its exit status, or -1. */
static __attribute__((unused)) int
mkc_shell(const char *cmd, char *out, size_t n)
{
	char full[8192];
	snprintf(full, sizeof full, "%s 2>&1", cmd);
	FILE *p = popen(full, "r");
	cr_assert_not_null(p, "cannot run %s", cmd);
	size_t k = fread(out, 1, n - 1, p);
	out[k] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs `mkc test ARGS` (the shell splits args); its output goes to out. Its exit status. */
static __attribute__((unused)) int
mkc_test_run(const char *args, char *out, size_t n)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "%s test %s", mkc_bin(), args);
	return mkc_shell(cmd, out, n);
}

/*
 * The task whose line in `mkc ARGS --dump-after=verify` (the final plan)
 * first holds what; -1 when mkc fails or no line does. The dump goes to out.
 */
static __attribute__((unused)) int
mkc_plan_task(const char *args, const char *what, char *out, size_t n)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "%s %s --dump-after=verify", mkc_bin(), args);
	const char *at = mkc_shell(cmd, out, n) == 0 ? strstr(out, what) : NULL;
	if (!at)
		return -1;
	while (at > out && at[-1] != '\n')
		at--;
	int task = -1;
	sscanf(at, "task %d", &task);
	return task;
}

static void
mkc_slurp(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	size_t k = f ? fread(buf, 1, n - 1, f) : 0;
	buf[k] = 0;
	if (f)
		fclose(f);
}

/* The number of lines in s (its newlines). */
static __attribute__((unused)) int
mkc_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Runs mkc with a NULL-terminated argument list; the result is reused. */
static __attribute__((unused)) mkc_result *
mkc_run(const char *first, ...)
{
	static mkc_result r;
	const char *argv[32];
	const char *bin = mkc_bin();
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

/* The decision log's file (NCCLBPF_DECISION_LOG, issue 23), each case in a child process
 * (the log is opened once per process):
 *   - a symlink planted under the predictable name (decisions-<host>-<pid>.jsonl) is not
 *     followed: the file it points to keeps its contents (before: fopen "w" truncated and
 *     wrote it, as root too), the log goes to the next name and a WARN says why;
 *   - at RLIMIT_FSIZE the process is not killed by SIGXFSZ (before: it was), the records
 *     that did not fit are counted in a {"lost":N} line, and `ncclbpf decisions` reports
 *     the log incomplete (exit 4), never "consistent";
 *   - on a full file system (a 64 KiB tmpfs in a private mount namespace; skipped, and
 *     said, where mounting is not allowed) the same: a {"lost":N} line lands in the room
 *     kept for it, and the written + lost records add up to what was logged.
 * Runs ./ncclbpf in the build directory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agree/agree.h"
#include "agree/agree_internal.h"
#include "runtime/decision_src.h"
#include "test_util.h"
#include "tools/cli_run.h"

#define DECISIONS 3000

static char base[64];

static char *sh(int *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *sh(int *rc, const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char *out = NULL;
	size_t len;
	int r = cli_run_alloc(cmd, &out, &len);
	if (rc)
		*rc = r;
	return out;
}

/* In a child: logs DECISIONS decisions of one communicator into dir, draining as the
 * service thread does, and exits 0 (a SIGXFSZ would end it by the signal). */
static void log_decisions(const char *dir)
{
	setenv("NCCLBPF_DECISION_LOG", dir, 1);
	setenv("NCCLBPF_AGREE", "off", 1);
	struct agree_comm *ac = agree_comm_tuner_open(0xd0c5a11ull, 8);
	if (!ac || !ac->log_ring)
		_exit(20);
	for (uint64_t s = 0; s < DECISIONS; s++) {
		agree_log_decision(ac, s, 4, 4096 << (s % 8), 1, 2, (int)(s % 16),
				   NB_DSRC_POLICY, 0);
		if (s % 256 == 255)
			agree_decision_log_drain(false);
	}
	agree_comm_tuner_close(ac);
	agree_shutdown();
	_exit(0);
}

static int wait_child(pid_t pid)
{
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		fprintf(stderr, "child ended by signal %d\n", WTERMSIG(st));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Sums the decision lines and the "lost" counts of the logs in dir. */
static void count_records(const char *dir, long *decisions, long *lost)
{
	char *out = sh(NULL, "cat %s/decisions-*.jsonl | grep -c '\"seq\"'", dir);
	*decisions = out ? strtol(out, NULL, 10) : -1;
	free(out);
	out = sh(NULL, "cat %s/decisions-*.jsonl | sed -n 's/^{\"lost\":\\([0-9]*\\).*/\\1/p' | "
		       "awk '{s+=$1} END {print s+0}'", dir);
	*lost = out ? strtol(out, NULL, 10) : -1;
	free(out);
}

static void test_symlink(void)
{
	char dir[128], target[128], link[300], host[128] = "host";
	snprintf(dir, sizeof(dir), "%s/sym", base);
	snprintf(target, sizeof(target), "%s/precious", base);
	CHECK(mkdir(dir, 0777) == 0);
	FILE *f = fopen(target, "w");
	CHECK(f && fputs("precious\n", f) >= 0);
	if (f)
		fclose(f);
	int go[2];
	CHECK(pipe(go) == 0);
	pid_t child = fork();
	if (child == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(21);
		log_decisions(dir);
	}
	close(go[0]);
	gethostname(host, sizeof(host) - 1);
	snprintf(link, sizeof(link), "%s/decisions-%s-%d.jsonl", dir, host, (int)child);
	CHECK(symlink(target, link) == 0); /* planted where the child will write */
	CHECK(write(go[1], "g", 1) == 1);
	close(go[1]);
	CHECK_EQ_U64(wait_child(child), 0);
	char *out = sh(NULL, "cat %s", target);
	CHECK(out && !strcmp(out, "precious\n"));
	free(out);
	struct stat st;
	CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	snprintf(link, sizeof(link), "%s/decisions-%s-%d-1.jsonl", dir, host, (int)child);
	CHECK(stat(link, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0);
	long n, lost;
	count_records(dir, &n, &lost);
	CHECK_EQ_U64(n, DECISIONS);
	CHECK_EQ_U64(lost, 0);
}

static void test_fsize(void)
{
	char dir[128];
	snprintf(dir, sizeof(dir), "%s/fsize", base);
	CHECK(mkdir(dir, 0700) == 0);
	pid_t child = fork();
	if (child == 0) {
		struct rlimit rl = {16384, RLIM_INFINITY};
		if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
			_exit(22);
		log_decisions(dir); /* SIGXFSZ keeps its default action: it would end us */
	}
	CHECK_EQ_U64(wait_child(child), 0);
	long n, lost;
	count_records(dir, &n, &lost);
	printf("file size limit 16384: %ld decisions written, %ld lost\n", n, lost);
	CHECK(n > 0 && n < DECISIONS);
	CHECK_EQ_U64(n + lost, DECISIONS);
	char *out = sh(NULL, "tail -n 1 %s/decisions-*.jsonl", dir);
	CHECK_STR_CONTAINS(out, "\"reason\":\"File too large\"");
	free(out);
	int rc;
	out = sh(&rc, "./ncclbpf decisions %s", dir);
	CHECK_EQ_U64(rc, 4);
	CHECK_STR_CONTAINS(out, "INCOMPLETE");
	CHECK_STR_CONTAINS(out, "could not be written");
	CHECK(!strstr(out, ": consistent"));
	free(out);
}

static void test_enospc(void)
{
	char dir[128], copy[128];
	snprintf(dir, sizeof(dir), "%s/full", base);
	snprintf(copy, sizeof(copy), "%s/full-copy", base);
	CHECK(mkdir(dir, 0700) == 0 && mkdir(copy, 0700) == 0);
	pid_t child = fork();
	if (child == 0) {
		/* a 64 KiB file system of our own, seen by this process only */
		if (unshare(CLONE_NEWNS) != 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount("tmpfs", dir, "tmpfs", 0, "size=64k") != 0)
			_exit(77);
		pid_t g = fork();
		if (g == 0)
			log_decisions(dir);
		int r = wait_child(g);
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "cp %s/decisions-*.jsonl %s/", dir, copy);
		_exit(r ? r : system(cmd) == 0 ? 0 : 23);
	}
	int rc = wait_child(child);
	if (rc == 77) {
		printf("no private mount namespace here: the full-disk case is not run\n");
		return;
	}
	CHECK_EQ_U64(rc, 0);
	long n, lost;
	count_records(copy, &n, &lost);
	printf("64 KiB file system: %ld decisions written, %ld lost\n", n, lost);
	CHECK(n > 0 && n < DECISIONS);
	CHECK_EQ_U64(n + lost, DECISIONS);
	char *out = sh(NULL, "tail -n 1 %s/decisions-*.jsonl", copy);
	CHECK_STR_CONTAINS(out, "\"reason\":\"No space left on device\"");
	free(out);
	out = sh(&rc, "./ncclbpf decisions %s", copy);
	CHECK_EQ_U64(rc, 4);
	free(out);
}

int main(void)
{
	snprintf(base, sizeof(base), "/tmp/nbdlog-%d", (int)getpid());
	CHECK(mkdir(base, 0700) == 0);
	setenv("NCCL_DEBUG", "WARN", 1);
	test_symlink();
	test_fsize();
	test_enospc();
	free(sh(NULL, "rm -rf %s", base));
	TEST_DONE();
}

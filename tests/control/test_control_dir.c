/* The control socket's directory and switch (issues 23 and 26), in-process: the socket is
 * started and stopped with runtime_control_acquire/release as a plugin init/finalize does.
 *   - NCCLBPF_CONTROL and the other boolean variables: one set of spellings, a WARN for
 *     anything else (before: "no" or "false" kept the socket on, silently);
 *   - a directory ncclbpf did not create is never changed: a shared sticky directory (as
 *     /tmp) stands for its subdirectory ncclbpf-<uid> (before: chmod 0700 for good), one of
 *     another uid or writable by others is refused with the reason, so is a symlink;
 *   - a directory of any depth works (before: disabled beyond 108 bytes of sun_path), and
 *     `ctl` reaches it;
 *   - sockets of dead processes (SIGKILL, or SIGTERM the host did not turn into an exit)
 *     are removed at the next start in the directory; a live process's are not. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/control.h"
#include "runtime/control_proto.h"
#include "runtime/runtime.h"
#include "test_util.h"

static char base[64];
static char logbuf[65536];
static size_t loglen;

static void capture(int level, unsigned long flags, const char *file, int line, const char *fmt,
		    ...)
{
	(void)level, (void)flags, (void)file, (void)line;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(logbuf + loglen, sizeof(logbuf) - loglen, fmt, ap);
	va_end(ap);
	if (n > 0 && loglen + (size_t)n + 1 < sizeof(logbuf)) {
		loglen += (size_t)n;
		logbuf[loglen++] = '\n';
		logbuf[loglen] = '\0';
	}
}

static void log_reset(void)
{
	loglen = 0;
	logbuf[0] = '\0';
}

/* Starts the socket with NCCLBPF_CONTROL_DIR=dir (NULL: unset); returns its path ("" off). */
static const char *start(const char *dir)
{
	if (dir)
		setenv("NCCLBPF_CONTROL_DIR", dir, 1);
	else
		unsetenv("NCCLBPF_CONTROL_DIR");
	runtime_control_acquire();
	return runtime_control_path();
}

static void stop(void)
{
	runtime_control_release();
}

static int status_call(const char *path)
{
	char *out = NULL, err[512];
	int status = -1;
	int rc = runtime_control_call(path, NBC_OP_STATUS, 0, 0, NULL, 20000, &status, &out, NULL,
				      err, sizeof(err));
	if (rc)
		fprintf(stderr, "status call to %s: %s\n", path, err);
	free(out);
	return rc ? rc : status;
}

static void test_booleans(void)
{
	static const char *const offs[] = {"0", "off", "OFF", "no", "No", "false", "FALSE"};
	static const char *const ons[] = {"1", "on", "yes", "YES", "true", "True"};
	char dir[200];
	snprintf(dir, sizeof(dir), "%s/bool", base);
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		CHECK_EQ_U64(runtime_env_parse_bool(offs[i]), 0);
		setenv("NCCLBPF_CONTROL", offs[i], 1);
		const char *p = start(dir);
		if (*p)
			fprintf(stderr, "NCCLBPF_CONTROL=%s left the socket on\n", offs[i]);
		CHECK(*p == '\0');
		stop();
	}
	for (size_t i = 0; i < sizeof(ons) / sizeof(ons[0]); i++) {
		CHECK_EQ_U64(runtime_env_parse_bool(ons[i]), 1);
		setenv("NCCLBPF_CONTROL", ons[i], 1);
		CHECK(*start(dir) != '\0');
		stop();
	}
	CHECK(runtime_env_parse_bool("bogus") < 0 && runtime_env_parse_bool("") < 0 &&
	      runtime_env_parse_bool(NULL) < 0 && runtime_env_parse_bool("2") < 0 &&
	      runtime_env_parse_bool("onn") < 0);
	/* anything else: the default, and one WARN that says so */
	log_reset();
	setenv("NCCLBPF_CONTROL", "bogus", 1);
	CHECK(*start(dir) != '\0');
	stop();
	CHECK_STR_CONTAINS(logbuf, "NCCLBPF_CONTROL=bogus: not a boolean (1|0, on|off, yes|no, "
				   "true|false): using the default, on");
	log_reset();
	CHECK(*start(dir) != '\0'); /* once per variable */
	stop();
	CHECK(!strstr(logbuf, "not a boolean"));
	setenv("NCCLBPF_TEST_FLAG", "maybe", 1);
	CHECK(!runtime_env_bool("NCCLBPF_TEST_FLAG", false));
	CHECK_STR_CONTAINS(logbuf, "NCCLBPF_TEST_FLAG=maybe: not a boolean");
	CHECK_STR_CONTAINS(logbuf, "using the default, off");
	setenv("NCCLBPF_TEST_FLAG", "Yes", 1);
	CHECK(runtime_env_bool("NCCLBPF_TEST_FLAG", false));
	unsetenv("NCCLBPF_TEST_FLAG");
	CHECK(runtime_env_bool("NCCLBPF_TEST_FLAG", true));
	unsetenv("NCCLBPF_CONTROL");
}

static mode_t mode_of(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

static void test_directories(void)
{
	char dir[200], want[400];
	/* a shared sticky directory: used through ncclbpf-<uid>, never changed */
	snprintf(dir, sizeof(dir), "%s/shared", base);
	CHECK(mkdir(dir, 0777) == 0 && chmod(dir, 01777) == 0);
	snprintf(want, sizeof(want), "%s/ncclbpf-%u/%d.sock", dir, (unsigned)geteuid(),
		 (int)getpid());
	const char *p = start(dir);
	CHECK(!strcmp(p, want));
	if (strcmp(p, want))
		fprintf(stderr, "socket at '%s', expected '%s'\n", p, want);
	CHECK(status_call(want) == 0);
	stop();
	CHECK_EQ_U64(mode_of(dir), 01777);
	/* `ctl --dir` resolves it the same way */
	char res[400];
	CHECK(runtime_control_dir_resolve(dir, res, sizeof(res)) == 0);
	snprintf(want, sizeof(want), "%s/ncclbpf-%u", dir, (unsigned)geteuid());
	CHECK(!strcmp(res, want));

	/* an existing directory of ours that others may write to: refused, unchanged */
	snprintf(dir, sizeof(dir), "%s/groupw", base);
	CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 0775) == 0);
	log_reset();
	CHECK(*start(dir) == '\0');
	stop();
	CHECK_EQ_U64(mode_of(dir), 0775);
	CHECK_STR_CONTAINS(logbuf, "(mode 0775) is writable by other users");
	CHECK_STR_CONTAINS(logbuf, "not used and not changed");

	/* one of ours, readable by others (0755): used as it is, not tightened */
	snprintf(dir, sizeof(dir), "%s/mine755", base);
	CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 0755) == 0);
	CHECK(*start(dir) != '\0');
	stop();
	CHECK_EQ_U64(mode_of(dir), 0755);

	/* a new one is created 0700 */
	snprintf(dir, sizeof(dir), "%s/fresh", base);
	CHECK(*start(dir) != '\0');
	stop();
	CHECK_EQ_U64(mode_of(dir), 0700);

	/* a symlink to a directory of ours: refused */
	char real[300];
	snprintf(real, sizeof(real), "%s/fresh", base);
	snprintf(dir, sizeof(dir), "%s/link", base);
	CHECK(symlink(real, dir) == 0);
	log_reset();
	CHECK(*start(dir) == '\0');
	stop();
	CHECK_STR_CONTAINS(logbuf, "is a symbolic link: not used");

	/* another uid's directory, e.g. /tmp/ncclbpf-<uid> created first by someone else */
	if (geteuid() == 0) {
		char tmpdir[100];
		snprintf(tmpdir, sizeof(tmpdir), "%s/tmpdir", base);
		CHECK(mkdir(tmpdir, 0755) == 0);
		snprintf(dir, sizeof(dir), "%s/ncclbpf-%u", tmpdir, (unsigned)geteuid());
		CHECK(mkdir(dir, 0755) == 0 && chown(dir, 65534, 65534) == 0);
		setenv("TMPDIR", tmpdir, 1);
		unsetenv("XDG_RUNTIME_DIR");
		log_reset();
		CHECK(*start(NULL) == '\0');
		stop();
		CHECK_STR_CONTAINS(logbuf, "belongs to uid 65534, not to this process (uid 0): not "
					   "used and not changed");
		struct stat st;
		CHECK(stat(dir, &st) == 0 && st.st_uid == 65534 && (st.st_mode & 07777) == 0755);
		unsetenv("TMPDIR");
	} else {
		printf("not root: the other-uid directory case is not run\n");
	}
}

/* A directory path of ~260 bytes, far beyond sun_path's 108. */
static void test_deep(void)
{
	char dir[1024];
	int n = snprintf(dir, sizeof(dir), "%s/deep", base);
	CHECK(mkdir(dir, 0700) == 0);
	for (int i = 0; i < 5; i++) {
		n += snprintf(dir + n, sizeof(dir) - (size_t)n, "/%050d", i);
		CHECK(mkdir(dir, 0700) == 0);
	}
	CHECK(strlen(dir) > 250);
	log_reset();
	const char *p = start(dir);
	CHECK(*p != '\0');
	if (!*p)
		fprintf(stderr, "deep directory: %s\n", logbuf);
	char sock[1200];
	snprintf(sock, sizeof(sock), "%s/%d.sock", dir, (int)getpid());
	CHECK(!strcmp(p, sock));
	struct stat st;
	CHECK(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600);
	CHECK(status_call(sock) == 0); /* the client reaches it too */
	stop();
	CHECK(access(sock, F_OK) != 0);
}

/* A socket file named after pid, nobody listening. */
static void plant_socket(const char *dir, long pid)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/%ld.sock", dir, pid);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	CHECK(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	close(fd);
}

static void test_stale(void)
{
	char dir[300], path[400];
	snprintf(dir, sizeof(dir), "%s/stale", base);
	CHECK(mkdir(dir, 0700) == 0);
	/* a process that started the socket and was ended by SIGTERM (no handler of ours:
	 * the default action ends it without atexit) */
	int go[2];
	CHECK(pipe(go) == 0);
	pid_t child = fork();
	if (child == 0) {
		close(go[0]);
		const char *p = start(dir);
		if (write(go[1], *p ? "y" : "n", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(go[1]);
	char c = 0;
	CHECK(read(go[0], &c, 1) == 1 && c == 'y');
	close(go[0]);
	kill(child, SIGTERM);
	int st;
	waitpid(child, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	snprintf(path, sizeof(path), "%s/%d.sock", dir, (int)child);
	CHECK(access(path, F_OK) == 0); /* left behind */
	/* another dead one, and a live process's file that nothing listens on (kept: its
	 * process may be about to serve it) */
	long dead = 4000000 + (long)(getpid() % 100000);
	plant_socket(dir, dead);
	plant_socket(dir, (long)getppid());
	log_reset();
	CHECK(*start(dir) != '\0');
	CHECK(access(path, F_OK) != 0);
	snprintf(path, sizeof(path), "%s/%ld.sock", dir, dead);
	CHECK(access(path, F_OK) != 0);
	snprintf(path, sizeof(path), "%s/%ld.sock", dir, (long)getppid());
	CHECK(access(path, F_OK) == 0);
	CHECK_STR_CONTAINS(logbuf, "removed 2 stale socket(s) of dead processes");
	stop();
	unlink(path);
}

int main(void)
{
	runtime_set_logger(capture);
	snprintf(base, sizeof(base), "/tmp/nbctl-dir-%d", (int)getpid());
	CHECK(mkdir(base, 0700) == 0);
	test_booleans();
	test_directories();
	test_deep();
	test_stale();
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", base);
	TEST_DONE();
}

/* `ncclbpf ctl` against a live mock NCCL host process (control_host): list, status (JSON
 * parsed and checked), maps, dump, update, reload of good and bad objects with map reuse,
 * detach, a stale socket, a request from another uid, malformed request bytes, and the
 * socket's removal at finalize.
 *
 * Run from the build directory (CTest does): ./ncclbpf, ./tests/control/control_host and
 * the objects under tests/progs and policies. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tools/cli_run.h"
#include "profiler/json_mini.h"
#include "runtime/control.h"
#include "runtime/control_proto.h"
#include "test_util.h"

static char dir[64];
static char host_log[96];

struct host {
	pid_t pid;
	int in_fd;
};

static int start_host_ranks(struct host *h, const char *policy, const char *ranks)
{
	int in[2], out[2];
	if (pipe(in) || pipe(out))
		return -1;
	h->pid = fork();
	if (h->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		int lf = open(host_log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (lf >= 0)
			dup2(lf, 2);
		close(in[1]);
		close(out[0]);
		setenv("NCCLBPF_POLICY", policy, 1);
		execl("./tests/control/control_host", "control_host", "--comms", "4", "--threads", "2",
		      "--ranks", ranks, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	h->in_fd = in[1];
	char line[64] = "";
	ssize_t n = read(out[0], line, sizeof(line) - 1);
	close(out[0]);
	return n > 6 && !strncmp(line, "ready ", 6) ? 0 : -1;
}

static int start_host(struct host *h, const char *policy)
{
	return start_host_ranks(h, policy, "8");
}

static int stop_host(struct host *h)
{
	int st = 0;
	close(h->in_fd);
	waitpid(h->pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Runs `./ncclbpf ctl ARGS` with stderr merged; returns the exit status, *out allocated. */
static int ctl(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int ctl(char **out, const char *fmt, ...)
{
	char args[2048], cmd[2300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "./ncclbpf ctl %s 2>&1", args);
	size_t len;
	return cli_run_alloc(cmd, out, &len);
}

static struct jm *ctl_json(const char *fmt, long pid)
{
	char *out, err[200];
	char args[512];
	snprintf(args, sizeof(args), fmt, pid);
	int rc = ctl(&out, "%s", args);
	CHECK_EQ_U64(rc, 0);
	struct jm *v = jm_parse(out ? out : "", err, sizeof(err));
	if (!v)
		fprintf(stderr, "not JSON (%s): %s\n", err, out);
	CHECK(v != NULL);
	free(out);
	return v;
}

static double num(const struct jm *v, const char *path)
{
	const struct jm *x = jm_path(v, path);
	return x && x->type == JM_NUM ? x->num : -1;
}

static const char *str(const struct jm *v, const char *path)
{
	const struct jm *x = jm_path(v, path);
	return x && x->type == JM_STR ? x->str : "";
}

static char sock_of(long pid, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%ld.sock", dir, pid);
	return 0;
}

/* Sends raw bytes, half-closes, returns the reply's status (or 1 when none came). */
static int raw_request(long pid, const void *bytes, size_t len, char *reply, size_t cap)
{
	char path[128];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	sock_of(pid, path, sizeof(path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return 2;
	}
	if (len)
		CHECK(write(fd, bytes, len) == (ssize_t)len);
	shutdown(fd, SHUT_WR);
	uint8_t hdr[NBC_HEADER_SIZE];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(hdr) && (n = read(fd, hdr + got, sizeof(hdr) - got)) > 0)
		got += (size_t)n;
	if (got < sizeof(hdr)) {
		close(fd);
		return 1;
	}
	struct nbc_header h;
	nbc_header_decode(hdr, &h);
	size_t r = 0;
	while (r + 1 < cap && (n = read(fd, reply + r, cap - 1 - r)) > 0)
		r += (size_t)n;
	reply[r] = '\0';
	close(fd);
	CHECK_EQ_U64(h.magic, NBC_MAGIC);
	return h.status;
}

static void test_malformed(long pid)
{
	char reply[4096];
	uint8_t buf[256];
	struct nbc_header h = {NBC_MAGIC, NBC_VERSION, NBC_OP_STATUS, 0, 0, 0};

	CHECK(raw_request(pid, "GET / HTTP/1.0\r\n\r\n", 18, reply, sizeof(reply)) == -EPROTO);
	CHECK_STR_CONTAINS(reply, "not an ncclbpf control request");
	h.version = 2;
	nbc_header_encode(&h, buf);
	CHECK(raw_request(pid, buf, NBC_HEADER_SIZE, reply, sizeof(reply)) == -EPROTO);
	CHECK_STR_CONTAINS(reply, "protocol version 2 not supported");
	h.version = NBC_VERSION;
	h.op = 99;
	nbc_header_encode(&h, buf);
	CHECK(raw_request(pid, buf, NBC_HEADER_SIZE, reply, sizeof(reply)) == -EINVAL);
	h.op = NBC_OP_RELOAD; /* payload says 100 bytes, 5 arrive */
	h.len = 100;
	nbc_header_encode(&h, buf);
	memcpy(buf + NBC_HEADER_SIZE, "abcde", 5);
	CHECK(raw_request(pid, buf, NBC_HEADER_SIZE + 5, reply, sizeof(reply)) == -EINVAL);
	CHECK_STR_CONTAINS(reply, "truncated request");
	h.len = 4; /* argument without its NUL */
	nbc_header_encode(&h, buf);
	memcpy(buf + NBC_HEADER_SIZE, "x.bp", 4);
	CHECK(raw_request(pid, buf, NBC_HEADER_SIZE + 4, reply, sizeof(reply)) == -EINVAL);
	CHECK_STR_CONTAINS(reply, "not NUL-terminated");
	h.len = 0x7fffffff; /* over the limit: refused before reading */
	nbc_header_encode(&h, buf);
	CHECK(raw_request(pid, buf, NBC_HEADER_SIZE, reply, sizeof(reply)) == -EINVAL);
	h.op = NBC_OP_DUMP; /* control byte in an argument */
	h.len = 4;
	nbc_header_encode(&h, buf);
	memcpy(buf + NBC_HEADER_SIZE, "a\nb", 4);
	CHECK(raw_request(pid, buf, NBC_HEADER_SIZE + 4, reply, sizeof(reply)) == -EINVAL);
	/* a connection that sends nothing gets nothing and does not block the thread */
	CHECK(raw_request(pid, NULL, 0, reply, sizeof(reply)) == 1);
}

static void test_other_uid(long pid)
{
	char path[128];
	sock_of(pid, path, sizeof(path));
	/* With the default modes (dir 0700, socket 0600) another uid cannot even connect. Open
	 * them up to show that the peer-credential check alone refuses it too. */
	chmod(dir, 0711);
	chmod(path, 0666);
	pid_t child = fork();
	if (child == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		char *reply = NULL, err[256];
		int status = 0;
		int rc = runtime_control_call(path, NBC_OP_STATUS, 0, 0, NULL, 5000, &status, &reply,
					      NULL, err, sizeof(err));
		if (rc != 0) {
			fprintf(stderr, "other-uid call: %s\n", err);
			_exit(11);
		}
		if (status != -EPERM || !strstr(reply, "permission denied"))
			_exit(12);
		_exit(0);
	}
	int st = 0;
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "other-uid child: status 0x%x\n", st);
	chmod(path, 0600);
	chmod(dir, 0700);
	/* defaults: connect() itself fails for another uid */
	child = fork();
	if (child == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		char *reply = NULL, err[256];
		int status = 0;
		int rc = runtime_control_call(path, NBC_OP_STATUS, 0, 0, NULL, 5000, &status, &reply,
					      NULL, err, sizeof(err));
		_exit(rc == -EACCES ? 0 : 13);
	}
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* the host logged the refusal */
	char cmd[200], *log = NULL;
	size_t len;
	snprintf(cmd, sizeof(cmd), "cat %s", host_log);
	cli_run_alloc(cmd, &log, &len);
	CHECK_STR_CONTAINS(log, "control: refused a request from uid 65534");
	free(log);
}

static void test_stale(void)
{
	char path[128], *out = NULL;
	/* a socket nobody listens on, named after a pid that does not exist */
	snprintf(path, sizeof(path), "%s/%d.sock", dir, 4000000 + (int)(getpid() % 100000));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	close(fd);
	CHECK(access(path, F_OK) == 0);
	CHECK_EQ_U64(ctl(&out, "list --dir %s", dir), 0);
	CHECK_STR_CONTAINS(out, "removed stale socket");
	CHECK(access(path, F_OK) != 0);
	free(out);
}

static char *host_log_text(void)
{
	char cmd[200], *log = NULL;
	size_t len;
	snprintf(cmd, sizeof(cmd), "cat %s", host_log);
	cli_run_alloc(cmd, &log, &len);
	return log;
}

/* Waits up to 10 s for `needle` in the host's status. */
static bool status_has(long pid, const char *needle)
{
	for (int i = 0; i < 100; i++) {
		char *out = NULL;
		ctl(&out, "%ld status", pid);
		bool hit = out && strstr(out, needle);
		free(out);
		if (hit)
			return true;
		usleep(100000);
	}
	return false;
}

static void replace_file(const char *from, const char *to)
{
	char tmp[300], cmd[700];
	snprintf(tmp, sizeof(tmp), "%s.tmp", to);
	snprintf(cmd, sizeof(cmd), "cp %s %s && mv %s %s", from, tmp, tmp, to);
	CHECK(system(cmd) == 0);
}

/* NCCLBPF_WATCH=1: a changed policy file is reloaded; a broken one is not (the old keeps
 * running, the diagnostic is logged); in a multi-rank job without the agreement layer the
 * change is refused. */
static void test_watch(void)
{
	char policy[128], cwd[1024], from[1200];
	struct host h;
	snprintf(policy, sizeof(policy), "%s/watched.bpf.o", dir);
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	mkdir(dir, 0700);
	snprintf(from, sizeof(from), "%s/tests/progs/ctl_maps.bpf.o", cwd);
	replace_file(from, policy);
	setenv("NCCLBPF_WATCH", "1", 1);
	CHECK(start_host_ranks(&h, policy, "1") == 0);
	CHECK(status_has(h.pid, "watched.bpf.o:ctl_v1"));
	snprintf(from, sizeof(from), "%s/tests/progs/ctl_maps_v2.bpf.o", cwd);
	replace_file(from, policy);
	CHECK(status_has(h.pid, "watched.bpf.o:ctl_v2"));
	replace_file("CMakeCache.txt", policy); /* not an ELF */
	for (int i = 0; i < 50; i++) {
		char *log = host_log_text();
		bool seen = log && strstr(log, "NCCLBPF_WATCH:") && strstr(log, "reload failed");
		free(log);
		if (seen)
			break;
		usleep(100000);
	}
	char *log = host_log_text();
	CHECK_STR_CONTAINS(log, "reload failed, the old policy keeps running");
	free(log);
	CHECK(status_has(h.pid, "watched.bpf.o:ctl_v2"));
	CHECK_EQ_U64(stop_host(&h), 0);
	/* multi-rank, no agreement layer: the change is refused and logged */
	replace_file(from, policy);
	CHECK(start_host_ranks(&h, policy, "8") == 0);
	snprintf(from, sizeof(from), "%s/tests/progs/ctl_maps.bpf.o", cwd);
	replace_file(from, policy);
	bool refused = false;
	for (int i = 0; i < 50 && !refused; i++) {
		log = host_log_text();
		refused = log && strstr(log, "can deadlock NCCL");
		free(log);
		usleep(100000);
	}
	CHECK(refused);
	CHECK(status_has(h.pid, "watched.bpf.o:ctl_v2"));
	CHECK_EQ_U64(stop_host(&h), 0);
	unsetenv("NCCLBPF_WATCH");
	unlink(policy);
}

int main(void)
{
	char *out = NULL;
	struct host h;

	snprintf(dir, sizeof(dir), "/tmp/nbctl-test-%d", (int)getpid());
	snprintf(host_log, sizeof(host_log), "/tmp/nbctl-test-%d.log", (int)getpid());
	unlink(host_log);
	setenv("NCCLBPF_CONTROL_DIR", dir, 1);
	setenv("NCCL_DEBUG", "WARN", 1);
	if (start_host(&h, "tests/progs/ctl_maps.bpf.o") != 0) {
		fprintf(stderr, "control_host did not start\n");
		return 1;
	}
	long pid = h.pid;
	struct stat st;
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
	char path[128];
	sock_of(pid, path, sizeof(path));
	CHECK(stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600);

	/* list */
	CHECK_EQ_U64(ctl(&out, "list"), 0);
	char pidstr[32];
	snprintf(pidstr, sizeof(pidstr), "%ld ", pid);
	CHECK_STR_CONTAINS(out, pidstr);
	CHECK_STR_CONTAINS(out, "ctl_maps.bpf.o:ctl_v1");
	free(out);
	struct jm *v = ctl_json("list --json", 0);
	CHECK(!strcmp(str(v, "schema"), "ncclbpf.ctl.list/1"));
	CHECK(jm_path(v, "processes") && jm_path(v, "processes")->n == 1);
	CHECK(num(v, "processes.0.pid") == (double)pid);
	CHECK(num(v, "processes.0.communicators") == 4);
	CHECK(!strcmp(str(v, "processes.0.schema"), "ncclbpf.ctl.hello/1"));
	jm_free(v);

	/* status */
	usleep(100000); /* some decisions */
	v = ctl_json("%ld status --json", pid);
	CHECK(!strcmp(str(v, "schema"), "ncclbpf.ctl.status/1"));
	CHECK(num(v, "pid") == (double)pid);
	CHECK(num(v, "control.connections") >= 1); /* the control section */
	CHECK(!strcmp(str(v, "hooks.0.hook"), "tuner"));
	CHECK(!strcmp(str(v, "hooks.0.programs.0.label"), "ctl_maps.bpf.o:ctl_v1"));
	CHECK(!strcmp(str(v, "hooks.0.programs.0.mode"), "JIT"));
	CHECK(strstr(str(v, "hooks.0.programs.0.loaded_at"), "T") != NULL);
	CHECK(num(v, "hooks.0.version") >= 1);
	CHECK(!strcmp(str(v, "agreement.reload_activation"), "local"));
	CHECK(num(v, "agreement.fallbacks") == 0);
	const struct jm *comms = jm_get(v, "communicators");
	CHECK(comms && comms->n == 4);
	double decisions = 0;
	for (size_t i = 0; comms && i < comms->n; i++) {
		const struct jm *c = jm_at(comms, i);
		decisions += num(c, "decisions");
		/* ctl_v1 always decides; the two counters are read one after the other while
		 * decisions go on (the count at a decision's start, changed at its end) */
		CHECK(num(c, "changed") + 1 >= num(c, "decisions") &&
		      num(c, "changed") <= num(c, "decisions") + 1);
		CHECK(num(c, "faults") == 0);
		CHECK(!strcmp(str(c, "kind"), "tuner"));
	}
	CHECK(decisions > 0);
	double version1 = num(v, "version");
	jm_free(v);
	CHECK_EQ_U64(ctl(&out, "%ld status", pid), 0);
	CHECK_STR_CONTAINS(out, "hook tuner: 1 program(s)");
	CHECK_STR_CONTAINS(out, "communicators:");
	free(out);

	/* maps, dump, update */
	CHECK_EQ_U64(ctl(&out, "%ld maps", pid), 0);
	CHECK_STR_CONTAINS(out, "ctl_maps.bpf.o:counts");
	CHECK_STR_CONTAINS(out, "ctl_maps.bpf.o:notes");
	free(out);
	v = ctl_json("%ld maps --json", pid);
	CHECK(!strcmp(str(v, "schema"), "ncclbpf.ctl.maps/1"));
	CHECK(jm_path(v, "maps") && jm_path(v, "maps")->n >= 3);
	jm_free(v);
	v = ctl_json("%ld update counts 6 1 --json", pid);
	CHECK(!strcmp(str(v, "schema"), "ncclbpf.ctl.update/1"));
	jm_free(v);
	CHECK_EQ_U64(ctl(&out, "%ld update counts 5 777", pid), 0);
	free(out);
	CHECK_EQ_U64(ctl(&out, "%ld update notes 0x10 hex:0100000000000000", pid), 0);
	free(out);
	v = ctl_json("%ld dump counts --json", pid);
	CHECK(!strcmp(str(v, "schema"), "ncclbpf.ctl.dump/1"));
	CHECK(num(v, "entries.5.value_int") == 777);
	CHECK(num(v, "entries.0.value_int") > 0); /* the program counts its calls */
	CHECK(num(v, "count") == 8);
	jm_free(v);
	v = ctl_json("%ld dump notes --json", pid);
	CHECK(num(v, "count") == 1 && num(v, "entries.0.key_int") == 16 &&
	      num(v, "entries.0.value_int") == 1);
	jm_free(v);
	CHECK_EQ_U64(ctl(&out, "%ld dump counts", pid), 0);
	CHECK_STR_CONTAINS(out, "key 5 (hex:05000000)  value 777");
	free(out);
	/* checked against the map's sizes; read-only data refused; unknown names */
	CHECK_EQ_U64(ctl(&out, "%ld update counts hex:0500 1", pid), 1);
	CHECK_STR_CONTAINS(out, "4 hex digits, the map needs 8");
	free(out);
	CHECK_EQ_U64(ctl(&out, "%ld update counts 4294967296 1", pid), 1);
	CHECK_STR_CONTAINS(out, "does not fit in 4 byte(s)");
	free(out);
	CHECK_EQ_U64(ctl(&out, "%ld update counts 9 1", pid), 1); /* array index out of range */
	free(out);
	CHECK_EQ_U64(ctl(&out, "%ld update .rodata 0 1", pid), 1);
	CHECK_STR_CONTAINS(out, "read-only");
	free(out);
	CHECK_EQ_U64(ctl(&out, "%ld dump nosuch", pid), 1);
	CHECK_STR_CONTAINS(out, "no map 'nosuch'");
	free(out);

	/* reload: bad objects leave the old chain running, with the full diagnostic */
	CHECK_EQ_U64(ctl(&out, "%ld reload policies/unsafe/ctx_write_input.bpf.o --force", pid), 1);
	CHECK_STR_CONTAINS(out, "E-CTX-WRITE");
	free(out);
	CHECK_EQ_U64(ctl(&out, "%ld reload CMakeCache.txt --force", pid), 1);
	CHECK_STR_CONTAINS(out, "error: policy");
	free(out);
	CHECK_EQ_U64(ctl(&out, "%ld reload tests/progs/ctl_maps_v2.bpf.o --hook profiler", pid), 1);
	CHECK_STR_CONTAINS(out, "no program in a hook section for the hook asked for");
	free(out);
	v = ctl_json("%ld status --json", pid);
	CHECK(!strcmp(str(v, "hooks.0.programs.0.label"), "ctl_maps.bpf.o:ctl_v1"));
	CHECK(num(v, "reload_failures") == 3);
	jm_free(v);

	/* a tuner reload in a multi-rank job without the agreement layer: refused, and
	 * nothing in the reply reads as if it had been done (before: "attached ..." and
	 * "map ...: reused" first, in the --json message too) */
	CHECK_EQ_U64(ctl(&out, "%ld reload tests/progs/ctl_maps_v2.bpf.o", pid), 1);
	CHECK_STR_CONTAINS(out, "can deadlock NCCL");
	CHECK(!strstr(out, "attached") && !strstr(out, "reused"));
	free(out);
	CHECK_EQ_U64(ctl(&out, "%ld reload tests/progs/ctl_maps_v2.bpf.o --json", pid), 1);
	{
		char err[200];
		struct jm *r = jm_parse(out ? out : "", err, sizeof(err));
		CHECK(r && !strcmp(str(r, "schema"), "ncclbpf.ctl.reload/1"));
		CHECK(r && jm_path(r, "ok") && jm_path(r, "ok")->type == JM_BOOL && !jm_path(r, "ok")->b);
		CHECK(strstr(str(r, "message"), "can deadlock NCCL") &&
		      !strstr(str(r, "message"), "attached"));
		jm_free(r);
	}
	free(out);
	/* a good reload (forced): maps of the same shape keep their contents */
	CHECK_EQ_U64(ctl(&out, "%ld reload tests/progs/ctl_maps_v2.bpf.o --hook tuner --force", pid), 0);
	CHECK_STR_CONTAINS(out, "map counts: reused (state kept)");
	CHECK_STR_CONTAINS(out, "map notes: reused (state kept)");
	CHECK_STR_CONTAINS(out, "map notes_v2: new");
	CHECK_STR_CONTAINS(out, "attached ctl_maps_v2.bpf.o:ctl_v2 to hook tuner (JIT)");
	free(out);
	v = ctl_json("%ld dump counts --json", pid);
	CHECK(num(v, "entries.5.value_int") == 777);
	jm_free(v);
	usleep(50000);
	v = ctl_json("%ld status --json", pid);
	CHECK(!strcmp(str(v, "hooks.0.programs.0.label"), "ctl_maps_v2.bpf.o:ctl_v2"));
	CHECK(num(v, "version") > version1);
	CHECK(num(v, "communicators.0.chain_version") == num(v, "hooks.0.version"));
	jm_free(v);
	CHECK_EQ_U64(ctl(&out, "%ld maps", pid), 0);
	CHECK_STR_CONTAINS(out, "shared");
	free(out);

	/* detach: refused without a word of "detached" */
	CHECK_EQ_U64(ctl(&out, "%ld detach --hook tuner", pid), 1);
	CHECK_STR_CONTAINS(out, "refused");
	CHECK(!strstr(out, "detached"));
	free(out);
	CHECK_EQ_U64(ctl(&out, "%ld detach --hook tuner --force", pid), 0);
	CHECK_STR_CONTAINS(out, "detached ctl_maps_v2.bpf.o:ctl_v2 from hook tuner");
	free(out);
	v = ctl_json("%ld status --json", pid);
	CHECK(jm_path(v, "hooks.0.programs") && jm_path(v, "hooks.0.programs")->n == 0);
	jm_free(v);
	/* --all reaches every live process */
	CHECK_EQ_U64(ctl(&out, "--all reload tests/progs/ctl_maps.bpf.o --force"), 0);
	CHECK_STR_CONTAINS(out, "== pid");
	free(out);
	v = ctl_json("--all status --json", 0);
	CHECK(!strcmp(str(v, "schema"), "ncclbpf.ctl.all/1"));
	CHECK(!strcmp(str(v, "command"), "status"));
	CHECK(jm_path(v, "replies") && jm_path(v, "replies")->n == 1);
	CHECK(!strcmp(str(v, "replies.0.reply.hooks.0.programs.0.label"), "ctl_maps.bpf.o:ctl_v1"));
	jm_free(v);
	/* an error answered in JSON */
	CHECK_EQ_U64(ctl(&out, "%ld dump nosuch --json", pid), 1);
	{
		char err[200];
		struct jm *r = jm_parse(out ? out : "", err, sizeof(err));
		CHECK(r && !strcmp(str(r, "schema"), "ncclbpf.ctl.error/1"));
		jm_free(r);
	}
	free(out);

	test_malformed(pid);
	test_other_uid(pid);
	test_stale();
	/* still alive and unchanged after all of the above */
	CHECK_EQ_U64(ctl(&out, "%ld status", pid), 0);
	CHECK_STR_CONTAINS(out, "ctl_maps.bpf.o:ctl_v1");
	free(out);
	/* usage errors and unknown processes */
	CHECK_EQ_U64(ctl(&out, "%ld frobnicate", pid), 2);
	free(out);
	CHECK_EQ_U64(ctl(&out, "999999999 status"), 3);
	free(out);
	/* a pid that overflows is a usage error, not clamped to LONG_MAX */
	CHECK_EQ_U64(ctl(&out, "99999999999999999999 status"), 2);
	CHECK_STR_CONTAINS(out, "is not a process id");
	free(out);
	CHECK_EQ_U64(ctl(&out, "4294967297 status"), 2);
	free(out);

	/* a client that connects and stalls must not hold up finalize (the read would wait
	 * 5 s; the stop request interrupts it) */
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int stall = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(connect(stall, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(write(stall, "NB", 2) == 2); /* a partial header: the thread waits for more */
	usleep(200000);
	time_t t0 = time(NULL);
	CHECK_EQ_U64(stop_host(&h), 0);
	CHECK(time(NULL) - t0 < 4);
	close(stall);
	CHECK(access(path, F_OK) != 0); /* removed at finalize */
	test_watch();
	rmdir(dir);
	unlink(host_log);
	TEST_DONE();
}

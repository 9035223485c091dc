/* The control socket under abuse (issue 23), in-process: the socket is this process's own
 * (runtime_control_acquire), its clients are threads and forked children.
 *   - slowloris: a client that sends a byte every second (each read came within the 5 s
 *     per-read timeout before, so it held the thread for as long as it kept dripping);
 *   - flood: 40 idle connections (each held the thread 5 s before: a status waited 200 s);
 *   - peers of another uid, many of them: answered EPERM and closed at once;
 *   - the process at its descriptor limit (EMFILE: accept failed forever and the thread
 *     spun on the readable listening socket).
 * Each time a legitimate request must be answered while the abuse goes on, and the abuser
 * be cut. Verdicts come from explicit synchronization (the abuser keeps going until the
 * legitimate reply came, or until a generous hang guard), never from how fast it went; the
 * latency is printed for information. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/control.h"
#include "runtime/control_proto.h"
#include "runtime/runtime.h"
#include "test_util.h"

#define GUARD_MS 15000 /* hang guard of a legitimate request (never a verdict on speed) */

static char dir[48], sock[80];

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One status request; returns its reply status (0) or the call's error. */
static int status_call(char **out_text)
{
	char *out = NULL, err[512];
	int status = -1;
	uint64_t t0 = now_ms();
	int rc = runtime_control_call(sock, NBC_OP_STATUS, NBC_FLAG_JSON, 0, NULL, GUARD_MS,
				      &status, &out, NULL, err, sizeof(err));
	if (rc)
		fprintf(stderr, "status: %s\n", err);
	else
		printf("  legitimate status answered in %llu ms\n",
		       (unsigned long long)(now_ms() - t0));
	if (out_text)
		*out_text = out;
	else
		free(out);
	return rc ? rc : status;
}

/* A counter of the status reply's "control" section. */
static long stat_of(const char *json, const char *key)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *p = json ? strstr(json, k) : NULL;
	return p ? strtol(p + strlen(k), NULL, 10) : -1;
}

static int connect_to(bool nonblock)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path, sock, strlen(sock) + 1); /* short: /tmp/nbctl-abuse-PID/PID.sock */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether the server closed fd (EOF after an optional error reply), waiting up to ms. */
static bool closed_by_server(int fd, int ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	char buf[512];
	uint64_t end = now_ms() + (uint64_t)ms;
	for (;;) {
		int left = (int)(end > now_ms() ? end - now_ms() : 0);
		if (poll(&p, 1, left) <= 0)
			return false;
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
}

/* ---- slowloris ---- */

static atomic_bool drip_started, drip_stop, drip_cut;

static void *dripper(void *arg)
{
	(void)arg;
	int fd = connect_to(false);
	uint8_t hdr[NBC_HEADER_SIZE];
	struct nbc_header h = {NBC_MAGIC, NBC_VERSION, NBC_OP_DUMP, 0, 1000, 0};
	nbc_header_encode(&h, hdr);
	size_t i = 0;
	uint64_t until = now_ms() + 60000;
	while (fd >= 0 && !atomic_load(&drip_stop) && now_ms() < until) {
		/* the header byte by byte, then payload bytes: each within 1 s of the last */
		uint8_t b = i < sizeof(hdr) ? hdr[i] : 'a';
		if (send(fd, &b, 1, MSG_NOSIGNAL) != 1 || closed_by_server(fd, 0)) {
			atomic_store(&drip_cut, true);
			break;
		}
		i++;
		atomic_store(&drip_started, true);
		if (closed_by_server(fd, 1000)) {
			atomic_store(&drip_cut, true);
			break;
		}
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void test_slowloris(void)
{
	pthread_t t;
	atomic_store(&drip_stop, false);
	CHECK(pthread_create(&t, NULL, dripper, NULL) == 0);
	while (!atomic_load(&drip_started) && !atomic_load(&drip_cut))
		usleep(1000);
	CHECK_EQ_U64(status_call(NULL), 0); /* while it drips */
	/* the dripper is cut at its request's deadline (it keeps dripping until then) */
	pthread_join(t, NULL);
	CHECK(atomic_load(&drip_cut));
	char *out = NULL;
	CHECK_EQ_U64(status_call(&out), 0);
	CHECK(stat_of(out, "cut_at_deadline") >= 1);
	free(out);
}

/* ---- flood ---- */

static void test_flood(void)
{
	int fds[40], opened = 0;
	for (int i = 0; i < 40; i++) {
		fds[i] = connect_to(true);
		opened += fds[i] >= 0;
	}
	printf("  %d idle connections open\n", opened);
	CHECK(opened > 20);
	char *out = NULL;
	CHECK_EQ_U64(status_call(&out), 0);
	/* all were accepted before the status (a queue is FIFO): the oldest made room */
	int closed = 0;
	for (int i = 0; i < 40; i++)
		closed += fds[i] >= 0 && closed_by_server(fds[i], 0);
	printf("  %d of them evicted when the status came\n", closed);
	CHECK(closed >= opened - 16);
	CHECK(stat_of(out, "connections_open") >= 0 && stat_of(out, "connections_open") <= 16);
	free(out);
	/* the rest are cut at their deadline */
	for (int i = 0; i < 40; i++) {
		if (fds[i] < 0)
			continue;
		CHECK(closed_by_server(fds[i], GUARD_MS));
		close(fds[i]);
	}
	CHECK_EQ_U64(status_call(&out), 0);
	CHECK(stat_of(out, "evicted") >= opened - 16);
	free(out);
}

/* ---- other uids ---- */

static void test_other_uid_flood(void)
{
	if (geteuid() != 0) {
		printf("  not root: the other-uid flood is not run\n");
		return;
	}
	chmod(dir, 0711);
	chmod(sock, 0666);
	pid_t child = fork();
	if (child == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		int fds[100];
		for (int i = 0; i < 100; i++)
			fds[i] = connect_to(false);
		for (int i = 0; i < 100; i++) {
			/* an EPERM reply and the close, without sending anything */
			uint8_t hdr[NBC_HEADER_SIZE];
			struct pollfd p = {fds[i], POLLIN, 0};
			if (fds[i] < 0 || poll(&p, 1, GUARD_MS) != 1 || recv(fds[i], hdr, sizeof(hdr),
									MSG_WAITALL) != sizeof(hdr))
				_exit(11);
			struct nbc_header h;
			nbc_header_decode(hdr, &h);
			if (h.status != -EPERM || !closed_by_server(fds[i], GUARD_MS))
				_exit(12);
			close(fds[i]);
		}
		_exit(0);
	}
	int st = 0;
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	chmod(sock, 0600);
	chmod(dir, 0700);
	char *out = NULL;
	CHECK_EQ_U64(status_call(&out), 0);
	CHECK(stat_of(out, "refused_other_uid") >= 100);
	free(out);
}

/* ---- EMFILE ---- */

static void test_emfile(void)
{
	int go[2];
	CHECK(pipe(go) == 0);
	pid_t child = fork();
	if (child == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(20);
		/* two requests, one after the other, while the server has no descriptor left */
		for (int i = 0; i < 2; i++)
			if (status_call(NULL) != 0)
				_exit(21 + i);
		_exit(0);
	}
	close(go[0]);
	struct rlimit old, low;
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
	low = old;
	low.rlim_cur = 256;
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
	static int held[256];
	int n = 0;
	while (n < 256 && (held[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	CHECK(n < 256 && errno == EMFILE);
	CHECK(write(go[1], "g", 1) == 1);
	int st = 0;
	waitpid(child, &st, 0);
	for (int i = 0; i < n; i++)
		close(held[i]);
	close(go[1]);
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "EMFILE client: status 0x%x\n", st);
	char *out = NULL;
	CHECK_EQ_U64(status_call(&out), 0);
	long emfile = stat_of(out, "accept_emfile");
	printf("  accepts that hit EMFILE: %ld\n", emfile);
	/* it happened, and the thread did not spin on it */
	CHECK(emfile >= 1 && emfile <= 50);
	free(out);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/nbctl-abuse-%d", (int)getpid());
	snprintf(sock, sizeof(sock), "%s/%d.sock", dir, (int)getpid());
	setenv("NCCLBPF_CONTROL_DIR", dir, 1);
	unsetenv("NCCLBPF_CONTROL");
	runtime_control_acquire();
	CHECK(!strcmp(runtime_control_path(), sock));
	printf("slowloris\n");
	test_slowloris();
	printf("flood\n");
	test_flood();
	printf("other uids\n");
	test_other_uid_flood();
	printf("EMFILE\n");
	test_emfile();
	runtime_control_release();
	CHECK(access(sock, F_OK) != 0);
	rmdir(dir);
	TEST_DONE();
}

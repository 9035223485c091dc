/* A stranger on the agreement port (tests/agree/run_agree_attack.sh): what anyone who can
 * reach the rendezvous port can send, without the job's secret.
 *
 * usage: agree_attack MODE PORT [N] [SECONDS] [COMM_HEX]
 *   flood    N connections, each streaming a frame that announces a 4 MiB payload
 *   slow     N connections sending one byte every 500 ms (slowloris)
 *   idle     N connections that send nothing
 *   forge    frames a member would send, without authenticating: HELLO with rank
 *            AGREE_RANK_NONE for COMM (ended agreement before), 4096 REGISTERs, LOOKUP
 *   forge1   the same in protocol version 1, with the job token version 1 computed from
 *            the commHash alone (FNV-1a of "ncclbpf-agree-1", the commHash, a zero secret):
 *            what an attacker who knew the communicator sent before version 2
 *   fill     N connections held open (the target's descriptor limit)
 * Each mode runs for SECONDS (default 5), then waits (at most 60 s in all) until the target
 * closed every connection, and prints how many connections the target closed
 * and how many bytes it accepted; exit 0 unless the attacker itself failed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agree/agree_wire.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int dial(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* Reads and drops what the target sends; false once it closed the connection. */
static bool drain(int fd)
{
	char buf[4096];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
	}
}

/* Sends what the socket takes; false once the target closed it. */
static bool push(int fd, const void *p, size_t n, unsigned long long *sent)
{
	ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
	if (r > 0)
		*sent += (unsigned long long)r;
	return r >= 0 || errno == EAGAIN || errno == EINTR;
}

/* Rewrites every frame of b as protocol version 1 (token in the header; a HELLO as
 * version 1 had it: n_ranks, n_streams). */
static void to_v1(struct agree_buf *b, uint64_t comm)
{
	(void)comm; /* each frame's own commHash makes its token */
	uint64_t zero = 0;
	struct agree_buf out = {0};
	size_t off = 0;
	while (off + AGREE_HDR_SIZE <= b->len) {
		uint8_t *h = b->p + off;
		uint32_t len;
		uint64_t c;
		uint16_t type = (uint16_t)(h[6] | h[7] << 8);
		memcpy(&len, h + 8, 4);
		memcpy(&c, h + 16, 8);
		uint64_t t = agree_fnv1a("ncclbpf-agree-1", 15, AGREE_FNV_INIT);
		t = agree_fnv1a(&c, 8, t);
		t = agree_fnv1a(&zero, 8, t);
		uint8_t nh[AGREE_HDR_SIZE];
		memcpy(nh, h, AGREE_HDR_SIZE);
		nh[4] = 1;
		memcpy(nh + 24, &t, 8);
		if (type == AGREE_MSG_HELLO) {
			uint32_t v1len = 8;
			memcpy(nh + 8, &v1len, 4);
			agree_buf_put(&out, nh, AGREE_HDR_SIZE);
			agree_buf_put(&out, h + AGREE_HDR_SIZE, 4); /* n_ranks */
			agree_buf_u32(&out, 0);                     /* n_streams */
		} else {
			agree_buf_put(&out, nh, AGREE_HDR_SIZE);
			agree_buf_put(&out, h + AGREE_HDR_SIZE, len);
		}
		off += AGREE_HDR_SIZE + len;
	}
	agree_buf_free(b);
	*b = out;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s flood|slow|idle|forge|fill PORT [N] [SECONDS] [COMM]\n",
			argv[0]);
		return 2;
	}
	const char *mode = argv[1];
	int port = atoi(argv[2]);
	int n = argc > 3 ? atoi(argv[3]) : 100;
	double secs = argc > 4 ? atof(argv[4]) : 5;
	uint64_t comm = argc > 5 ? strtoull(argv[5], NULL, 16) : 0xa9ee0001ull;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	bool v1 = !strcmp(mode, "forge1");
	if (!strcmp(mode, "forge") || v1) {
		/* everything a member would send, unauthenticated, on one connection each */
		struct agree_buf b = {0};
		size_t f = agree_wire_begin(&b, AGREE_MSG_HELLO, AGREE_RANK_NONE, comm);
		struct agree_fingerprint fp = {0};
		agree_wire_put_hello(&b, 4, 0, 0, NULL, &fp);
		agree_wire_end(&b, f);
		for (int i = 0; i < 4096; i++) {
			f = agree_wire_begin(&b, AGREE_MSG_REGISTER, (uint32_t)i % 4, comm + (uint64_t)i);
			agree_buf_u32(&b, 40000);
			agree_wire_end(&b, f);
		}
		f = agree_wire_begin(&b, AGREE_MSG_LOOKUP, 0, comm);
		agree_wire_end(&b, f);
		if (v1) /* version 1: the token in the header, HELLO without flags and fingerprint */
			to_v1(&b, comm);
		int closed = 0, tried = 0;
		unsigned long long sent = 0;
		for (int c = 0; c < n; c++) {
			int fd = dial(port);
			if (fd < 0)
				continue;
			tried++;
			push(fd, b.p, b.len, &sent);
			double t0 = now_s();
			bool open = true;
			/* until the target closes it (at most 60 s: a verdict that does not depend
			 * on how fast a loaded machine schedules the target) */
			while (open && now_s() - t0 < 60) {
				struct pollfd p = {.fd = fd, .events = POLLIN};
				poll(&p, 1, 20);
				open = drain(fd);
			}
			closed += !open;
			close(fd);
		}
		agree_buf_free(&b);
		printf("%s: %d connections, %d closed by the target, %llu bytes sent\n", mode, tried,
		       closed, sent);
		return 0;
	}
	int *fds = calloc((size_t)n, sizeof(int));
	if (!fds)
		return 1;
	int opened = 0;
	for (int i = 0; i < n; i++) {
		fds[i] = dial(port);
		opened += fds[i] >= 0;
	}
	/* flood: a frame header announcing a 4 MiB payload, then payload bytes */
	static uint8_t junk[65536];
	int closed = 0;
	struct agree_buf hdr = {0};
	size_t f = agree_wire_begin(&hdr, AGREE_MSG_CONTRIB, 1, comm);
	agree_wire_end(&hdr, f);
	memcpy(hdr.p + 8, (uint32_t[]){AGREE_MAX_PAYLOAD}, 4);
	unsigned long long sent = 0;
	if (!strcmp(mode, "flood"))
		for (int i = 0; i < n; i++)
			if (fds[i] >= 0 && !push(fds[i], hdr.p, hdr.len, &sent)) {
				close(fds[i]);
				fds[i] = -1;
				closed++;
			}
	double t0 = now_s(), tick = t0;
	/* SECONDS of attack, then on until the target closed every connection (at most 60 s
	 * in all): the count does not depend on how fast a loaded machine schedules it */
	while (now_s() - t0 < secs || (closed < opened && now_s() - t0 < 60)) {
		bool slow_tick = !strcmp(mode, "slow") && now_s() - tick >= 0.5;
		if (slow_tick)
			tick = now_s();
		for (int i = 0; i < n; i++) {
			if (fds[i] < 0)
				continue;
			bool ok = drain(fds[i]);
			if (ok && !strcmp(mode, "flood"))
				ok = push(fds[i], junk, sizeof(junk), &sent);
			if (ok && slow_tick)
				ok = push(fds[i], "N", 1, &sent);
			if (!ok) {
				close(fds[i]);
				fds[i] = -1;
				closed++;
			}
		}
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	printf("%s: %d connections, %d closed by the target, %llu bytes sent\n", mode, opened,
	       closed, sent);
	agree_buf_free(&hdr);
	free(fds);
	return 0;
}

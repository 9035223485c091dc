/* The own TCP transport through the net plugin ABI, driven as NCCL's proxy drives it:
 * integrity (threads and processes, 0 B .. 64 MiB, odd sizes; 1 GiB with
 * NCCLBPF_NET_TEST_1G=1), multi-receive, many concurrent requests and back-pressure,
 * truncation, connection churn without fd/memory leaks, peers killed mid-transfer (error,
 * no hang) and garbage on the listening port.
 * Usage: test_net_tcp [10|11|12] [quick]   (table version; quick = integrity + multi-recv)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define HNET_STATIC
#include "net_harness.h"
#include "plugin/net/net_plugin.h"
#include "plugin/net/net_tcp.h"
#include "test_util.h"

#define TMO 20000
static struct hnet H;

struct pair {
	void *lc, *sc, *rc;
	char handle[NB_NET_HANDLE_MAXSIZE];
};

/* connect and accept are nonblocking: one thread can drive both */
static int pair_open(struct pair *p)
{
	memset(p, 0, sizeof(*p));
	if (hnet_listen(&H, 0, p->handle, &p->lc))
		return -1;
	uint64_t end = hnet_ms() + TMO;
	while (!p->sc || !p->rc) {
		if (!p->sc && hnet_connect_step(&H, 0, p->handle, &p->sc))
			return -1;
		if (!p->rc && hnet_accept_step(&H, p->lc, &p->rc))
			return -1;
		if (hnet_ms() > end)
			return -1;
	}
	return 0;
}

static void pair_close(struct pair *p)
{
	CHECK(hnet_close_send(&H, p->sc) == 0);
	CHECK(hnet_close_recv(&H, p->rc) == 0);
	CHECK(hnet_close_listen(&H, p->lc) == 0);
}

/* ---- integrity, sender in a second thread, up to 4 messages in flight ---- */
static const size_t sizes[] = { 0, 1, 3, 17, 4095, 4096, 65535, 65536, 65537, 100000,
				(1u << 20) + 3, (8u << 20) + 5, (64u << 20) + 1 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct sender_arg {
	void *sc;
	int rc;
	size_t max;
};

static void *sender_main(void *arg)
{
	struct sender_arg *a = arg;
	void *bufs[NSIZES], *reqs[NSIZES] = { 0 };
	size_t next_wait = 0;
	for (size_t i = 0; i < NSIZES; i++) {
		if (sizes[i] > a->max) {
			bufs[i] = NULL;
			continue;
		}
		bufs[i] = malloc(sizes[i] + 1);
		hnet_fill(bufs[i], sizes[i], 1000 + i);
		while (!reqs[i] && !a->rc)
			a->rc = hnet_isend(&H, a->sc, bufs[i], sizes[i], (int)i, NULL, &reqs[i]);
		while (next_wait + 4 <= i && !a->rc) { /* keep 4 in flight */
			int sz = -1;
			if (reqs[next_wait] && (a->rc = hnet_wait(&H, reqs[next_wait], &sz, TMO)) == 0 &&
			    sz != (int)sizes[next_wait])
				a->rc = -EBADMSG;
			next_wait++;
		}
	}
	for (; next_wait < NSIZES && !a->rc; next_wait++) {
		int sz = -1;
		if (reqs[next_wait] && (a->rc = hnet_wait(&H, reqs[next_wait], &sz, TMO)) == 0 &&
		    sz != (int)sizes[next_wait])
			a->rc = -EBADMSG;
	}
	for (size_t i = 0; i < NSIZES; i++)
		free(bufs[i]);
	return NULL;
}

static void recv_all(void *rc, size_t max)
{
	for (size_t i = 0; i < NSIZES; i++) {
		if (sizes[i] > max)
			continue;
		size_t cap = sizes[i] + 13; /* receive buffers may be larger than the message */
		char *buf = malloc(cap);
		int got = -1;
		int r = hnet_recv_msg(&H, rc, buf, cap, (int)i, &got, TMO);
		CHECK(r == 0);
		CHECK_EQ_U64(got, sizes[i]);
		CHECK(hnet_verify(buf, sizes[i], 1000 + i));
		free(buf);
	}
}

static void t_integrity_threads(size_t max)
{
	struct pair p;
	CHECK(pair_open(&p) == 0);
	struct sender_arg a = { p.sc, 0, max };
	pthread_t t;
	pthread_create(&t, NULL, sender_main, &a);
	recv_all(p.rc, max);
	pthread_join(t, NULL);
	CHECK(a.rc == 0);
	pair_close(&p);
}

/* ---- multi-receive: three tagged sends land in one grouped receive, by tag ---- */
static void t_multirecv(void)
{
	struct pair p;
	CHECK(pair_open(&p) == 0);
	size_t ssz[3] = { 100, 300000, 0 };
	int stag[3] = { 7, 9, 8 };
	char *sb[3], *rb[3];
	void *sreq[3] = { 0 };
	for (int i = 0; i < 3; i++) {
		sb[i] = malloc(ssz[i] + 1);
		rb[i] = malloc(400000);
		hnet_fill(sb[i], ssz[i], 50 + (uint64_t)i);
	}
	void *rdata[3] = { rb[0], rb[1], rb[2] };
	size_t rsz[3] = { 400000, 400000, 400000 };
	int rtag[3] = { 8, 9, 7 }; /* other order than the sends */
	void *rreq = NULL;
	CHECK(hnet_irecv(&H, p.rc, 3, rdata, rsz, rtag, NULL, &rreq) == 0 && rreq);
	for (int i = 0; i < 3; i++)
		CHECK(hnet_isend(&H, p.sc, sb[i], ssz[i], stag[i], NULL, &sreq[i]) == 0 && sreq[i]);
	int got[3] = { -1, -1, -1 };
	CHECK(hnet_wait(&H, rreq, got, TMO) == 0);
	for (int i = 0; i < 3; i++) {
		int sz;
		CHECK(hnet_wait(&H, sreq[i], &sz, TMO) == 0);
	}
	CHECK_EQ_U64(got[0], 0);
	CHECK_EQ_U64(got[1], 300000);
	CHECK_EQ_U64(got[2], 100);
	CHECK(hnet_verify(rb[1], 300000, 51));
	CHECK(hnet_verify(rb[2], 100, 50));
	for (int i = 0; i < 3; i++) {
		free(sb[i]);
		free(rb[i]);
	}
	pair_close(&p);
}

/* ---- NCCL_NET_MAX_REQUESTS in flight, the next post is back-pressured (NULL) ---- */
static void t_many_requests(void)
{
	struct pair p;
	CHECK(pair_open(&p) == 0);
	enum { N = NB_NET_MAX_REQUESTS, SZ = 70000 }; /* above the inline size: data sockets */
	char *sb = malloc((size_t)N * SZ), *rb = malloc((size_t)N * SZ);
	void *sreq[N], *rreq[N];
	for (int i = 0; i < N; i++) {
		hnet_fill(sb + (size_t)i * SZ, SZ, 7000 + (uint64_t)i);
		void *d = rb + (size_t)i * SZ;
		size_t s = SZ;
		int tag = i;
		rreq[i] = NULL;
		CHECK(hnet_irecv(&H, p.rc, 1, &d, &s, &tag, NULL, &rreq[i]) == 0 && rreq[i]);
		sreq[i] = NULL;
		CHECK(hnet_isend(&H, p.sc, sb + (size_t)i * SZ, SZ, i, NULL, &sreq[i]) == 0 && sreq[i]);
	}
	/* the pools are full: NULL requests, success (NCCL retries later) */
	void *extra = (void *)1;
	int tag = 99;
	CHECK(hnet_isend(&H, p.sc, sb, 1, tag, NULL, &extra) == 0 && extra == NULL);
	/* complete in reverse order: test must progress every request of the comm */
	for (int i = N - 1; i >= 0; i--) {
		int sz = -1;
		CHECK(hnet_wait(&H, rreq[i], &sz, TMO) == 0 && sz == SZ);
		CHECK(hnet_wait(&H, sreq[i], &sz, TMO) == 0);
	}
	int ok = 1;
	for (int i = 0; i < N; i++)
		ok &= hnet_verify(rb + (size_t)i * SZ, SZ, 7000 + (uint64_t)i);
	CHECK(ok);
	free(sb);
	free(rb);
	pair_close(&p);
}

/* ---- a message larger than the receive buffer: an error, no overflow ---- */
static void t_truncation(void)
{
	struct pair p;
	CHECK(pair_open(&p) == 0);
	char sb[100] = { 0 }, *rb = malloc(50);
	void *sreq = NULL;
	CHECK(hnet_isend(&H, p.sc, sb, sizeof(sb), 1, NULL, &sreq) == 0 && sreq);
	int got = 0;
	int rc = hnet_recv_msg(&H, p.rc, rb, 50, 1, &got, 5000);
	CHECK(rc == NB_NET_INVALID_USAGE);
	free(rb);
	pair_close(&p);
}

/* ---- churn: connect / transfer / close many times, no fd or comm leak ---- */
static void t_churn(int cycles)
{
	int fds0 = hnet_count_fds();
	struct net_stats st0, st1;
	net_stats_get(&st0);
	char buf[64] = "x";
	for (int i = 0; i < cycles; i++) {
		struct pair p;
		if (pair_open(&p)) {
			CHECK(!"pair_open");
			break;
		}
		void *sreq = NULL;
		int got = 0;
		hnet_isend(&H, p.sc, buf, sizeof(buf), 0, NULL, &sreq);
		CHECK(hnet_recv_msg(&H, p.rc, buf, sizeof(buf), 0, &got, TMO) == 0);
		if (sreq)
			CHECK(hnet_wait(&H, sreq, &got, TMO) == 0);
		hnet_close_send(&H, p.sc);
		hnet_close_recv(&H, p.rc);
		hnet_close_listen(&H, p.lc);
	}
	net_stats_get(&st1);
	CHECK_EQ_U64(hnet_count_fds(), fds0);
	CHECK_EQ_U64(st1.comms_open, st0.comms_open);
	CHECK_EQ_U64(st1.reqs_live, st0.reqs_live);
	printf("churn: %d connect/close cycles, fds %d -> %d\n", cycles, fds0, hnet_count_fds());
}

/* ---- garbage on the listening port ---- */
static int raw_connect(const char *handle)
{
	const struct tcp_handle *h = (const void *)handle;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = h->port };
	memcpy(&a.sin_addr, h->addr, 4);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void t_garbage(void)
{
	char handle[NB_NET_HANDLE_MAXSIZE] = { 0 };
	void *lc = NULL;
	CHECK(hnet_listen(&H, 0, handle, &lc) == 0);
	int junk[6];
	junk[0] = raw_connect(handle); /* HTTP */
	CHECK(write(junk[0], "GET / HTTP/1.0\r\n\r\n" "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 53) == 53);
	junk[1] = raw_connect(handle); /* silent */
	junk[2] = raw_connect(handle); /* closes at once */
	close(junk[2]);
	junk[2] = -1;
	junk[3] = raw_connect(handle); /* valid magic, wrong listener nonce */
	struct tcp_hello bad = { TCP_HELLO_MAGIC, TCP_PROTO_VERSION, 0, 0, 1, 0, 12345, 1 };
	CHECK(write(junk[3], &bad, sizeof(bad)) == (ssize_t)sizeof(bad));
	junk[4] = raw_connect(handle); /* right nonce, absurd socket count */
	const struct tcp_handle *th = (const void *)handle;
	struct tcp_hello bad2 = { TCP_HELLO_MAGIC, TCP_PROTO_VERSION, 0, 5000, 1, 0, th->listen_nonce, 2 };
	CHECK(write(junk[4], &bad2, sizeof(bad2)) == (ssize_t)sizeof(bad2));
	junk[5] = raw_connect(handle); /* half a hello */
	CHECK(write(junk[5], &bad2, 7) == 7);
	void *rc = NULL, *sc = NULL;
	for (int i = 0; i < 50; i++) /* garbage alone yields no comm */
		CHECK(hnet_accept_step(&H, lc, &rc) == 0 && rc == NULL);
	/* a real peer still gets through */
	uint64_t end = hnet_ms() + TMO;
	while ((!sc || !rc) && hnet_ms() < end) {
		if (!sc)
			CHECK(hnet_connect_step(&H, 0, handle, &sc) == 0);
		if (!rc)
			CHECK(hnet_accept_step(&H, lc, &rc) == 0);
	}
	CHECK(sc && rc);
	char msg[32] = "after the garbage", out[32] = "";
	void *sreq = NULL;
	int got;
	CHECK(hnet_isend(&H, sc, msg, sizeof(msg), 3, NULL, &sreq) == 0);
	CHECK(hnet_recv_msg(&H, rc, out, sizeof(out), 3, &got, TMO) == 0 && !strcmp(out, msg));
	for (int i = 0; i < 6; i++)
		if (junk[i] >= 0)
			close(junk[i]);
	hnet_close_send(&H, sc);
	hnet_close_recv(&H, rc);
	CHECK(hnet_close_listen(&H, lc) == 0);
}

/* ---- two processes ---- */
static pid_t spawn(void (*fn)(int wfd, int rfd), int *to_child, int *from_child)
{
	int a[2], b[2];
	if (pipe(a) || pipe(b))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(a[1]);
		close(b[0]);
		fn(b[1], a[0]);
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	*to_child = a[1];
	*from_child = b[0];
	return pid;
}

static size_t proc_max;

/* child: receives the size list on a connection to the parent's listener */
static void child_receiver(int wfd, int rfd)
{
	char handle[NB_NET_HANDLE_MAXSIZE];
	void *lc = NULL, *rc = NULL;
	if (hnet_listen(&H, 0, handle, &lc) || write(wfd, handle, sizeof(handle)) != sizeof(handle))
		_exit(2);
	if (hnet_accept(&H, lc, &rc, TMO))
		_exit(3);
	int bad = 0;
	for (size_t i = 0; i < NSIZES; i++) {
		if (sizes[i] > proc_max)
			continue;
		char *buf = malloc(sizes[i] + 1);
		int got = -1;
		if (hnet_recv_msg(&H, rc, buf, sizes[i], (int)i, &got, TMO) || got != (int)sizes[i] ||
		    !hnet_verify(buf, sizes[i], 1000 + i))
			bad++;
		free(buf);
	}
	char r = (char)bad;
	if (write(wfd, &r, 1) != 1)
		_exit(4);
	(void)rfd;
	hnet_close_recv(&H, rc);
	hnet_close_listen(&H, lc);
	_exit(bad ? 1 : 0);
}

static void t_processes(size_t max)
{
	int to, from;
	proc_max = max;
	pid_t pid = spawn(child_receiver, &to, &from);
	char handle[NB_NET_HANDLE_MAXSIZE];
	CHECK(read(from, handle, sizeof(handle)) == sizeof(handle));
	void *sc = NULL;
	CHECK(hnet_connect(&H, 0, handle, &sc, TMO) == 0);
	struct sender_arg a = { sc, 0, max };
	sender_main(&a);
	CHECK(a.rc == 0);
	char r = 1;
	CHECK(read(from, &r, 1) == 1 && r == 0);
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	hnet_close_send(&H, sc);
	close(to);
	close(from);
}

/* child: connects and posts one 64 MiB send that cannot finish (nobody receives yet) */
static void child_stuck_sender(int wfd, int rfd)
{
	char handle[NB_NET_HANDLE_MAXSIZE];
	if (read(rfd, handle, sizeof(handle)) != sizeof(handle))
		_exit(2);
	void *sc = NULL, *req = NULL;
	if (hnet_connect(&H, 0, handle, &sc, TMO))
		_exit(3);
	size_t n = 64u << 20;
	char *buf = malloc(n);
	memset(buf, 1, n);
	hnet_isend(&H, sc, buf, n, 5, NULL, &req);
	char ok = 1;
	if (write(wfd, &ok, 1) != 1)
		_exit(4);
	for (;;) { /* progress until killed */
		int done = 0;
		if (req)
			hnet_test(&H, req, &done, NULL);
		usleep(1000);
	}
}

/* child: accepts, then never receives */
static void child_stuck_receiver(int wfd, int rfd)
{
	char handle[NB_NET_HANDLE_MAXSIZE];
	void *lc = NULL, *rc = NULL;
	(void)rfd;
	if (hnet_listen(&H, 0, handle, &lc) || write(wfd, handle, sizeof(handle)) != sizeof(handle))
		_exit(2);
	if (hnet_accept(&H, lc, &rc, TMO))
		_exit(3);
	for (;;)
		pause();
}

static void t_peer_killed(void)
{
	/* the sender dies in the middle of a 64 MiB message */
	int to, from;
	char handle[NB_NET_HANDLE_MAXSIZE] = { 0 };
	void *lc = NULL, *rc = NULL;
	CHECK(hnet_listen(&H, 0, handle, &lc) == 0);
	pid_t pid = spawn(child_stuck_sender, &to, &from);
	CHECK(write(to, handle, sizeof(handle)) == sizeof(handle));
	CHECK(hnet_accept(&H, lc, &rc, TMO) == 0);
	char ok;
	CHECK(read(from, &ok, 1) == 1);
	usleep(100000); /* the socket buffers fill up */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	size_t n = 64u << 20;
	char *buf = malloc(n);
	int got = 0;
	uint64_t t0 = hnet_ms();
	int r = hnet_recv_msg(&H, rc, buf, n, 5, &got, TMO);
	CHECK(r == NB_NET_REMOTE_ERROR);
	CHECK(hnet_ms() - t0 < TMO);
	/* once the request failed, no worker may still write into its buffer (regression: a
	 * part on another data socket kept receiving after the error was reported) */
	memset(buf, 0x5a, n);
	usleep(50000);
	size_t changed = 0;
	for (size_t i = 0; i < n; i += 4096)
		changed += buf[i] != 0x5a;
	CHECK(changed == 0);
	/* later calls keep failing cleanly */
	void *req = NULL;
	int tag = 6;
	size_t s = 10;
	void *d = buf;
	CHECK(hnet_irecv(&H, rc, 1, &d, &s, &tag, NULL, &req) == NB_NET_REMOTE_ERROR);
	free(buf);
	CHECK(hnet_close_recv(&H, rc) == 0);
	CHECK(hnet_close_listen(&H, lc) == 0);
	close(to);
	close(from);

	/* the receiver dies while a 64 MiB send is blocked */
	pid = spawn(child_stuck_receiver, &to, &from);
	CHECK(read(from, handle, sizeof(handle)) == sizeof(handle));
	void *sc = NULL;
	CHECK(hnet_connect(&H, 0, handle, &sc, TMO) == 0);
	buf = malloc(n);
	memset(buf, 2, n);
	void *sreq = NULL;
	CHECK(hnet_isend(&H, sc, buf, n, 1, NULL, &sreq) == 0 && sreq);
	usleep(100000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	r = hnet_wait(&H, sreq, &got, TMO);
	CHECK(r == NB_NET_REMOTE_ERROR || r == NB_NET_SYSTEM_ERROR);
	CHECK(hnet_close_send(&H, sc) == 0);
	free(buf);
	close(to);
	close(from);
}

static void t_props(void)
{
	int n = 0;
	CHECK(hnet_devices(&H, &n) == 0 && n >= 1);
	struct nb_net_props_v12 p;
	CHECK(hnet_props(&H, 0, &p) == 0);
	CHECK(p.name && !strcmp(p.name, "lo"));
	CHECK(p.ptr_support == NB_NET_PTR_HOST);
	CHECK(p.max_recvs == TCP_MAX_RECVS);
	CHECK(p.net_device_type == NB_NET_DEVICE_HOST);
	CHECK(p.vprops.ndevs == 1);
	CHECK(p.max_p2p_bytes == NB_NET_MAX_SIZE_BYTES);
	CHECK(hnet_props(&H, n, &p) != 0); /* out of range */
	/* NCCL_SOCKET_IFNAME semantics */
	CHECK(tcp_iface_matches("eth", "eth0"));
	CHECK(!tcp_iface_matches("=eth", "eth0"));
	CHECK(tcp_iface_matches("=eth0,ib0", "ib0"));
	CHECK(!tcp_iface_matches("^lo,docker", "lo"));
	CHECK(tcp_iface_matches("^lo,docker", "eth1"));
	CHECK(!tcp_iface_matches("^=eth0", "eth0"));
	CHECK(tcp_iface_matches("^=eth0", "eth01"));
}

int main(int argc, char **argv)
{
	int version = argc > 1 ? atoi(argv[1]) : 12;
	bool quick = argc > 2 && !strcmp(argv[2], "quick");
	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	signal(SIGPIPE, SIG_IGN);
	if (hnet_open_static(&H, version) || hnet_init(&H, 0x1234)) {
		fprintf(stderr, "cannot open/init ncclNetPlugin_v%d\n", version);
		return 1;
	}
	bool big = getenv("NCCLBPF_NET_TEST_1G") != NULL;
	const struct net_backend *b = net_backend();
	const char *inner = getenv("NCCLBPF_NET_INNER");
	CHECK(b && b->is_tcp == !(inner && *inner));
	printf("backend: %s (ncclNetPlugin_v%d table)\n", b ? b->path : "none", version);
	t_props();
	t_integrity_threads(64u << 20);
	t_multirecv();
	if (!quick) {
		t_many_requests();
		t_truncation();
		t_garbage();
		t_processes(big ? (1ull << 30) : (8u << 20));
		t_peer_killed();
		const char *c = getenv("NCCLBPF_NET_TEST_CYCLES");
		t_churn(c ? atoi(c) : 1000);
		if (big) {
			/* 1 GiB, odd-sized neighbour, through one pair */
			struct pair p;
			CHECK(pair_open(&p) == 0);
			size_t n = (1ull << 30) + 7;
			char *sb = malloc(n), *rb = malloc(n);
			hnet_fill(sb, n, 99);
			void *sreq = NULL;
			int got = 0;
			CHECK(hnet_isend(&H, p.sc, sb, n, 1, NULL, &sreq) == 0 && sreq);
			CHECK(hnet_recv_msg(&H, p.rc, rb, n, 1, &got, 120000) == 0);
			CHECK(hnet_wait(&H, sreq, &got, 120000) == 0);
			CHECK(hnet_verify(rb, n, 99));
			free(sb);
			free(rb);
			pair_close(&p);
		}
	}
	CHECK(hnet_finalize(&H) == 0);
	TEST_DONE();
}

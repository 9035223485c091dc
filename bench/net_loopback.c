/* Loopback benchmark of the net plugin's own TCP transport, driven through
 * ncclNetPlugin_v12 as NCCL's proxy drives it (two threads, one per side):
 *   throughput: a stream of messages (default 4 MiB, 8 in flight)
 *   latency:    ping-pong of small messages (default 8 B) over two connections
 * Each repetition measures, interleaved, the transport without programs ("base") and with
 * the SEC("net") hooks running net_accounting ("hooks"); the medians and their ratio are
 * printed (budget: throughput >= 0.99x, latency <= 1.02x).
 * Usage: bench_net_loopback POLICY.bpf.o [reps] [msg_bytes] [stream_bytes] [pingpongs] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin/net/nccl_net_abi.h"
#include "plugin/net/net_plugin.h"
#include "runtime/runtime.h"

extern struct nb_net_v12 ncclNetPlugin_v12;
static const struct nb_net_v12 *N = &ncclNetPlugin_v12;
static void *ctx;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct pair {
	void *lc, *sc, *rc;
	char handle[NB_NET_HANDLE_MAXSIZE];
};

static void pair_open(struct pair *p)
{
	struct nb_net_device_handle *dh = NULL;
	memset(p, 0, sizeof(*p));
	if (N->listen(ctx, 0, p->handle, &p->lc))
		exit(1);
	while (!p->sc || !p->rc) {
		if (!p->sc && N->connect(ctx, 0, p->handle, &p->sc, &dh))
			exit(1);
		if (!p->rc && N->accept(p->lc, &p->rc, &dh))
			exit(1);
	}
}

static void pair_close(struct pair *p)
{
	N->close_send(p->sc);
	N->close_recv(p->rc);
	N->close_listen(p->lc);
}

static void wait_req(void *req)
{
	int done = 0, sz[8];
	for (;;) {
		if (N->test(req, &done, sz)) {
			fprintf(stderr, "test failed\n");
			exit(1);
		}
		if (done)
			return;
		sched_yield(); /* this 2-core CI machine runs both sides and the workers */
	}
}

static void *post_send(void *sc, void *buf, size_t n, int tag)
{
	void *req = NULL;
	while (!req)
		if (N->isend(sc, buf, n, tag, NULL, NULL, &req))
			exit(1);
	return req;
}

static void *post_recv(void *rc, void *buf, size_t n, int tag)
{
	void *req = NULL;
	while (!req)
		if (N->irecv(rc, 1, &buf, &n, &tag, NULL, NULL, &req))
			exit(1);
	return req;
}

/* ---- throughput ---- */
#define INFLIGHT 8
struct stream {
	void *c;
	char *buf;
	size_t msg, count;
	bool send;
};

static void *stream_main(void *arg)
{
	struct stream *s = arg;
	void *reqs[INFLIGHT] = { 0 };
	for (size_t i = 0; i < s->count + INFLIGHT; i++) {
		int slot = (int)(i % INFLIGHT);
		if (reqs[slot]) {
			wait_req(reqs[slot]);
			reqs[slot] = NULL;
		}
		if (i < s->count) {
			char *b = s->buf + (size_t)slot * s->msg;
			reqs[slot] = s->send ? post_send(s->c, b, s->msg, 0) : post_recv(s->c, b, s->msg, 0);
		}
	}
	return NULL;
}

static double throughput(struct pair *p, size_t msg, size_t total, char *sbuf, char *rbuf)
{
	struct stream snd = { p->sc, sbuf, msg, total / msg, true };
	struct stream rcv = { p->rc, rbuf, msg, total / msg, false };
	pthread_t t;
	double t0 = now_s();
	pthread_create(&t, NULL, stream_main, &snd);
	stream_main(&rcv);
	pthread_join(t, NULL);
	return (double)(total / msg * msg) / (now_s() - t0) / 1e9;
}

/* ---- latency ---- */
struct echo {
	struct pair *ab, *ba;
	size_t n, count;
};

static void *echo_main(void *arg)
{
	struct echo *e = arg;
	char buf[4096];
	for (size_t i = 0; i < e->count; i++) {
		wait_req(post_recv(e->ab->rc, buf, e->n, 1));
		wait_req(post_send(e->ba->sc, buf, e->n, 1));
	}
	return NULL;
}

static double latency_us(struct pair *ab, struct pair *ba, size_t n, size_t count)
{
	char buf[4096] = { 0 };
	struct echo e = { ab, ba, n, count };
	pthread_t t;
	pthread_create(&t, NULL, echo_main, &e);
	double t0 = now_s();
	for (size_t i = 0; i < count; i++) {
		void *r = post_recv(ba->rc, buf, n, 1);
		wait_req(post_send(ab->sc, buf, n, 1));
		wait_req(r);
	}
	double dt = now_s() - t0;
	pthread_join(t, NULL);
	return dt / (double)count / 2 * 1e6; /* one way */
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s POLICY.bpf.o [reps] [msg_bytes] [stream_bytes] [pingpongs]\n",
			argv[0]);
		return 2;
	}
	const char *policy = argv[1];
	int reps = argc > 2 ? atoi(argv[2]) : 7;
	size_t msg = argc > 3 ? strtoull(argv[3], NULL, 0) : 4u << 20;
	size_t total = argc > 4 ? strtoull(argv[4], NULL, 0) : 512u << 20;
	size_t pings = argc > 5 ? strtoull(argv[5], NULL, 0) : 20000;
	setenv("NCCL_SOCKET_IFNAME", getenv("NCCL_SOCKET_IFNAME") ? getenv("NCCL_SOCKET_IFNAME") : "lo", 1);
	struct nb_net_comm_config cfg = { -1 };
	if (N->init(&ctx, 1, &cfg, NULL, NULL)) {
		fprintf(stderr, "net init failed\n");
		return 1;
	}
	char *sbuf = malloc(msg * INFLIGHT), *rbuf = malloc(msg * INFLIGHT);
	memset(sbuf, 1, msg * INFLIGHT);
	memset(rbuf, 0, msg * INFLIGHT);
	double tp[2][64], lat[2][64];
	if (reps > 64)
		reps = 64;
	for (int r = 0; r < reps; r++) {
		for (int k = 0; k < 2; k++) {
			int cfgi = (r & 1) ? 1 - k : k; /* alternate which goes first */
			int attached = runtime_load_policies(cfgi ? policy : "");
			if (cfgi && attached != 1) {
				fprintf(stderr, "policy %s did not attach\n", policy);
				return 1;
			}
			/* fresh connections per measurement: the hooks see connect/accept too */
			struct pair p, q;
			pair_open(&p);
			pair_open(&q);
			tp[cfgi][r] = throughput(&p, msg, total, sbuf, rbuf);
			lat[cfgi][r] = latency_us(&p, &q, 8, pings);
			pair_close(&p);
			pair_close(&q);
		}
		fprintf(stderr, "rep %d: base %.2f GB/s %.2f us | hooks %.2f GB/s %.2f us\n", r,
			tp[0][r], lat[0][r], tp[1][r], lat[1][r]);
	}
	/* load-independent view: CPU cost of the hook path per message (ISEND + SEND_DONE on the
	 * sender, IRECV + RECV_DONE on the receiver: 4 program runs with their timestamps) */
	runtime_load_policies(policy);
	double best = 1e30;
	for (int t = 0; t < 5; t++) {
		enum { CALLS = 200000 };
		struct net_hook_args a = { .comm_id = 1, .conn_id = 7, .bytes = 8, .dev = 0,
					   .n_recv = 1, .abi_version = 12, .tag = 1 };
		double t0 = now_s();
		for (int i = 0; i < CALLS; i++) {
			a.op = (uint32_t)(i & 3);
			a.duration_ns = 20000 + (uint64_t)(i & 1023);
			a.now_ns = net_now_ns(); /* the one clock read per post / completion */
			net_hooks_run(&a);
		}
		double ns = (now_s() - t0) / CALLS * 4 * 1e9;
		if (ns < best)
			best = ns;
	}
	double ratios_tp[64], ratios_lat[64];
	for (int r = 0; r < reps; r++) {
		ratios_tp[r] = tp[1][r] / tp[0][r];
		ratios_lat[r] = lat[1][r] / lat[0][r];
	}
	double load[3] = { 0, 0, 0 };
	FILE *lf = fopen("/proc/loadavg", "r");
	if (lf) {
		if (fscanf(lf, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
			load[0] = -1;
		fclose(lf);
	}
	uint64_t faults = runtime_fault_count(NB_HOOK_NET);
	double tb = median(tp[0], reps), th = median(tp[1], reps);
	double lb = median(lat[0], reps), lh = median(lat[1], reps);
	printf("net loopback, %d interleaved reps, medians (%zu B messages x %zu in flight, %zu B per rep; "
	       "8 B ping-pong x %zu)\n",
	       reps, msg, (size_t)INFLIGHT, total, pings);
	printf("%-28s %12s %12s\n", "", "base", "hooks+acct");
	printf("%-28s %12.3f %12.3f   ratio %.3f (budget >= 0.990)\n", "throughput GB/s", tb, th, th / tb);
	printf("%-28s %12.2f %12.2f   ratio %.3f (budget <= 1.020)\n", "latency us (one way)", lb, lh, lh / lb);
	printf("%-28s %12s %12s   paired-ratio medians: throughput %.3f, latency %.3f\n", "", "", "",
	       median(ratios_tp, reps), median(ratios_lat, reps));
	printf("hook path CPU cost: %.0f ns per message (4 program runs + 4 clock reads) = %.2f %% of "
	       "the base one-way latency\n", best, best / (lb * 1000) * 100);
	printf("program faults: %llu; load average during the run: %.2f\n", (unsigned long long)faults,
	       load[0]);
	N->finalize(ctx);
	free(sbuf);
	free(rbuf);
	return 0;
}

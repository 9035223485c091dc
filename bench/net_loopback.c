/* Loopback benchmark of the net plugin's own TCP transport, driven through
 * ncclNetPlugin_v12 as NCCL's proxy drives it (two threads, one per side):
 *   throughput: a stream of messages (default 4 MiB, 8 in flight)
 *   latency:    ping-pong of small messages (default 8 B) over two connections
 * Each repetition measures, interleaved, the transport without programs ("base") and with
 * the SEC("net") hooks running net_accounting ("hooks"); the medians and their ratio are
 * printed (budget: throughput >= 0.99x, latency <= 1.02x).
 * Usage: bench_net_loopback POLICY.bpf.o [reps] [msg_bytes] [stream_bytes] [pingpongs]
 *
 * Wrap mode (the cost of ncclbpf's forwarding layer, src/plugin/net/net_plugin.c):
 *        bench_net_loopback --wrap INNER.so WRAPPER.so [reps] [pingpongs]
 * compares INNER's ncclNetPlugin_v12 called directly ("direct") with WRAPPER (libncclbpf.so)
 * wrapping it through NCCLBPF_NET_INNER ("wrap"), interleaved in one process, as NCCL's
 * NCCL_NET_PLUGIN=INNER vs NCCL_NET_PLUGIN=WRAPPER NCCLBPF_NET_INNER=INNER. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
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
/* the plugin under test and its context: set before each measurement, read by both sides */
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

/* ================================================================ wrap mode */

struct subject {
	const char *name;
	const struct nb_net_v12 *t;
	void *ctx;
};

static void use(const struct subject *s)
{
	N = s->t;
	ctx = s->ctx;
}

static double median_copy(const double *v, int n)
{
	double tmp[64];
	memcpy(tmp, v, sizeof(double) * (size_t)n);
	return median(tmp, n);
}

/* Paired ratios b[i]/a[i] (a repetition's two configs ran back to back, so pairing removes
 * most of the drift of a loaded machine): their median and geometric mean, each with a 95 %
 * bootstrap interval (4,000 resamples of the pairs). */
struct paired {
	double med, med_lo, med_hi, gm, gm_lo, gm_hi;
};

static void paired_stats(const double *a, const double *b, int n, struct paired *o)
{
	static double bmed[4000], bgm[4000];
	double lr[64], tmp[64], s = 0;
	for (int i = 0; i < n; i++) {
		lr[i] = log(b[i] / a[i]);
		s += lr[i];
	}
	o->gm = exp(s / n);
	o->med = exp(median_copy(lr, n));
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int k = 0; k < 4000; k++) {
		double t = 0;
		for (int i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			tmp[i] = lr[x % (uint64_t)n];
			t += tmp[i];
		}
		bgm[k] = t / n;
		bmed[k] = median(tmp, n);
	}
	qsort(bgm, 4000, sizeof(double), cmp);
	qsort(bmed, 4000, sizeof(double), cmp);
	o->gm_lo = exp(bgm[99]);
	o->gm_hi = exp(bgm[3899]);
	o->med_lo = exp(bmed[99]);
	o->med_hi = exp(bmed[3899]);
}

static void print_pair(const char *what, const double *a, const double *b, int n, int prec)
{
	struct paired p;
	paired_stats(a, b, n, &p);
	double ma = median_copy(a, n), mb = median_copy(b, n);
	printf("%-29s %8.*f %8.*f %6.3f   %.3f [%.3f, %.3f]   %.3f [%.3f, %.3f]\n", what, prec, ma,
	       prec, mb, mb / ma, p.med, p.med_lo, p.med_hi, p.gm, p.gm_lo, p.gm_hi);
}

/* test() on a request that stays pending: NCCL's proxy polls like this. The null inner
 * keeps it pending for `polls` calls; the tcp inner until the sender sends (nothing is sent
 * during the timed loop, so every call also tries the control socket). ns per call. */
static double ns_pending_test(struct pair *p, size_t polls, void (*set_polls)(int))
{
	char rbuf[64], sbuf[8] = { 0 };
	if (set_polls)
		set_polls((int)polls);
	void *r = post_recv(p->rc, rbuf, sizeof(rbuf), 5);
	if (set_polls)
		set_polls(0);
	int done = 0, sz[8];
	double t0 = now_s();
	for (size_t i = 0; i < polls; i++)
		if (N->test(r, &done, sz) || done) {
			fprintf(stderr, "pending test: the request completed or failed\n");
			exit(1);
		}
	double dt = now_s() - t0;
	wait_req(post_send(p->sc, sbuf, sizeof(sbuf), 5));
	wait_req(r);
	return dt / (double)polls * 1e9;
}

/* Post + one test that completes, on one side (the null inner completes at once): the
 * per-message cost of the forwarding layer on the sender (isend) or receiver (irecv). */
static double ns_post_test(struct pair *p, size_t count, bool send)
{
	char buf[64];
	int done = 0, sz[8];
	double t0 = now_s();
	for (size_t i = 0; i < count; i++) {
		void *r = send ? post_send(p->sc, buf, 8, 3) : post_recv(p->rc, buf, sizeof(buf), 3);
		if (N->test(r, &done, sz) || !done) {
			fprintf(stderr, "post+test: the request did not complete at once\n");
			exit(1);
		}
	}
	return (now_s() - t0) / (double)count * 1e9;
}

static int wrap_main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s --wrap INNER.so WRAPPER.so [reps] [pingpongs]\n", argv[0]);
		return 2;
	}
	const char *inner = argv[2], *wrapper = argv[3];
	int reps = argc > 4 ? atoi(argv[4]) : 9;
	size_t pings = argc > 5 ? strtoull(argv[5], NULL, 0) : 3000;
	reps = reps < 2 ? 2 : reps > 64 ? 64 : reps;
	setenv("NCCL_SOCKET_IFNAME", getenv("NCCL_SOCKET_IFNAME") ? getenv("NCCL_SOCKET_IFNAME") : "lo", 1);
	unsetenv("NCCLBPF_POLICY"); /* the forwarding layer alone: no SEC("net") programs */
	setenv("NCCLBPF_NET_INNER", inner, 1);
	void *hi = dlopen(inner, RTLD_NOW | RTLD_LOCAL);
	void *hw = hi ? dlopen(wrapper, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!hi || !hw) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	struct subject sub[2] = { { "direct", dlsym(hi, "ncclNetPlugin_v12"), NULL },
				  { "wrap", dlsym(hw, "ncclNetPlugin_v12"), NULL } };
	void (*set_polls)(int) = (void (*)(int))dlsym(hi, "null_net_set_polls");
	bool null_inner = set_polls != NULL;
	struct nb_net_comm_config cfg = { -1 };
	for (int k = 0; k < 2; k++)
		if (!sub[k].t || sub[k].t->init(&sub[k].ctx, (uint64_t)k + 1, &cfg, NULL, NULL)) {
			fprintf(stderr, "%s: no ncclNetPlugin_v12 or its init failed\n", sub[k].name);
			return 1;
		}
	printf("wrap mode: %s (\"%s\") direct vs through %s (\"%s\"), no programs attached\n", inner,
	       sub[0].t->name, wrapper, sub[1].t->name);

	/* ---- per-call cost of the forwarding layer (load-independent: medians of the
	 * per-trial times and of the paired differences) ---- */
	enum { TRIALS = 21 };
	size_t polls = null_inner ? 2000000 : 100000, cycles = 1000000;
	double pend[2][TRIALS], snd[2][TRIALS], rcv[2][TRIALS];
	struct pair cp[2];
	for (int k = 0; k < 2; k++) {
		use(&sub[k]);
		pair_open(&cp[k]);
	}
	for (int t = 0; t < TRIALS; t++)
		for (int j = 0; j < 2; j++) {
			int k = (t & 1) ? 1 - j : j;
			use(&sub[k]);
			pend[k][t] = ns_pending_test(&cp[k], polls, set_polls);
			if (null_inner) {
				snd[k][t] = ns_post_test(&cp[k], cycles, true);
				rcv[k][t] = ns_post_test(&cp[k], cycles, false);
			}
		}
	printf("\nper call, ns (median of %d interleaved trials; diff = median of paired wrap - direct)\n",
	       TRIALS);
	printf("%-34s %9s %9s %9s\n", "", "direct", "wrap", "diff");
	double (*rows[3])[TRIALS] = { pend, snd, rcv };
	const char *names[3] = { "test() on a pending request", "isend + test() that completes",
				 "irecv + test() that completes" };
	for (int i = 0; i < (null_inner ? 3 : 1); i++) {
		double d[TRIALS];
		for (int t = 0; t < TRIALS; t++)
			d[t] = rows[i][1][t] - rows[i][0][t];
		printf("%-34s %9.1f %9.1f %+9.1f\n", names[i], median_copy(rows[i][0], TRIALS),
		       median_copy(rows[i][1], TRIALS), median_copy(d, TRIALS));
	}
	for (int k = 0; k < 2; k++) {
		use(&sub[k]);
		pair_close(&cp[k]);
	}

	if (!null_inner) {
		/* ---- the transport through both, interleaved repetitions ---- */
		static const size_t sizes[3] = { 4u << 20, 64u << 10, 4u << 10 };
		static const size_t totals[3] = { 256u << 20, 128u << 20, 32u << 20 };
		double tp[3][2][64], lat[2][64];
		char *sbuf = malloc(sizes[0] * INFLIGHT), *rbuf = malloc(sizes[0] * INFLIGHT);
		if (!sbuf || !rbuf)
			return 1;
		memset(sbuf, 1, sizes[0] * INFLIGHT);
		memset(rbuf, 0, sizes[0] * INFLIGHT);
		for (int r = 0; r < reps; r++) {
			for (int j = 0; j < 2; j++) {
				int k = (r & 1) ? 1 - j : j;
				use(&sub[k]);
				struct pair p, q;
				pair_open(&p);
				pair_open(&q);
				for (int s = 0; s < 3; s++)
					tp[s][k][r] = throughput(&p, sizes[s], totals[s], sbuf, rbuf);
				lat[k][r] = latency_us(&p, &q, 8, pings);
				pair_close(&p);
				pair_close(&q);
			}
			fprintf(stderr, "rep %d: 4M %.2f/%.2f 64K %.3f/%.3f 4K %.3f/%.3f GB/s, %.2f/%.2f us\n", r,
				tp[0][0][r], tp[0][1][r], tp[1][0][r], tp[1][1][r], tp[2][0][r], tp[2][1][r],
				lat[0][r], lat[1][r]);
		}
		printf("\ntransport, %d interleaved reps (%d in flight; 8 B ping-pong x %zu); ratio = wrap/direct\n",
		       reps, INFLIGHT, pings);
		printf("%-29s %8s %8s %6s   %-22s   %s\n", "(medians)", "direct", "wrap", "ratio",
		       "paired: median [95% CI]", "geomean [95% CI]");
		print_pair("throughput 4 MiB msgs, GB/s", tp[0][0], tp[0][1], reps, 3);
		print_pair("throughput 64 KiB msgs, GB/s", tp[1][0], tp[1][1], reps, 3);
		print_pair("throughput 4 KiB msgs, GB/s", tp[2][0], tp[2][1], reps, 3);
		print_pair("latency 8 B one way, us", lat[0], lat[1], reps, 2);
		free(sbuf);
		free(rbuf);
	}
	double load[3] = { -1, -1, -1 };
	FILE *lf = fopen("/proc/loadavg", "r");
	if (lf) {
		if (fscanf(lf, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
			load[0] = -1;
		fclose(lf);
	}
	printf("load average during the run: %.2f\n", load[0]);
	for (int k = 0; k < 2; k++)
		sub[k].t->finalize(sub[k].ctx);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--wrap"))
		return wrap_main(argc, argv);
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

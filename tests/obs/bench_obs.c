/* CPU cost of observability on NCCL's threads (issue 27; docs/results.md section 19). Not a
 * test: it prints ratios against a baseline in the same process, with the configurations
 * interleaved over REPS repetitions (medians), so that a shared, noisy machine biases both
 * sides alike.
 *  - profiler completion path (the mock host's v7 events for one AllReduce, every
 *    collective GPU-timed, NCCLBPF_PROFILE_SAMPLE=1): export off, vs OTLP traces on (each
 *    collective becomes a span in the ring; a sink thread on 127.0.0.1 accepts them).
 *  - tuner decision (size_aware.bpf.o, JIT): no consumer (the straight path), vs OTLP on
 *    (the general path, provenance recorded for the profiler).
 * usage: bench_obs SIZE_AWARE.bpf.o [COLLECTIVES] [REPS] */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "plugin/metrics/metrics.h"
#include "plugin/otlp/otlp.h"
#include "plugin/provenance.h"
#include "plugin/tuner/tuner.h"
#include "prof_test_util.h"
#include "runtime/runtime.h"

static int sink_port;
static _Atomic bool sink_stop;

static void *sink(void *arg)
{
	int lfd = *(int *)arg;
	static char buf[1 << 20];
	while (!atomic_load(&sink_stop)) {
		struct pollfd p = {lfd, POLLIN, 0};
		if (poll(&p, 1, 50) <= 0)
			continue;
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		/* read until the body is complete, then answer */
		size_t got = 0;
		for (;;) {
			ssize_t n = recv(fd, buf + got, sizeof(buf) - got - 1, 0);
			if (n <= 0)
				break;
			got += (size_t)n;
			buf[got] = 0;
			char *e = strstr(buf, "\r\n\r\n"), *cl = strstr(buf, "Content-Length: ");
			if (e && cl && got >= (size_t)(e + 4 - buf) + strtoul(cl + 16, NULL, 10))
				break;
		}
		const char *r = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
		if (send(fd, r, strlen(r), MSG_NOSIGNAL) < 0)
			perror("sink");
		close(fd);
	}
	return NULL;
}

/* CPU time of the calling thread: the exporter thread's work (and other processes on a
 * shared machine) stays out of the measured thread's numbers */
static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void configure(bool export_on)
{
	char ep[64];
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", sink_port);
	if (export_on)
		setenv("NCCLBPF_OTLP", "traces", 1);
	else
		unsetenv("NCCLBPF_OTLP");
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", ep, 1);
	setenv("OTEL_BSP_MAX_QUEUE_SIZE", "65536", 1);
	otlp_reset_for_tests();
	metrics_reset_for_tests();
	prov_reset_for_tests();
	setenv("NCCLBPF_PROFILE", "coll", 1);
	setenv("NCCLBPF_PROFILE_SAMPLE", "1", 1);
	profiler_reset_mode_for_tests();
}

/* ns per collective on the profiler's path */
static double run_profiler(int n)
{
	struct ph_host h;
	ph_open_table(&h, 7, prof_table(7));
	struct ph_comm c;
	ph_comm_init(&h, &c, 0xbe7c, "bench", 1, 2, 0);
	struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = 1024,
			    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_LL,
			    .n_channels = 4, .gpu_ns = 8000};
	for (int i = 0; i < 1000; i++)
		ph_coll_run(&c, &k);
	double t0 = now_ns();
	for (int i = 0; i < n; i++)
		ph_coll_run(&c, &k);
	double t = (now_ns() - t0) / n;
	ph_comm_finalize(&c);
	return t;
}

/* ns per getCollInfo */
static double run_tuner(int n, bool *straight)
{
	void *t = NULL;
	tuner_comm_open(6, 0xbe7d, 2, 1, NULL, &t);
	float table[7][3];
	double best = 1e30;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now_ns();
		for (int i = 0; i < n; i++) {
			for (int k = 0; k < 21; k++)
				table[k / 3][k % 3] = 10.0f + (float)k;
			int nch = 0;
			tuner_get_coll_info(t, NCCLBPF_COLL_ALLREDUCE, 4096u << (i & 7), 1,
					    (float **)table, 7, 3, 0, &nch);
		}
		double d = (now_ns() - t0) / n;
		best = d < best ? d : best;
	}
	*straight = ((struct tuner_comm *)t)->straight;
	tuner_comm_close(t);
	return best;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s SIZE_AWARE.bpf.o [COLLECTIVES] [REPS]\n", argv[0]);
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 20000, reps = argc > 3 ? atoi(argv[3]) : 5;
	if (reps > 32)
		reps = 32;
	setenv("NCCLBPF_CONTROL", "off", 1);
	setenv("NCCLBPF_AGREE", "off", 1);
	unsetenv("NCCLBPF_METRICS_FILE");
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_DECISION_LOG");
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bind(lfd, (struct sockaddr *)&a, sizeof(a));
	socklen_t al = sizeof(a);
	getsockname(lfd, (struct sockaddr *)&a, &al);
	sink_port = ntohs(a.sin_port);
	listen(lfd, 16);
	pthread_t th;
	pthread_create(&th, NULL, sink, &lfd);
	if (runtime_load_policies(argv[1]) < 1) {
		fprintf(stderr, "cannot load %s\n", argv[1]);
		return 1;
	}
	double p_off[32], p_on[32], t_off[32], t_on[32];
	bool s_off = false, s_on = true;
	for (int r = 0; r < reps; r++) {
		configure(false);
		p_off[r] = run_profiler(n);
		t_off[r] = run_tuner(n, &s_off);
		configure(true);
		p_on[r] = run_profiler(n);
		t_on[r] = run_tuner(n, &s_on);
	}
	struct otlp_counters c;
	otlp_get_counters(&c);
	configure(false);
	qsort(p_off, (size_t)reps, sizeof(double), cmp);
	qsort(p_on, (size_t)reps, sizeof(double), cmp);
	qsort(t_off, (size_t)reps, sizeof(double), cmp);
	qsort(t_on, (size_t)reps, sizeof(double), cmp);
	int m = reps / 2;
	printf("profiler path, ns per collective (14 callbacks + completion), median of %d:\n", reps);
	printf("  export off %.0f, OTLP traces on %.0f: ratio %.3f (+%.0f ns per span)\n", p_off[m],
	       p_on[m], p_on[m] / p_off[m], p_on[m] - p_off[m]);
	printf("tuner decision, ns per getCollInfo (size_aware, JIT), median of %d (best of 3 each):\n",
	       reps);
	printf("  no consumer (%s path) %.1f, OTLP on (%s path, provenance) %.1f: ratio %.3f\n",
	       s_off ? "straight" : "general", t_off[m], s_on ? "straight" : "general", t_on[m],
	       t_on[m] / t_off[m]);
	printf("last run: %llu spans queued, %llu exported, %llu dropped (queue full), %llu dropped "
	       "(export failed)\n",
	       (unsigned long long)c.spans_queued, (unsigned long long)c.spans_exported,
	       (unsigned long long)c.spans_dropped_full, (unsigned long long)c.spans_dropped_failed);
	atomic_store(&sink_stop, true);
	pthread_join(th, NULL);
	return 0;
}

/* OTLP export end to end (issue 27), in one process: the profiler (mock host, v7 events,
 * two ranks of one communicator, every collective GPU-timed) and the tuner (prov_split.bpf.o)
 * feed the exporter, which posts to a fake collector on 127.0.0.1 run by this test. Checked:
 * every span arrives, the two ranks' spans of one collective share a trace id (and no two
 * collectives do), the attributes (algorithm, protocol, channels, decision source, policy),
 * the cumulative histograms; JSON and protobuf (the payloads are saved for otlp_decode.js,
 * which decodes them with the official opentelemetry-proto definitions); retries with
 * Retry-After; a permanent error; hostile endpoints (never answers, garbage, an oversized
 * response, nobody listening) cost a bounded finalize and counted drops; a full queue
 * drops and counts instead of blocking. Accounting always closes: queued = exported +
 * dropped (export failed) + rejected, and submitted = queued + dropped (queue full).
 * Usage: test_otlp PROV_SPLIT.bpf.o OUT_DIR */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_mini.h"
#include "plugin/metrics/metrics.h"
#include "plugin/otlp/otlp.h"
#include "plugin/provenance.h"
#include "plugin/tuner/tuner.h"
#include "prof_test_util.h"
#include "runtime/runtime.h"
#include "test_util.h"

/* ---- the fake collector ---- */
enum behave { B_OK, B_503_RETRY_AFTER, B_400, B_HANG, B_GARBAGE, B_HUGE, B_PARTIAL };

#define MAX_REQ 256
static struct {
	int lfd, port;
	pthread_t th;
	_Atomic bool stop;
	enum behave script[16];
	int n_script;
	enum behave dflt;
	pthread_mutex_t lock;
	int n_req;
	char *body[MAX_REQ];
	size_t len[MAX_REQ];
	char path[MAX_REQ][64];
	char ctype[MAX_REQ][64];
} col = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Case-insensitive strstr (header names). */
static char *ci_find(char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return hay;
	return NULL;
}

static void send_str(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void serve(int fd)
{
	static char buf[64 << 20];
	size_t got = 0, need = 0;
	char *body = NULL;
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 100) <= 0) {
			if (atomic_load(&col.stop))
				return;
			continue;
		}
		ssize_t n = recv(fd, buf + got, sizeof(buf) - got - 1, 0);
		if (n <= 0)
			return;
		got += (size_t)n;
		buf[got] = 0;
		char *e = strstr(buf, "\r\n\r\n");
		if (!e)
			continue;
		char *cl = ci_find(buf, "Content-Length:");
		size_t clen = cl ? strtoul(cl + 15, NULL, 10) : 0;
		need = (size_t)(e + 4 - buf) + clen;
		if (got >= need) {
			body = e + 4;
			break;
		}
	}
	pthread_mutex_lock(&col.lock);
	int i = col.n_req++;
	enum behave b = i < col.n_script ? col.script[i] : col.dflt;
	if (i < MAX_REQ) {
		col.len[i] = need - (size_t)(body - buf);
		col.body[i] = malloc(col.len[i] + 1);
		memcpy(col.body[i], body, col.len[i]);
		col.body[i][col.len[i]] = 0;
		sscanf(buf, "POST %63s", col.path[i]);
		char *ct = ci_find(buf, "Content-Type: ");
		if (ct)
			sscanf(ct + 14, "%63s", col.ctype[i]);
	}
	pthread_mutex_unlock(&col.lock);
	const char *r = NULL;
	switch (b) {
	case B_OK: r = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"; break;
	case B_503_RETRY_AFTER:
		r = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n";
		break;
	case B_400: r = "HTTP/1.1 400 Bad Request\r\nContent-Length: 5\r\n\r\nnope\n"; break;
	case B_PARTIAL:
		r = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "2d\r\n{\"partialSuccess\":{\"rejectedSpans\":\"3\",\"error\r\n"
		    "1b\r\nMessage\":\"three too many\"}}\r\n0\r\n\r\n";
		break;
	case B_GARBAGE: r = "HTTP/1.1 2OO OK\r\nbanana\r\n\r\n"; break;
	case B_HUGE: {
		static char big[100000];
		memset(big, 'x', sizeof(big));
		char head[128];
		int k = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
				 sizeof(big));
		send_str(fd, head, (size_t)k);
		send_str(fd, big, sizeof(big));
		return;
	}
	case B_HANG:
		while (!atomic_load(&col.stop)) { /* until the client gives up */
			struct pollfd p = {fd, POLLIN, 0};
			char c;
			if (poll(&p, 1, 50) > 0 && recv(fd, &c, 1, 0) <= 0)
				return;
		}
		return;
	}
	send_str(fd, r, strlen(r));
}

static void *collector(void *arg)
{
	(void)arg;
	while (!atomic_load(&col.stop)) {
		struct pollfd p = {col.lfd, POLLIN, 0};
		if (poll(&p, 1, 50) <= 0)
			continue;
		int fd = accept(col.lfd, NULL, NULL);
		if (fd < 0)
			continue;
		serve(fd);
		close(fd);
	}
	return NULL;
}

static void collector_start(enum behave dflt, const enum behave *script, int n)
{
	pthread_mutex_lock(&col.lock);
	for (int i = 0; i < col.n_req && i < MAX_REQ; i++)
		free(col.body[i]);
	col.n_req = 0;
	col.dflt = dflt;
	col.n_script = n;
	for (int i = 0; i < n; i++)
		col.script[i] = script[i];
	pthread_mutex_unlock(&col.lock);
	if (col.lfd)
		return;
	col.lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK(bind(col.lfd, (struct sockaddr *)&a, sizeof(a)) == 0);
	socklen_t al = sizeof(a);
	getsockname(col.lfd, (struct sockaddr *)&a, &al);
	col.port = ntohs(a.sin_port);
	CHECK(listen(col.lfd, 16) == 0);
	pthread_create(&col.th, NULL, collector, NULL);
}

/* ---- the job ---- */
static const char *obj;
static const char *out_dir;

static void setup(const char *proto, const char *endpoint, int timeout_ms, int queue)
{
	char v[256];
	setenv("NCCLBPF_OTLP", "on", 1);
	snprintf(v, sizeof(v), "%s", endpoint);
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", v, 1);
	setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto, 1);
	snprintf(v, sizeof(v), "%d", timeout_ms);
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", v, 1);
	snprintf(v, sizeof(v), "%d", queue);
	setenv("OTEL_BSP_MAX_QUEUE_SIZE", v, 1);
	setenv("OTEL_BSP_SCHEDULE_DELAY", "20", 1);
	setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "64", 1);
	setenv("OTEL_METRIC_EXPORT_INTERVAL", "3600000", 1); /* only at finalize and flush */
	setenv("OTEL_SERVICE_NAME", "otlp-test", 1);
	setenv("OTEL_RESOURCE_ATTRIBUTES", "job.id=42,team=a%20b", 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=t1", 1);
	otlp_reset_for_tests();
	metrics_reset_for_tests();
	prov_reset_for_tests();
	prof_set_mode(NULL); /* the default: coll, because export is on */
	CHECK(otlp_traces_enabled() && otlp_metrics_enabled());
}

static const uint64_t sizes[2] = {16u << 10, 4u << 20};

/* Two ranks of comm 0xc0ffee (one process drives both, as a single-process job does), n
 * AllReduces each, with the tuner deciding; finalize flushes the exporter. */
static void job(int n, bool tuner)
{
	struct ph_host h;
	ph_open_table(&h, 7, prof_table(7));
	CHECK(profiler_process_mode() == PROFILER_MODE_COLL);
	struct ph_comm pc[2];
	void *t[2] = {NULL, NULL};
	for (int r = 0; r < 2; r++) {
		CHECK(ph_comm_init(&h, &pc[r], 0xc0ffee, "dp group", 1, 2, r) == 0);
		if (tuner)
			tuner_comm_open(6, 0xc0ffee, 2, 1, NULL, &t[r]);
	}
	for (int i = 0; i < n; i++)
		for (int r = 0; r < 2; r++) {
			uint64_t b = sizes[i % 2];
			float table[7][3];
			for (int k = 0; k < 21; k++)
				table[k / 3][k % 3] = 10.0f + (float)k;
			int nch = 0;
			if (t[r])
				tuner_get_coll_info(t[r], NCCLBPF_COLL_ALLREDUCE, b, 1, (float **)table,
						    7, 3, 0, &nch);
			struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = b / 4,
					    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_SIMPLE,
					    .n_channels = 4, .gpu_ns = 15000 + (uint64_t)r * 100,
					    .user_tag = 7};
			ph_coll_run(&pc[r], &k);
		}
	for (int r = 0; r < 2; r++) {
		CHECK(ph_comm_finalize(&pc[r]) == 0);
		if (t[r])
			tuner_comm_close(t[r]);
	}
}

static void accounting(int submitted)
{
	struct otlp_counters c;
	/* the exporter may still be finishing its last pass (finalize waits a bounded time):
	 * wait for the books to close, at most 10 s (an event, not a speed) */
	for (int w = 0; w < 1000; w++) {
		otlp_get_counters(&c);
		if (c.spans_queued == c.spans_exported + c.spans_dropped_failed + c.spans_rejected)
			break;
		usleep(10000);
	}
	CHECK_EQ_U64(c.spans_queued + c.spans_dropped_full, submitted);
	CHECK_EQ_U64(c.spans_queued, c.spans_exported + c.spans_dropped_failed + c.spans_rejected);
}

static void save(int i, const char *tag)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s-%s-%02d.%s", out_dir, tag,
		 strstr(col.path[i], "metrics") ? "metrics" : "traces", i,
		 strstr(col.ctype[i], "protobuf") ? "pb" : "json");
	FILE *f = fopen(p, "wb");
	if (f) {
		fwrite(col.body[i], 1, col.len[i], f);
		fclose(f);
	}
}

static const char *attr(const struct jm *attrs, const char *key, char *buf, size_t len)
{
	for (size_t i = 0; attrs && i < attrs->n; i++) {
		const struct jm *kv = jm_at(attrs, i);
		const struct jm *k = jm_get(kv, "key");
		if (!k || strcmp(k->str, key))
			continue;
		const struct jm *v = jm_get(kv, "value");
		const struct jm *s = jm_get(v, "stringValue"), *n = jm_get(v, "intValue");
		snprintf(buf, len, "%s", s ? s->str : n ? n->str : "?");
		return buf;
	}
	return NULL;
}

static void test_json(void)
{
	char ep[64];
	collector_start(B_OK, NULL, 0);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", col.port);
	setup("http/json", ep, 5000, 2048);
	char first[96];
	char spec[600];
	snprintf(spec, sizeof(spec), "%s:first,%s:second", obj, obj);
	CHECK(runtime_load_policies(spec) == 2);
	snprintf(first, sizeof(first), "prov_split.bpf.o:first@%llu",
		 (unsigned long long)runtime_hook_chain(NB_HOOK_TUNER)->version);
	const int n = 40;
	job(n, true);
	accounting(2 * n);
	struct otlp_counters c;
	otlp_get_counters(&c);
	CHECK_EQ_U64(c.spans_exported, 2 * n);
	/* the collector's view */
	int spans = 0, traces_req = 0, metrics_req = 0, hist = 0;
	char tids[2 * 40][40];
	int tid_rank[2 * 40];
	int big_policy = 0, small_pinned = 0, good_attrs = 0;
	pthread_mutex_lock(&col.lock);
	for (int i = 0; i < col.n_req && i < MAX_REQ; i++) {
		save(i, "json");
		CHECK(strstr(col.ctype[i], "application/json") != NULL);
		char err[128];
		struct jm *d = jm_parse(col.body[i], err, sizeof(err));
		if (!d)
			fprintf(stderr, "request %d: %s\n", i, err);
		CHECK(d != NULL);
		if (!d)
			continue;
		if (!strcmp(col.path[i], "/v1/traces")) {
			traces_req++;
			const struct jm *ss = jm_path(d, "resourceSpans.0.scopeSpans.0.spans");
			char b[128];
			const struct jm *ra = jm_path(d, "resourceSpans.0.resource.attributes");
			CHECK(attr(ra, "service.name", b, sizeof(b)) && !strcmp(b, "otlp-test"));
			CHECK(attr(ra, "team", b, sizeof(b)) && !strcmp(b, "a b"));
			for (size_t k = 0; ss && k < ss->n; k++, spans++) {
				const struct jm *s = jm_at(ss, k);
				const struct jm *a = jm_get(s, "attributes");
				char rank[16] = "", src[32] = "", pol[128] = "", band[16] = "", alg[16] = "",
				     tag[16] = "", name[32] = "";
				attr(a, "nccl.rank", rank, sizeof(rank));
				attr(a, "ncclbpf.decision.source", src, sizeof(src));
				attr(a, "ncclbpf.policy", pol, sizeof(pol));
				attr(a, "nccl.size_band", band, sizeof(band));
				attr(a, "nccl.algorithm", alg, sizeof(alg));
				attr(a, "nccl.user_tag", tag, sizeof(tag));
				attr(a, "nccl.comm.name", name, sizeof(name));
				if (spans < 2 * n) {
					snprintf(tids[spans], sizeof(tids[0]), "%s",
						 jm_get(s, "traceId")->str);
					tid_rank[spans] = atoi(rank);
				}
				big_policy += !strcmp(band, "4MiB") && !strcmp(src, "policy") &&
					      !strcmp(pol, first);
				small_pinned += !strcmp(band, "16KiB") && !strcmp(src, "pinned") && !pol[0];
				good_attrs += !strcmp(alg, "Ring") && !strcmp(tag, "7") &&
					      !strcmp(name, "dp group") &&
					      strlen(jm_get(s, "spanId")->str) == 16 &&
					      strlen(jm_get(s, "traceId")->str) == 32;
			}
		} else if (!strcmp(col.path[i], "/v1/metrics")) {
			metrics_req++;
			const struct jm *ms = jm_path(d, "resourceMetrics.0.scopeMetrics.0.metrics");
			for (size_t k = 0; ms && k < ms->n; k++) {
				const struct jm *m = jm_at(ms, k);
				if (strcmp(jm_get(m, "name")->str, "ncclbpf.collective.duration"))
					continue;
				const struct jm *dp = jm_path(m, "histogram.dataPoints");
				CHECK(jm_path(m, "histogram.aggregationTemporality")->num == 2);
				for (size_t q = 0; dp && q < dp->n; q++) {
					const struct jm *p = jm_at(dp, q);
					const struct jm *bc = jm_get(p, "bucketCounts");
					CHECK(bc->n == jm_get(p, "explicitBounds")->n + 1);
					uint64_t sum = 0;
					for (size_t z = 0; z < bc->n; z++)
						sum += strtoull(jm_at(bc, z)->str, NULL, 10);
					CHECK(sum == strtoull(jm_get(p, "count")->str, NULL, 10));
					hist++;
				}
			}
		}
		jm_free(d);
	}
	pthread_mutex_unlock(&col.lock);
	CHECK_EQ_U64(spans, 2 * n);
	CHECK(traces_req >= 1);
	CHECK(metrics_req >= 1);
	CHECK(hist >= 2);
	CHECK_EQ_U64(big_policy, n);
	CHECK_EQ_U64(small_pinned, n);
	CHECK_EQ_U64(good_attrs, 2 * n);
	/* one trace per collective: each trace id exactly twice, once per rank */
	int joined = 0;
	for (int i = 0; i < spans && i < 2 * n; i++) {
		int same = 0, other_rank = 0;
		for (int j = 0; j < spans && j < 2 * n; j++)
			if (!strcmp(tids[i], tids[j])) {
				same++;
				other_rank += tid_rank[j] != tid_rank[i];
			}
		joined += same == 2 && other_rank == 1;
	}
	CHECK_EQ_U64(joined, 2 * n);
	runtime_unload_policies();
}

static void test_protobuf(void)
{
	char ep[64];
	collector_start(B_OK, NULL, 0);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", col.port);
	setup("http/protobuf", ep, 5000, 2048);
	job(10, false);
	accounting(20);
	struct otlp_counters c;
	otlp_get_counters(&c);
	CHECK_EQ_U64(c.spans_exported, 20);
	pthread_mutex_lock(&col.lock);
	for (int i = 0; i < col.n_req && i < MAX_REQ; i++) {
		CHECK(!strcmp(col.ctype[i], "application/x-protobuf"));
		save(i, "proto");
	}
	pthread_mutex_unlock(&col.lock);
}

/* 503 with Retry-After twice, then accepted: nothing lost; a partial success counts. */
static void test_retry(void)
{
	char ep[64];
	const enum behave s[] = {B_503_RETRY_AFTER, B_503_RETRY_AFTER, B_PARTIAL};
	collector_start(B_OK, s, 3);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", col.port);
	setup("http/json", ep, 5000, 2048);
	/* one batch of all 10 spans, sent when the 10th arrives */
	setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "10", 1);
	setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000", 1);
	otlp_reset_for_tests();
	/* the spans queue while the job runs; the exporter retries on its own before the
	 * flush: wait (bounded) for the third request instead of finalizing at once */
	struct ph_host h;
	ph_open_table(&h, 7, prof_table(7));
	struct ph_comm pc;
	CHECK(ph_comm_init(&h, &pc, 0xabcd, "r", 1, 1, 0) == 0);
	for (int i = 0; i < 10; i++) {
		struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = 1024,
				    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_LL,
				    .n_channels = 2, .gpu_ns = 9000};
		ph_coll_run(&pc, &k);
	}
	for (int w = 0; w < 200; w++) { /* at most 20 s: backoff of 1 s twice, then accepted */
		struct otlp_counters c;
		otlp_get_counters(&c);
		if (c.span_batches_ok)
			break;
		usleep(100000);
	}
	CHECK(ph_comm_finalize(&pc) == 0);
	accounting(10);
	struct otlp_counters c;
	otlp_get_counters(&c);
	CHECK_EQ_U64(c.retries >= 2, 1);
	CHECK_EQ_U64(c.spans_rejected, 3);
	CHECK_EQ_U64(c.spans_exported, 7);
}

/* Endpoints that never help: every span is dropped and counted, finalize returns. */
static void test_hostile(enum behave b, const char *what)
{
	char ep[64];
	collector_start(b, NULL, 0);
	if (b == B_OK) /* nobody listening: a port that was just closed */ {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		bind(fd, (struct sockaddr *)&a, sizeof(a));
		socklen_t al = sizeof(a);
		getsockname(fd, (struct sockaddr *)&a, &al);
		snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", ntohs(a.sin_port));
		close(fd);
	} else {
		snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", col.port);
	}
	setup("http/json", ep, 300, 2048);
	job(8, false);
	accounting(16);
	struct otlp_counters c;
	otlp_get_counters(&c);
	printf("%s: %llu spans dropped (export failed), %llu requests\n", what,
	       (unsigned long long)c.spans_dropped_failed, (unsigned long long)c.requests);
	CHECK_EQ_U64(c.spans_exported, 0);
	CHECK_EQ_U64(c.spans_dropped_failed, 16);
	CHECK(c.metric_exports_failed >= 1);
}

/* A collector that never answers and a queue of 16: submissions never wait, they drop. */
static void test_queue_full(void)
{
	char ep[64];
	collector_start(B_HANG, NULL, 0);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", col.port);
	setup("http/json", ep, 300, 16);
	job(250, false);
	struct otlp_counters c;
	otlp_get_counters(&c);
	printf("queue full: %llu queued, %llu dropped (queue full)\n",
	       (unsigned long long)c.spans_queued, (unsigned long long)c.spans_dropped_full);
	CHECK(c.spans_dropped_full > 0);
	accounting(500);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s PROV_SPLIT.bpf.o OUT_DIR\n", argv[0]);
		return 2;
	}
	obj = argv[1];
	out_dir = argv[2];
	char rm[600];
	snprintf(rm, sizeof(rm), "rm -rf '%s'", out_dir);
	if (system(rm) != 0)
		fprintf(stderr, "could not clean %s\n", out_dir);
	mkdir(out_dir, 0755);
	setenv("NCCLBPF_CONTROL", "off", 1);
	setenv("NCCLBPF_AGREE", "off", 1);
	unsetenv("NCCLBPF_METRICS_FILE");
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_DECISION_LOG");
	unsetenv("NCCLBPF_POLICY");
	test_json();
	test_protobuf();
	test_retry();
	test_hostile(B_400, "HTTP 400");
	test_hostile(B_HANG, "never answers");
	test_hostile(B_GARBAGE, "garbage response");
	test_hostile(B_HUGE, "oversized response");
	test_hostile(B_OK, "nobody listening");
	test_queue_full();
	atomic_store(&col.stop, true);
	pthread_join(col.th, NULL);
	TEST_DONE();
}

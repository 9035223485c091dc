/* The OTLP exporter (otlp.h): configuration from the OTEL_* variables, the span ring NCCL's
 * threads write, and the exporter thread that batches, encodes, sends and retries. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugin/metrics/metrics.h"
#include "plugin/otlp/otlp.h"
#include "plugin/otlp/otlp_http.h"
#include "runtime/control.h"
#include "runtime/runtime.h"

#define SIG_TRACES 0
#define SIG_METRICS 1
#define PAYLOAD_LIMIT (32u << 20) /* one request, bytes */
#define MAX_ATTEMPTS 5            /* per batch of spans (and per final metrics snapshot) */
#define MAX_FINALS 8              /* metrics snapshots of finalized communicators waiting */
#define FLUSH_MAX_MS 2000         /* the longest a finalize waits for the last export */
#define NAMES 256

/* ---- configuration ---- */
struct signal_cfg {
	bool on, proto;
	char endpoint[1100];
	struct otlp_url url;
	char headers[4200];
	int timeout_ms;
	const char *name; /* "traces" / "metrics" */
};

static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int cfg_state; /* 0 unread, 1 read */
static struct signal_cfg sig[2] = {{.name = "traces"}, {.name = "metrics"}};
static uint64_t bsp_delay_ms = 5000, metric_interval_ms = 60000;
static uint32_t queue_cap = 2048, batch_max = 512;
static struct otlp_resource resource_attrs;
static uint64_t process_start_unix;

/* ---- the span ring (bounded MPSC, a sequence number per slot) ---- */
struct slot {
	_Atomic uint64_t seq;
	struct otlp_span_rec r;
};
static struct slot *_Atomic ring;
static uint64_t ring_mask;
static _Atomic uint64_t ring_head;
static uint64_t ring_tail; /* exporter thread only */

/* ---- counters ---- */
static _Atomic uint64_t c_queued, c_exported, c_drop_full, c_drop_failed, c_rejected;
static _Atomic uint64_t c_mx_ok, c_mx_failed, c_points_rejected, c_requests, c_retries;
static _Atomic uint64_t c_batches_ok, c_batches_failed;

/* ---- lifecycle (under life_lock) ---- */
static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t life_cv; /* CLOCK_MONOTONIC */
static int thread_state;       /* 0 none, 1 running */
static bool x_stop;
static uint64_t flush_req, flush_done;
static _Atomic bool x_abort;
static int refs;
static bool atexit_done;
static struct {
	uint64_t comm_id;
	char name[64];
	bool open;
} names[NAMES];
static struct payload {
	char *body;
	size_t len;
	int attempts;
	uint64_t retry_at;
} finals[MAX_FINALS];
static int n_finals;
static char last_error[256];
static bool failing[2];

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t ns_of(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* The signal-specific variable OTEL_EXPORTER_OTLP_<SIG>_<what>, else the generic one. */
static const char *sig_env(int s, const char *what)
{
	char n[96];
	snprintf(n, sizeof(n), "OTEL_EXPORTER_OTLP_%s_%s", s == SIG_TRACES ? "TRACES" : "METRICS",
		 what);
	const char *v = env(n);
	if (v)
		return v;
	snprintf(n, sizeof(n), "OTEL_EXPORTER_OTLP_%s", what);
	return env(n);
}

static uint64_t env_num(const char *name, uint64_t dflt, uint64_t lo, uint64_t hi)
{
	const char *v = env(name);
	if (!v)
		return dflt;
	char *end = NULL;
	unsigned long long x = strtoull(v, &end, 10);
	if (!end || *end || *v == '-' || x < lo || x > hi) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "otlp: %s=%s not understood (%" PRIu64 "..%" PRIu64 "): using %" PRIu64,
			    name, v, lo, hi, dflt);
		return dflt;
	}
	return x;
}

static void config_signal(int s, bool want)
{
	struct signal_cfg *c = &sig[s];
	c->on = false;
	if (!want)
		return;
	const char *ep = NULL;
	char n[64];
	snprintf(n, sizeof(n), "OTEL_EXPORTER_OTLP_%s_ENDPOINT", s == SIG_TRACES ? "TRACES" : "METRICS");
	if ((ep = env(n))) {
		snprintf(c->endpoint, sizeof(c->endpoint), "%s", ep); /* used as it is */
	} else if ((ep = env("OTEL_EXPORTER_OTLP_ENDPOINT"))) {
		size_t l = strlen(ep);
		while (l && ep[l - 1] == '/')
			l--;
		snprintf(c->endpoint, sizeof(c->endpoint), "%.*s/v1/%s", (int)(l > 1000 ? 1000 : l),
			 ep, c->name);
	} else {
		snprintf(c->endpoint, sizeof(c->endpoint), "http://localhost:4318/v1/%s", c->name);
	}
	char err[300];
	if (otlp_url_parse(c->endpoint, &c->url, err, sizeof(err))) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "otlp: %s export off: %s", c->name, err);
		return;
	}
	const char *proto = sig_env(s, "PROTOCOL");
	c->proto = false;
	if (proto && !strcmp(proto, "http/protobuf")) {
		c->proto = true;
	} else if (proto && !strcmp(proto, "grpc")) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "otlp: %s export off: OTLP/gRPC is not supported (http/json and "
			    "http/protobuf are; a collector serves both on port 4318)",
			    c->name);
		return;
	} else if (proto && strcmp(proto, "http/json")) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "otlp: protocol %s not understood (http/json, http/protobuf): using "
			    "http/json",
			    proto);
	}
	const char *h = sig_env(s, "HEADERS");
	c->headers[0] = 0;
	if (h && otlp_parse_headers(h, c->headers, sizeof(c->headers), err, sizeof(err)) < 0)
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "otlp: %s headers ignored (OTEL_EXPORTER_OTLP_[%s_]HEADERS): %s", c->name,
			    s == SIG_TRACES ? "TRACES" : "METRICS", err);
	const char *t = sig_env(s, "TIMEOUT");
	c->timeout_ms = 10000;
	if (t) {
		char *end = NULL;
		unsigned long x = strtoul(t, &end, 10);
		if (end && !*end && *t != '-' && x >= 1 && x <= 600000)
			c->timeout_ms = (int)x;
		else
			runtime_log(NB_LOG_WARN, NB_LOG_INIT,
				    "otlp: %s timeout %s not understood (ms, 1..600000): using 10000",
				    c->name, t);
	}
	const char *z = sig_env(s, "COMPRESSION");
	if (z && strcmp(z, "none"))
		runtime_log(NB_LOG_INFO, NB_LOG_INIT,
			    "otlp: compression %s not supported (no zlib in the plugin): %s sent "
			    "uncompressed",
			    z, c->name);
	c->on = true;
}

static void add_attr(const char *k, const char *v, bool override)
{
	struct otlp_resource *r = &resource_attrs;
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->attrs[i].key, k)) {
			if (override)
				snprintf(r->attrs[i].value, sizeof(r->attrs[i].value), "%s", v);
			return;
		}
	if (r->n < (int)(sizeof(r->attrs) / sizeof(r->attrs[0]))) {
		snprintf(r->attrs[r->n].key, sizeof(r->attrs[r->n].key), "%s", k);
		snprintf(r->attrs[r->n].value, sizeof(r->attrs[r->n].value), "%s", v);
		r->n++;
	}
}

static void config_resource(void)
{
	char err[300];
	memset(&resource_attrs, 0, sizeof(resource_attrs));
	const char *ra = env("OTEL_RESOURCE_ATTRIBUTES");
	if (ra && otlp_parse_resource(ra, &resource_attrs, err, sizeof(err)))
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "otlp: OTEL_RESOURCE_ATTRIBUTES ignored: %s", err);
	const char *sn = env("OTEL_SERVICE_NAME");
	if (sn) {
		add_attr("service.name", sn, true);
	} else {
		char comm[64] = "ncclbpf", def[80];
		FILE *f = fopen("/proc/self/comm", "r");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		snprintf(def, sizeof(def), "unknown_service:%s", comm);
		add_attr("service.name", def, false);
	}
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	add_attr("host.name", host, false);
	char pid[24];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	add_attr("process.pid", pid, false);
	add_attr("telemetry.sdk.name", "ncclbpf", false);
}

static void read_config(void)
{
	if (atomic_load_explicit(&cfg_state, memory_order_acquire))
		return;
	pthread_mutex_lock(&cfg_lock);
	if (atomic_load(&cfg_state)) {
		pthread_mutex_unlock(&cfg_lock);
		return;
	}
	static bool cv_ready; /* timed waits on the monotonic clock */
	if (!cv_ready) {
		pthread_condattr_t a;
		pthread_condattr_init(&a);
		pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
		pthread_cond_init(&life_cv, &a);
		pthread_condattr_destroy(&a);
		cv_ready = true;
	}
	bool t = false, m = false;
	const char *v = env("NCCLBPF_OTLP");
	if (v) {
		char buf[128];
		snprintf(buf, sizeof(buf), "%s", v);
		for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			if (!strcmp(tok, "traces"))
				t = true;
			else if (!strcmp(tok, "metrics"))
				m = true;
			else if (!strcmp(tok, "on") || !strcmp(tok, "all") || !strcmp(tok, "1"))
				t = m = true;
			else if (strcmp(tok, "off") && strcmp(tok, "0"))
				runtime_log(NB_LOG_WARN, NB_LOG_INIT,
					    "NCCLBPF_OTLP=%s: '%s' not understood (off, traces, "
					    "metrics, on): ignored",
					    v, tok);
		}
	}
	const char *dis = env("OTEL_SDK_DISABLED");
	if ((t || m) && dis && !strcmp(dis, "true")) {
		runtime_log(NB_LOG_INFO, NB_LOG_INIT, "otlp: export off (OTEL_SDK_DISABLED=true)");
		t = m = false;
	}
	config_signal(SIG_TRACES, t);
	config_signal(SIG_METRICS, m);
	if (sig[SIG_TRACES].on || sig[SIG_METRICS].on) {
		bsp_delay_ms = env_num("OTEL_BSP_SCHEDULE_DELAY", 5000, 1, 3600000);
		uint64_t q = env_num("OTEL_BSP_MAX_QUEUE_SIZE", 2048, 16, 1u << 20);
		queue_cap = 16;
		while (queue_cap < q)
			queue_cap <<= 1;
		batch_max = (uint32_t)env_num("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, 1, 1u << 20);
		if (batch_max > queue_cap)
			batch_max = queue_cap;
		metric_interval_ms = env_num("OTEL_METRIC_EXPORT_INTERVAL", 60000, 100, 86400000);
		config_resource();
		process_start_unix = ns_of(CLOCK_REALTIME);
	}
	if (sig[SIG_TRACES].on) {
		struct slot *r = calloc(queue_cap, sizeof(*r));
		if (!r) {
			runtime_log(NB_LOG_WARN, NB_LOG_INIT, "otlp: traces export off: out of memory");
			sig[SIG_TRACES].on = false;
		} else {
			for (uint32_t i = 0; i < queue_cap; i++)
				atomic_store_explicit(&r[i].seq, i, memory_order_relaxed);
			ring_mask = queue_cap - 1;
			atomic_store(&ring_head, 0);
			ring_tail = 0;
			atomic_store_explicit(&ring, r, memory_order_release);
		}
	}
	for (int s = 0; s < 2; s++)
		if (sig[s].on)
			runtime_log(NB_LOG_INFO, NB_LOG_INIT,
				    "otlp: %s to %s (%s, timeout %d ms%s)", sig[s].name,
				    sig[s].endpoint, sig[s].proto ? "http/protobuf" : "http/json",
				    sig[s].timeout_ms, sig[s].headers[0] ? ", with headers" : "");
	atomic_store_explicit(&cfg_state, 1, memory_order_release);
	pthread_mutex_unlock(&cfg_lock);
}

bool otlp_traces_enabled(void)
{
	read_config();
	return sig[SIG_TRACES].on;
}

bool otlp_metrics_enabled(void)
{
	read_config();
	return sig[SIG_METRICS].on;
}

/* ---- NCCL's side ---- */
void otlp_span_submit(const struct ncclbpf_profiler_ctx *pc, unsigned src, uint32_t policy)
{
	struct slot *r = atomic_load_explicit(&ring, memory_order_acquire);
	if (!r || !(pc->flags & NCCLBPF_PROF_F_GPU_TIMED) || !pc->gpu_start_ns)
		return;
	uint64_t pos = atomic_load_explicit(&ring_head, memory_order_relaxed);
	struct slot *s;
	for (;;) {
		s = &r[pos & ring_mask];
		uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
		int64_t dif = (int64_t)(seq - pos);
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&ring_head, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if (dif < 0) {
			atomic_fetch_add_explicit(&c_drop_full, 1, memory_order_relaxed);
			return;
		} else {
			pos = atomic_load_explicit(&ring_head, memory_order_relaxed);
		}
	}
	struct otlp_span_rec *o = &s->r;
	o->comm_id = pc->comm_id;
	o->seq = pc->seq;
	o->n_bytes = pc->n_bytes;
	o->user_tag = pc->user_tag;
	o->start_ns = pc->gpu_start_ns;
	o->end_ns = pc->gpu_end_ns > pc->gpu_start_ns ? pc->gpu_end_ns : pc->gpu_start_ns + pc->gpu_ns;
	o->host_ns = pc->host_ns;
	o->gpu_ns = pc->gpu_ns;
	o->coll = pc->coll_type;
	o->n_channels = pc->n_channels;
	o->rank = pc->rank;
	o->n_ranks = pc->n_ranks;
	o->n_nodes = pc->n_nodes;
	o->policy = policy;
	o->algo = pc->algo;
	o->proto = pc->proto;
	o->src = (uint8_t)src;
	o->flags = (uint8_t)pc->flags;
	atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
	atomic_fetch_add_explicit(&c_queued, 1, memory_order_relaxed);
}

/* ---- the exporter thread ---- */
static size_t ring_pop(struct otlp_span_rec *out, size_t max)
{
	struct slot *r = atomic_load_explicit(&ring, memory_order_acquire);
	size_t k = 0;
	while (r && k < max) {
		struct slot *s = &r[ring_tail & ring_mask];
		if (atomic_load_explicit(&s->seq, memory_order_acquire) != ring_tail + 1)
			break;
		out[k++] = s->r;
		atomic_store_explicit(&s->seq, ring_tail + ring_mask + 1, memory_order_release);
		ring_tail++;
	}
	return k;
}

static size_t ring_waiting(void)
{
	return (size_t)(atomic_load_explicit(&ring_head, memory_order_relaxed) - ring_tail);
}

static const char *comm_name_of(uint64_t comm_id)
{
	/* called by the encoder on this thread, with life_lock held by the caller */
	for (int i = 0; i < NAMES; i++)
		if (names[i].comm_id == comm_id)
			return names[i].name;
	return "";
}

enum outcome { SENT, RETRY, FAILED };

static void note_state(int s, bool ok, const char *err)
{
	if (ok && failing[s]) {
		failing[s] = false;
		runtime_log(NB_LOG_INFO, NB_LOG_INIT, "otlp: %s export to %s works again",
			    sig[s].name, sig[s].endpoint);
	} else if (!ok && !failing[s]) {
		failing[s] = true;
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "otlp: %s export to %s failing: %s (retried with backoff; what cannot "
			    "be sent is dropped and counted: ncclbpf ctl status, section otlp)",
			    sig[s].name, sig[s].endpoint, err);
	}
	if (!ok) {
		pthread_mutex_lock(&life_lock);
		snprintf(last_error, sizeof(last_error), "%s: %s", sig[s].name, err);
		pthread_mutex_unlock(&life_lock);
	}
}

/* One POST; *retry_after_ms: the server's Retry-After (0 none); *rejected: partial success. */
static enum outcome post(int s, const char *body, size_t len, uint64_t *retry_after_ms,
			 uint64_t *rejected)
{
	const struct signal_cfg *c = &sig[s];
	static char resp[4096];
	struct otlp_resp r;
	char err[400];
	*retry_after_ms = 0;
	*rejected = 0;
	atomic_fetch_add_explicit(&c_requests, 1, memory_order_relaxed);
	int rc = otlp_http_post(&c->url, c->proto ? "application/x-protobuf" : "application/json",
				c->headers, body, len, c->timeout_ms, &x_abort, &r, resp, sizeof(resp),
				err, sizeof(err));
	if (rc) {
		note_state(s, false, err);
		return rc == -ECANCELED ? FAILED : RETRY;
	}
	if (r.status >= 200 && r.status < 300) {
		char msg[200];
		if (!r.body_truncated &&
		    otlp_partial_success(resp, r.body_len, c->proto, rejected, msg, sizeof(msg)) == 0 &&
		    *rejected)
			runtime_log(NB_LOG_INFO, NB_LOG_INIT,
				    "otlp: the collector rejected %" PRIu64 " %s: %s", *rejected,
				    s == SIG_TRACES ? "spans" : "data points", msg);
		note_state(s, true, "");
		return SENT;
	}
	if (snprintf(err, sizeof(err), "HTTP %d from %s", r.status, c->endpoint) >= (int)sizeof(err))
		memcpy(err + sizeof(err) - 4, "...", 4); /* a long endpoint: the status comes first */
	note_state(s, false, err);
	if (r.status == 408 || r.status == 429 || r.status == 502 || r.status == 503 ||
	    r.status == 504) {
		if (r.retry_after_s >= 0)
			*retry_after_ms = (uint64_t)(r.retry_after_s > 60 ? 60 : r.retry_after_s) * 1000;
		return RETRY;
	}
	return FAILED;
}

static uint64_t backoff_ms(int attempts, uint64_t retry_after_ms)
{
	if (retry_after_ms)
		return retry_after_ms < 1000 ? 1000 : retry_after_ms;
	uint64_t d = 1000ull << (attempts > 5 ? 5 : attempts - 1);
	if (d > 32000)
		d = 32000;
	/* jitter 0.5x .. 1.5x, so that the ranks of a job do not retry in step */
	static uint64_t lcg = 88172645463325252ull;
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	return d / 2 + (lcg >> 33) % d;
}

static struct {
	struct otlp_span_rec *recs;
	size_t n;
	char *body;
	size_t len;
	int attempts;
	uint64_t retry_at;
} pend;
static uint64_t last_span_export;

static void drop_pending(void)
{
	atomic_fetch_add_explicit(&c_drop_failed, pend.n, memory_order_relaxed);
	atomic_fetch_add_explicit(&c_batches_failed, 1, memory_order_relaxed);
	free(pend.body);
	pend.body = NULL;
	pend.n = 0;
}

/* Sends the pending batch once; final: no retry after this attempt. */
static void send_pending(bool final)
{
	uint64_t ra, rejected;
	if (pend.attempts++)
		atomic_fetch_add_explicit(&c_retries, 1, memory_order_relaxed);
	enum outcome o = post(SIG_TRACES, pend.body, pend.len, &ra, &rejected);
	if (o == SENT) {
		uint64_t ok = rejected < pend.n ? pend.n - rejected : 0;
		atomic_fetch_add_explicit(&c_exported, ok, memory_order_relaxed);
		atomic_fetch_add_explicit(&c_rejected, pend.n - ok, memory_order_relaxed);
		atomic_fetch_add_explicit(&c_batches_ok, 1, memory_order_relaxed);
		free(pend.body);
		pend.body = NULL;
		pend.n = 0;
		return;
	}
	if (o == FAILED || final || pend.attempts >= MAX_ATTEMPTS) {
		drop_pending();
		return;
	}
	pend.retry_at = mono_ms() + backoff_ms(pend.attempts, ra);
}

static void do_spans(bool flush)
{
	if (!sig[SIG_TRACES].on)
		return;
	if (!pend.recs) {
		pend.recs = malloc((size_t)batch_max * sizeof(*pend.recs));
		if (!pend.recs)
			return;
	}
	uint64_t now = mono_ms();
	if (pend.n) {
		if (!flush && now < pend.retry_at)
			return;
		send_pending(flush);
		if (pend.n)
			return;
	}
	for (;;) {
		size_t avail = ring_waiting();
		if (!avail)
			return;
		if (!flush && avail < batch_max && now - last_span_export < bsp_delay_ms)
			return;
		pend.n = ring_pop(pend.recs, batch_max);
		if (!pend.n)
			return;
		last_span_export = now;
		struct otlp_enc e;
		otlp_enc_init(&e, sig[SIG_TRACES].proto ? OTLP_FMT_PROTO : OTLP_FMT_JSON, PAYLOAD_LIMIT);
		int64_t off = (int64_t)(ns_of(CLOCK_REALTIME) - ns_of(CLOCK_MONOTONIC));
		pthread_mutex_lock(&life_lock); /* the names table */
		otlp_model_traces(&e, &resource_attrs, pend.recs, pend.n, off, comm_name_of);
		pthread_mutex_unlock(&life_lock);
		int rc = otlp_enc_finish(&e, &pend.body, &pend.len);
		if (rc) {
			note_state(SIG_TRACES, false, "a batch could not be encoded");
			pend.body = NULL;
			drop_pending();
			continue;
		}
		pend.attempts = 0;
		send_pending(flush);
		if (pend.n)
			return; /* retried later */
		if (!flush && ring_waiting() < batch_max)
			return;
	}
}

static int encode_metrics(char **body, size_t *len)
{
	struct otlp_counters own;
	otlp_get_counters(&own);
	struct otlp_enc e;
	otlp_enc_init(&e, sig[SIG_METRICS].proto ? OTLP_FMT_PROTO : OTLP_FMT_JSON, PAYLOAD_LIMIT);
	otlp_model_metrics(&e, &resource_attrs, process_start_unix, ns_of(CLOCK_REALTIME), &own);
	return otlp_enc_finish(&e, body, len);
}

static uint64_t next_metrics;

static void do_metrics(bool flush)
{
	if (!sig[SIG_METRICS].on)
		return;
	uint64_t now = mono_ms();
	/* snapshots of finalized communicators first, oldest first */
	for (;;) {
		pthread_mutex_lock(&life_lock);
		if (!n_finals || (!flush && now < finals[0].retry_at)) {
			pthread_mutex_unlock(&life_lock);
			break;
		}
		struct payload p = finals[0];
		memmove(finals, finals + 1, (size_t)(n_finals - 1) * sizeof(finals[0]));
		n_finals--;
		pthread_mutex_unlock(&life_lock);
		uint64_t ra, rej;
		if (p.attempts++)
			atomic_fetch_add_explicit(&c_retries, 1, memory_order_relaxed);
		enum outcome o = post(SIG_METRICS, p.body, p.len, &ra, &rej);
		atomic_fetch_add_explicit(&c_points_rejected, rej, memory_order_relaxed);
		if (o == RETRY && !flush && p.attempts < MAX_ATTEMPTS) {
			p.retry_at = now + backoff_ms(p.attempts, ra);
			pthread_mutex_lock(&life_lock);
			if (n_finals < MAX_FINALS) {
				memmove(finals + 1, finals, (size_t)n_finals * sizeof(finals[0]));
				finals[0] = p;
				n_finals++;
				p.body = NULL;
			}
			pthread_mutex_unlock(&life_lock);
			if (p.body) {
				free(p.body);
				atomic_fetch_add_explicit(&c_mx_failed, 1, memory_order_relaxed);
			}
			break;
		}
		atomic_fetch_add_explicit(o == SENT ? &c_mx_ok : &c_mx_failed, 1,
					  memory_order_relaxed);
		free(p.body);
	}
	if (!flush && now < next_metrics)
		return;
	next_metrics = now + metric_interval_ms;
	char *body = NULL;
	size_t len = 0;
	if (encode_metrics(&body, &len)) {
		note_state(SIG_METRICS, false, "the metrics could not be encoded");
		atomic_fetch_add_explicit(&c_mx_failed, 1, memory_order_relaxed);
		return;
	}
	uint64_t ra, rej;
	/* cumulative: a failed export is made good by the next one */
	enum outcome o = post(SIG_METRICS, body, len, &ra, &rej);
	atomic_fetch_add_explicit(&c_points_rejected, rej, memory_order_relaxed);
	atomic_fetch_add_explicit(o == SENT ? &c_mx_ok : &c_mx_failed, 1, memory_order_relaxed);
	free(body);
}

static void *exporter_main(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	next_metrics = mono_ms() + metric_interval_ms;
	last_span_export = mono_ms();
	pthread_mutex_lock(&life_lock);
	for (;;) {
		uint64_t want = flush_req;
		bool flush = want != flush_done;
		pthread_mutex_unlock(&life_lock);
		do_spans(flush);
		do_metrics(flush);
		pthread_mutex_lock(&life_lock);
		if (flush) {
			flush_done = want;
			pthread_cond_broadcast(&life_cv);
		}
		if (x_stop && flush_req == flush_done)
			break;
		if (flush_req != flush_done)
			continue;
		/* no wake-up from NCCL's threads (that would be a syscall there): poll the ring */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&life_cv, &life_lock, &ts);
	}
	thread_state = 0;
	pthread_cond_broadcast(&life_cv);
	pthread_mutex_unlock(&life_lock);
	return NULL;
}

/* Flushes and stops the thread, waiting at most FLUSH_MAX_MS (then aborting its request
 * and leaving it to end on its own). Called with life_lock held. */
static void stop_locked(void)
{
	if (thread_state != 1)
		return;
	x_stop = true;
	flush_req++;
	pthread_cond_broadcast(&life_cv);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t deadline = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u +
			    FLUSH_MAX_MS;
	bool aborted = false;
	while (thread_state == 1) {
		uint64_t now = mono_ms();
		if (now >= deadline) {
			if (aborted)
				break; /* still in a call that ignores the abort (name lookup) */
			atomic_store(&x_abort, true);
			aborted = true;
			deadline = now + 200;
		}
		uint64_t at = (now + 50 < deadline ? now + 50 : deadline);
		ts.tv_sec = (time_t)(at / 1000);
		ts.tv_nsec = (long)(at % 1000) * 1000000;
		pthread_cond_timedwait(&life_cv, &life_lock, &ts);
	}
	struct otlp_counters c;
	otlp_get_counters(&c);
	if (c.spans_dropped_full || c.spans_dropped_failed || c.metric_exports_failed)
		runtime_log(NB_LOG_WARN, NB_LOG_INIT,
			    "otlp: %" PRIu64 " spans exported, %" PRIu64 " dropped (queue full), %" PRIu64
			    " dropped (export failed), %" PRIu64 " rejected; %" PRIu64
			    " metrics exports failed",
			    c.spans_exported, c.spans_dropped_full, c.spans_dropped_failed,
			    c.spans_rejected, c.metric_exports_failed);
}

static void at_exit(void)
{
	pthread_mutex_lock(&life_lock);
	stop_locked();
	pthread_mutex_unlock(&life_lock);
}

static void status(struct runtime_status_emit *e)
{
	struct otlp_counters c;
	otlp_get_counters(&c);
	e->str(e, "traces_endpoint", sig[SIG_TRACES].on ? sig[SIG_TRACES].endpoint : "off");
	e->str(e, "metrics_endpoint", sig[SIG_METRICS].on ? sig[SIG_METRICS].endpoint : "off");
	e->u64(e, "spans_queued", c.spans_queued);
	e->u64(e, "spans_exported", c.spans_exported);
	e->u64(e, "spans_dropped_queue_full", c.spans_dropped_full);
	e->u64(e, "spans_dropped_export_failed", c.spans_dropped_failed);
	e->u64(e, "spans_rejected", c.spans_rejected);
	e->u64(e, "metric_exports_ok", c.metric_exports_ok);
	e->u64(e, "metric_exports_failed", c.metric_exports_failed);
	e->u64(e, "points_rejected", c.points_rejected);
	e->u64(e, "requests", c.requests);
	e->u64(e, "retries", c.retries);
	char err[256];
	pthread_mutex_lock(&life_lock);
	snprintf(err, sizeof(err), "%s", last_error[0] ? last_error : "-");
	pthread_mutex_unlock(&life_lock);
	e->str(e, "last_error", err);
}

static void prom_extra(struct metrics_out *o)
{
	struct otlp_counters c;
	otlp_get_counters(&c);
	metrics_emit(o, "# HELP ncclbpf_otlp_spans_total Spans of the OTLP exporter, by what "
			"became of them.\n# TYPE ncclbpf_otlp_spans_total counter\n");
	static const char *const res[] = {"queued", "exported", "dropped_queue_full",
					  "dropped_export_failed", "rejected"};
	uint64_t v[] = {c.spans_queued, c.spans_exported, c.spans_dropped_full,
			c.spans_dropped_failed, c.spans_rejected};
	for (int i = 0; i < 5; i++)
		metrics_emit(o, "ncclbpf_otlp_spans_total{result=\"%s\"} %" PRIu64 "\n", res[i], v[i]);
	metrics_emit(o, "# HELP ncclbpf_otlp_metric_exports_total OTLP metrics exports, by "
			"result.\n# TYPE ncclbpf_otlp_metric_exports_total counter\n");
	metrics_emit(o, "ncclbpf_otlp_metric_exports_total{result=\"ok\"} %" PRIu64 "\n",
		     c.metric_exports_ok);
	metrics_emit(o, "ncclbpf_otlp_metric_exports_total{result=\"failed\"} %" PRIu64 "\n",
		     c.metric_exports_failed);
}

void otlp_comm_open(uint64_t comm_id, const char *comm_name)
{
	read_config();
	if (!sig[SIG_TRACES].on && !sig[SIG_METRICS].on)
		return;
	runtime_status_provider("otlp", status);
	metrics_set_extra(prom_extra);
	pthread_mutex_lock(&life_lock);
	int slot = -1;
	for (int i = 0; i < NAMES && slot < 0; i++)
		if (!names[i].open && (names[i].comm_id == comm_id || !names[i].comm_id))
			slot = i;
	for (int i = 0; i < NAMES && slot < 0; i++)
		if (!names[i].open)
			slot = i; /* a closed one: its spans are long exported */
	if (slot >= 0) {
		names[slot].comm_id = comm_id;
		names[slot].open = true;
		snprintf(names[slot].name, sizeof(names[slot].name), "%s", comm_name ? comm_name : "");
	}
	refs++;
	x_stop = false;
	atomic_store(&x_abort, false);
	if (thread_state == 0) {
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		pthread_t t;
		if (pthread_create(&t, &at, exporter_main, NULL) == 0)
			thread_state = 1;
		else
			runtime_log(NB_LOG_WARN, NB_LOG_INIT,
				    "otlp: cannot start the exporter thread: nothing is exported");
		pthread_attr_destroy(&at);
		if (!atexit_done) {
			atexit(at_exit);
			atexit_done = true;
		}
	}
	pthread_mutex_unlock(&life_lock);
}

void otlp_comm_close(uint64_t comm_id)
{
	read_config();
	if (!sig[SIG_TRACES].on && !sig[SIG_METRICS].on)
		return;
	pthread_mutex_lock(&life_lock);
	for (int i = 0; i < NAMES; i++)
		if (names[i].comm_id == comm_id && names[i].open) {
			names[i].open = false;
			break;
		}
	if (refs > 0 && --refs == 0)
		stop_locked();
	pthread_mutex_unlock(&life_lock);
}

void otlp_metrics_final(void)
{
	if (!otlp_metrics_enabled())
		return;
	char *body = NULL;
	size_t len = 0;
	if (encode_metrics(&body, &len)) {
		atomic_fetch_add_explicit(&c_mx_failed, 1, memory_order_relaxed);
		return;
	}
	pthread_mutex_lock(&life_lock);
	if (n_finals == MAX_FINALS) { /* the oldest goes: counted */
		free(finals[0].body);
		memmove(finals, finals + 1, (MAX_FINALS - 1) * sizeof(finals[0]));
		n_finals--;
		atomic_fetch_add_explicit(&c_mx_failed, 1, memory_order_relaxed);
	}
	finals[n_finals++] = (struct payload){body, len, 0, 0};
	pthread_cond_broadcast(&life_cv);
	pthread_mutex_unlock(&life_lock);
}

void otlp_get_counters(struct otlp_counters *out)
{
	out->spans_queued = atomic_load_explicit(&c_queued, memory_order_relaxed);
	out->spans_exported = atomic_load_explicit(&c_exported, memory_order_relaxed);
	out->spans_dropped_full = atomic_load_explicit(&c_drop_full, memory_order_relaxed);
	out->spans_dropped_failed = atomic_load_explicit(&c_drop_failed, memory_order_relaxed);
	out->spans_rejected = atomic_load_explicit(&c_rejected, memory_order_relaxed);
	out->metric_exports_ok = atomic_load_explicit(&c_mx_ok, memory_order_relaxed);
	out->metric_exports_failed = atomic_load_explicit(&c_mx_failed, memory_order_relaxed);
	out->points_rejected = atomic_load_explicit(&c_points_rejected, memory_order_relaxed);
	out->requests = atomic_load_explicit(&c_requests, memory_order_relaxed);
	out->retries = atomic_load_explicit(&c_retries, memory_order_relaxed);
	out->span_batches_ok = atomic_load_explicit(&c_batches_ok, memory_order_relaxed);
	out->span_batches_failed = atomic_load_explicit(&c_batches_failed, memory_order_relaxed);
}

void otlp_reset_for_tests(void)
{
	pthread_mutex_lock(&life_lock);
	stop_locked();
	refs = 0;
	for (int i = 0; i < n_finals; i++)
		free(finals[i].body);
	n_finals = 0;
	memset(names, 0, sizeof(names));
	last_error[0] = 0;
	failing[0] = failing[1] = false;
	pthread_mutex_unlock(&life_lock);
	free(pend.body);
	pend.body = NULL;
	pend.n = 0;
	pthread_mutex_lock(&cfg_lock);
	struct slot *r = atomic_exchange(&ring, NULL);
	free(r);
	atomic_store(&cfg_state, 0);
	pthread_mutex_unlock(&cfg_lock);
	_Atomic uint64_t *cs[] = {&c_queued, &c_exported, &c_drop_full, &c_drop_failed, &c_rejected,
				  &c_mx_ok, &c_mx_failed, &c_points_rejected, &c_requests,
				  &c_retries, &c_batches_ok, &c_batches_failed};
	for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
		atomic_store(cs[i], 0);
}

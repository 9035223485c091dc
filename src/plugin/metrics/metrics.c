/* Prometheus text-format export (metrics.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plugin/chain/chain.h"
#include "plugin/metrics/metrics.h"
#include "plugin/otlp/otlp.h"
#include "plugin/profiler/profiler.h"
#include "plugin/provenance.h"
#include "plugin/tuner/tuner.h"
#include "runtime/decision_src.h"
#include "runtime/runtime.h"

#define MAX_COMMS 4096
#define MAX_TUNER_COMMS 4096

static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int cfg_state; /* 0 unread, 1 enabled, 2 disabled */
static bool file_on;           /* NCCLBPF_METRICS_FILE (else OTLP metrics only) */
static char path[1024];
static unsigned interval_s = 10;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER; /* comms[], free list, writing */
static struct metrics_comm *comms[MAX_COMMS];
static size_t n_comms;
static struct metrics_comm *free_blocks[MAX_COMMS];
static size_t n_free;

struct metrics_tuner {
	uint64_t comm_id;
	_Atomic uint64_t decisions, changed;
	_Atomic uint64_t by_src[NB_DSRC_COUNT];
};
static struct metrics_tuner tuners[MAX_TUNER_COMMS];
static _Atomic uint32_t n_tuners;

static pthread_t writer;
static bool writer_running;
static bool writer_stop;
static pthread_cond_t writer_cv = PTHREAD_COND_INITIALIZER;
static _Atomic unsigned write_errors_logged;
static _Atomic uint64_t writes_ok, writes_failed;

/* seconds */
static const double bucket_le[METRICS_BUCKETS] = {
	2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
	1e-3,   2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 1e-1, 1.0};
static const uint64_t bucket_le_ns[METRICS_BUCKETS] = {
	2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000, 25000000, 50000000, 100000000, 1000000000};

/* bytes/s: a small collective runs at MB/s, NVLink at hundreds of GB/s */
static const double bw_le[METRICS_BW_BUCKETS] = {
	1e6, 1e7, 1e8, 5e8, 1e9, 2.5e9, 5e9, 1e10, 2.5e10, 5e10, 1e11, 2e11, 3e11, 4e11, 5e11, 1e12};

double metrics_bucket_le(int i)
{
	return i >= 0 && i < METRICS_BUCKETS ? bucket_le[i] : 0;
}

double metrics_bw_bucket_le(int i)
{
	return i >= 0 && i < METRICS_BW_BUCKETS ? bw_le[i] : 0;
}

static struct metrics_out_hook {
	void (*fn)(struct metrics_out *o);
} extra;

void metrics_set_extra(void (*fn)(struct metrics_out *o))
{
	pthread_mutex_lock(&cfg_lock);
	extra.fn = fn;
	pthread_mutex_unlock(&cfg_lock);
}

static void resolve_path(const char *v)
{
	struct stat st;
	size_t n = strlen(v);
	if ((n && v[n - 1] == '/') || (stat(v, &st) == 0 && S_ISDIR(st.st_mode))) {
		snprintf(path, sizeof(path), "%s%sncclbpf_%d.prom", v, n && v[n - 1] == '/' ? "" : "/",
			 (int)getpid());
		return;
	}
	const char *p = strstr(v, "%p");
	if (p)
		snprintf(path, sizeof(path), "%.*s%d%s", (int)(p - v), v, (int)getpid(), p + 2);
	else
		snprintf(path, sizeof(path), "%s", v);
}

bool metrics_enabled(void)
{
	int st = atomic_load_explicit(&cfg_state, memory_order_acquire);
	if (st)
		return st == 1;
	pthread_mutex_lock(&cfg_lock);
	st = atomic_load(&cfg_state);
	if (!st) {
		const char *v = getenv("NCCLBPF_METRICS_FILE");
		st = otlp_metrics_enabled() ? 1 : 2;
		file_on = false;
		if (v && *v && strlen(v) < 900) {
			resolve_path(v);
			st = 1;
			file_on = true;
			const char *iv = getenv("NCCLBPF_METRICS_INTERVAL");
			interval_s = 10;
			if (iv && *iv) {
				char *end = NULL;
				unsigned long x = strtoul(iv, &end, 10);
				if (end && !*end && x <= 86400)
					interval_s = (unsigned)x;
				else
					runtime_log(NB_LOG_WARN, NB_LOG_INIT,
						    "NCCLBPF_METRICS_INTERVAL=%s not understood "
						    "(seconds, 0..86400): using 10",
						    iv);
			}
			runtime_log(NB_LOG_INFO, NB_LOG_INIT,
				    "metrics: Prometheus text to %s every %u s and at finalize", path,
				    interval_s);
		} else if (v && *v) {
			runtime_log(NB_LOG_WARN, NB_LOG_INIT, "NCCLBPF_METRICS_FILE too long: ignored");
		}
		atomic_store_explicit(&cfg_state, st, memory_order_release);
	}
	pthread_mutex_unlock(&cfg_lock);
	return st == 1;
}

bool metrics_file_enabled(void)
{
	return metrics_enabled() && file_on;
}

const char *metrics_path(void)
{
	return metrics_file_enabled() ? path : "";
}

/* ---- rendering ---- */
struct metrics_out {
	char *buf;
	size_t len, cap;
	bool overflow;
};
#define out metrics_out

static void vemit(struct out *o, const char *fmt, va_list ap)
{
	if (o->overflow)
		return;
	int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	if (n < 0 || (size_t)n >= o->cap - o->len) {
		o->overflow = true;
		return;
	}
	o->len += (size_t)n;
}

void metrics_emit(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vemit(o, fmt, ap);
	va_end(ap);
}
#define emit metrics_emit

/* Label value: backslash, double quote and newline escaped (text format 0.0.4). */
static void escape(char *dst, size_t cap, const char *s)
{
	size_t j = 0;
	for (; s && *s && j + 3 < cap; s++) {
		if (*s == '\\' || *s == '"') {
			dst[j++] = '\\';
			dst[j++] = *s;
		} else if (*s == '\n') {
			dst[j++] = '\\';
			dst[j++] = 'n';
		} else {
			dst[j++] = *s;
		}
	}
	dst[j] = 0;
}

const char *metrics_coll_name(unsigned c)
{
	static const char *const n[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
					"AllReduce"};
	return c < 5 ? n[c] : "unknown";
}
const char *metrics_algo_name(int a)
{
	static const char *const n[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain",
					"NVLS", "NVLSTree", "PAT"};
	if (a == NCCLBPF_ALGO_SYMMETRIC)
		return "Symmetric";
	return a >= 0 && a < 7 ? n[a] : "unknown";
}
const char *metrics_proto_name(int p)
{
	static const char *const n[] = {"LL", "LL128", "Simple"};
	return p >= 0 && p < 3 ? n[p] : "none";
}
#define coll_name metrics_coll_name
#define algo_name metrics_algo_name
#define proto_name metrics_proto_name

/* key: 1 << 31 | policy << 21 | src << 18 | coll << 15 | band << 8 | algo index << 4 |
 * proto index (policy ids are < NB_POLICY_IDS = 2^10) */
_Static_assert(NB_POLICY_IDS <= 1024 && NB_DSRC_COUNT <= 8, "series key fields");
static uint32_t series_key(uint32_t coll, uint32_t band, int algo, int proto, unsigned src,
			   uint32_t policy)
{
	uint32_t ai = algo == NCCLBPF_ALGO_SYMMETRIC ? 8u : algo >= 0 && algo < 7 ? (uint32_t)algo + 1 : 0;
	uint32_t pi = proto >= 0 && proto < 3 ? (uint32_t)proto + 1 : 0;
	return 1u << 31 | (policy & 0x3ffu) << 21 | (src & 7u) << 18 | (coll & 7u) << 15 |
	       (band & 0x7fu) << 8 | ai << 4 | pi;
}
static void key_parts(uint32_t k, unsigned *coll, unsigned *band, int *algo, int *proto,
		      unsigned *src, uint32_t *policy)
{
	*policy = (k >> 21) & 0x3ffu;
	*src = (k >> 18) & 7u;
	*coll = (k >> 15) & 7u;
	*band = (k >> 8) & 0x7fu;
	unsigned ai = (k >> 4) & 0xfu, pi = k & 0xfu;
	*algo = ai == 8 ? NCCLBPF_ALGO_SYMMETRIC : (int)ai - 1;
	*proto = (int)pi - 1;
}

/* size band label: the band's lower bound, 2^band bytes */
void metrics_band_label(char *dst, size_t cap, unsigned band)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	unsigned u = band / 10;
	if (u > 4)
		u = 4;
	snprintf(dst, cap, "%llu%s", 1ull << (band - u * 10), unit[u]);
}
#define band_label metrics_band_label

struct labels {
	char comm[24], name[140], rank[16];
};
static void comm_labels(const struct metrics_comm *m, struct labels *l)
{
	snprintf(l->comm, sizeof(l->comm), "0x%" PRIx64, m->comm_id);
	escape(l->name, sizeof(l->name), m->comm_name);
	snprintf(l->rank, sizeof(l->rank), "%d", m->rank);
}

static double bus_factor(unsigned coll, int n_ranks)
{
	double n = n_ranks > 0 ? n_ranks : 1;
	switch (coll) {
	case NCCLBPF_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
	case NCCLBPF_COLL_ALLGATHER:
	case NCCLBPF_COLL_REDUCESCATTER: return (n - 1) / n;
	default: return 1.0;
	}
}

#define SERIES_LABELS                                                                        \
	"comm=\"%s\",comm_name=\"%s\",rank=\"%s\",coll=\"%s\",size_band=\"%s\",algo=\"%s\","   \
	"proto=\"%s\",source=\"%s\",policy=\"%s\""

static void render_series_family(struct out *o, int which)
{
	for (size_t i = 0; i < n_comms; i++) {
		struct metrics_comm *m = comms[i];
		struct labels l;
		comm_labels(m, &l);
		for (int s = 0; s < METRICS_SERIES; s++) {
			struct metrics_series *se = &m->series[s];
			uint32_t k = atomic_load_explicit(&se->key, memory_order_acquire);
			if (!k)
				continue;
			unsigned coll, band, src;
			int algo, proto;
			uint32_t policy;
			key_parts(k, &coll, &band, &algo, &proto, &src, &policy);
			char bl[32], pn[160], pe[200];
			band_label(bl, sizeof(bl), band);
			escape(pe, sizeof(pe), nb_policy_name(policy, pn, sizeof(pn)));
			uint64_t timed = atomic_load_explicit(&se->timed, memory_order_relaxed);
			uint64_t sum = atomic_load_explicit(&se->sum_ns, memory_order_relaxed);
#define LV                                                                                    \
	l.comm, l.name, l.rank, coll_name(coll), bl, algo_name(algo), proto_name(proto),          \
		nb_dsrc_name(src), pe
			if (which == 0) {
				emit(o, "ncclbpf_collectives_total{" SERIES_LABELS "} %" PRIu64 "\n", LV,
				     atomic_load_explicit(&se->count, memory_order_relaxed));
			} else if (which == 1) {
				uint64_t cum = 0;
				for (int b = 0; b < METRICS_BUCKETS; b++) {
					cum += atomic_load_explicit(&se->bucket[b], memory_order_relaxed);
					emit(o, "ncclbpf_collective_latency_seconds_bucket{" SERIES_LABELS
						",le=\"%g\"} %" PRIu64 "\n",
					     LV, bucket_le[b], cum);
				}
				/* +Inf = count: buckets read before it, so a concurrent update can
				 * only make count >= every bucket, as the format requires */
				if (timed < cum)
					timed = cum;
				emit(o, "ncclbpf_collective_latency_seconds_bucket{" SERIES_LABELS
					",le=\"+Inf\"} %" PRIu64 "\n",
				     LV, timed);
				emit(o, "ncclbpf_collective_latency_seconds_sum{" SERIES_LABELS "} %.9f\n", LV,
				     (double)sum * 1e-9);
				emit(o, "ncclbpf_collective_latency_seconds_count{" SERIES_LABELS "} %" PRIu64
					"\n",
				     LV, timed);
			} else if (which == 2 && sum > 0) {
				double bytes = (double)atomic_load_explicit(&se->bus_bytes,
									    memory_order_relaxed);
				emit(o, "ncclbpf_collective_bus_bandwidth_bytes_per_second{" SERIES_LABELS
					"} %.6g\n",
				     LV, bytes / ((double)sum * 1e-9));
			} else if (which == 3) {
				/* the busbw of each timed collective; _sum / _count is their mean */
				uint64_t cum = 0;
				for (int b = 0; b < METRICS_BW_BUCKETS; b++) {
					cum += atomic_load_explicit(&se->bw_bucket[b],
								    memory_order_relaxed);
					emit(o, "ncclbpf_collective_busbw_bytes_per_second_bucket{"
						SERIES_LABELS ",le=\"%g\"} %" PRIu64 "\n",
					     LV, bw_le[b], cum);
				}
				uint64_t bw_count =
					atomic_load_explicit(&se->bw_count, memory_order_relaxed);
				if (bw_count < cum)
					bw_count = cum;
				emit(o, "ncclbpf_collective_busbw_bytes_per_second_bucket{" SERIES_LABELS
					",le=\"+Inf\"} %" PRIu64 "\n",
				     LV, bw_count);
				emit(o, "ncclbpf_collective_busbw_bytes_per_second_sum{" SERIES_LABELS
					"} %.6g\n",
				     LV, 1e3 * (double)atomic_load_explicit(&se->bw_sum_kbps,
									    memory_order_relaxed));
				emit(o, "ncclbpf_collective_busbw_bytes_per_second_count{" SERIES_LABELS
					"} %" PRIu64 "\n",
				     LV, bw_count);
			}
#undef LV
		}
	}
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	emit(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Called with reg_lock held. */
/* Tagged collectives (profiler v7 userTag): count, and the latency of the timed ones. */
static void render_tags(struct out *o)
{
	family(o, "ncclbpf_tagged_collectives_total", "counter",
	       "Collectives completed per application tag (ncclCollConfig_t.userProfilerTag, "
	       "NCCL 2.31+; the first 16 tags of a communicator, then tag=\"other\").");
	for (int which = 0; which < 2; which++) {
		if (which == 1)
			family(o, "ncclbpf_tagged_collective_latency_seconds", "summary",
			       "Latency of the timed collectives per application tag (sum and "
			       "count; as ncclbpf_collective_latency_seconds).");
		for (size_t i = 0; i < n_comms; i++) {
			struct metrics_comm *m = comms[i];
			struct labels l;
			comm_labels(m, &l);
			for (int k = 0; k <= METRICS_TAGS; k++) {
				struct metrics_tag *t = &m->tags[k];
				uint64_t tag = atomic_load_explicit(&t->tag, memory_order_acquire);
				uint64_t count = atomic_load_explicit(&t->count, memory_order_relaxed);
				if ((k < METRICS_TAGS && !tag) || !count)
					continue;
				char tl[24];
				if (k < METRICS_TAGS)
					snprintf(tl, sizeof(tl), "%" PRIu64, tag);
				else
					snprintf(tl, sizeof(tl), "other");
#define TAG_LABELS "comm=\"%s\",comm_name=\"%s\",rank=\"%s\",tag=\"%s\""
				if (which == 0) {
					emit(o, "ncclbpf_tagged_collectives_total{" TAG_LABELS "} %" PRIu64
						"\n", l.comm, l.name, l.rank, tl, count);
					continue;
				}
				uint64_t timed = atomic_load_explicit(&t->timed, memory_order_acquire);
				uint64_t sum = atomic_load_explicit(&t->sum_ns, memory_order_relaxed);
				emit(o, "ncclbpf_tagged_collective_latency_seconds_sum{" TAG_LABELS
					"} %.9g\n", l.comm, l.name, l.rank, tl, (double)sum / 1e9);
				emit(o, "ncclbpf_tagged_collective_latency_seconds_count{" TAG_LABELS
					"} %" PRIu64 "\n", l.comm, l.name, l.rank, tl, timed);
#undef TAG_LABELS
			}
		}
	}
}

static void render_locked(struct out *o)
{
	family(o, "ncclbpf_collectives_total", "counter",
	       "Collectives completed, per communicator, collective, size band (lower bound) and "
	       "the algorithm/protocol NCCL ran.");
	render_series_family(o, 0);
	family(o, "ncclbpf_collective_latency_seconds", "histogram",
	       "Collective latency: GPU execution time of KernelCh-instrumented (sampled) "
	       "collectives, or enqueue-to-completion where no KernelCh is requested.");
	render_series_family(o, 1);
	family(o, "ncclbpf_collective_bus_bandwidth_bytes_per_second", "gauge",
	       "Average bus bandwidth of the timed collectives (nccl-tests busbw convention).");
	render_series_family(o, 2);
	family(o, "ncclbpf_collective_busbw_bytes_per_second", "histogram",
	       "Bus bandwidth of each timed collective (nccl-tests busbw convention); _sum / "
	       "_count is the mean per collective.");
	render_series_family(o, 3);
	render_tags(o);

	family(o, "ncclbpf_tuner_decisions_total", "counter",
	       "Tuner calls (getCollInfo) per communicator.");
	uint32_t nt = atomic_load(&n_tuners);
	if (nt > MAX_TUNER_COMMS)
		nt = MAX_TUNER_COMMS;
	for (uint32_t i = 0; i < nt; i++)
		emit(o, "ncclbpf_tuner_decisions_total{comm=\"0x%" PRIx64 "\"} %" PRIu64 "\n",
		     tuners[i].comm_id, atomic_load_explicit(&tuners[i].decisions, memory_order_relaxed));
	family(o, "ncclbpf_tuner_decisions_changed_total", "counter",
	       "Tuner calls where a policy changed NCCL's algorithm, protocol or channels.");
	for (uint32_t i = 0; i < nt; i++)
		emit(o, "ncclbpf_tuner_decisions_changed_total{comm=\"0x%" PRIx64 "\"} %" PRIu64 "\n",
		     tuners[i].comm_id, atomic_load_explicit(&tuners[i].changed, memory_order_relaxed));
	family(o, "ncclbpf_tuner_decisions_by_source_total", "counter",
	       "Tuner calls per communicator by who decided: nccl, policy, pinned, env, call, "
	       "fallback, inner (docs/observability.md).");
	for (uint32_t i = 0; i < nt; i++)
		for (int src = 1; src < NB_DSRC_COUNT; src++)
			emit(o, "ncclbpf_tuner_decisions_by_source_total{comm=\"0x%" PRIx64
				"\",source=\"%s\"} %" PRIu64 "\n",
			     tuners[i].comm_id, nb_dsrc_name((unsigned)src),
			     atomic_load_explicit(&tuners[i].by_src[src], memory_order_relaxed));
	struct prov_counters pv;
	prov_get_counters(&pv);
	family(o, "ncclbpf_decision_provenance_misses_total", "counter",
	       "Completed collectives of a communicator with a tuner whose decision record was "
	       "not found (their source is \"unknown\").");
	emit(o, "ncclbpf_decision_provenance_misses_total %" PRIu64 "\n", pv.misses);

	struct profiler_counters pc;
	profiler_get_counters(&pc);
	family(o, "ncclbpf_policy_faults_total", "counter",
	       "Policy programs that faulted at run time (their writes discarded).");
	emit(o, "ncclbpf_policy_faults_total{hook=\"tuner\"} %" PRIu64 "\n",
	     tuner_issue_count(TUNER_ISSUE_FAULT));
	emit(o, "ncclbpf_policy_faults_total{hook=\"profiler\"} %" PRIu64 "\n", pc.program_faults);
	family(o, "ncclbpf_tuner_requests_ignored_total", "counter",
	       "Policy decisions NCCL's table could not honour (kept NCCL's choice), by reason.");
	static const struct {
		enum tuner_issue i;
		const char *reason;
	} ign[] = {{TUNER_ISSUE_BAD_ALGO, "bad_algo"},
		   {TUNER_ISSUE_BAD_PROTO, "bad_proto"},
		   {TUNER_ISSUE_UNAVAILABLE, "unavailable"},
		   {TUNER_ISSUE_NO_PROTO_FOR_ALGO, "no_proto_for_algo"},
		   {TUNER_ISSUE_NO_ALGO_FOR_PROTO, "no_algo_for_proto"},
		   {TUNER_ISSUE_BAD_CHANNELS, "bad_channels"},
		   {TUNER_ISSUE_BAD_CHUNK, "bad_chunk"},
		   {TUNER_ISSUE_CHANNELS_COLLNET, "channels_collnet"},
		   {TUNER_ISSUE_CHANNELS_UNCLAMPED, "channels_unclamped_path"},
		   {TUNER_ISSUE_NO_COMPCAP_ROW, "no_compcap_row"}};
	for (size_t i = 0; i < sizeof(ign) / sizeof(ign[0]); i++)
		emit(o, "ncclbpf_tuner_requests_ignored_total{reason=\"%s\"} %" PRIu64 "\n",
		     ign[i].reason, tuner_issue_count(ign[i].i));
	family(o, "ncclbpf_profiler_events_dropped_total", "counter",
	       "Profiler events not recorded, by reason.");
	emit(o, "ncclbpf_profiler_events_dropped_total{reason=\"pool_exhausted\"} %" PRIu64 "\n",
	     pc.dropped_pool);
	emit(o, "ncclbpf_profiler_events_dropped_total{reason=\"stale_handle\"} %" PRIu64 "\n",
	     pc.stale_handles);
	emit(o, "ncclbpf_profiler_events_dropped_total{reason=\"null_handle\"} %" PRIu64 "\n",
	     pc.null_handles);
	uint64_t overflow = 0;
	for (size_t i = 0; i < n_comms; i++)
		overflow += atomic_load(&comms[i]->overflow);
	emit(o, "ncclbpf_profiler_events_dropped_total{reason=\"metrics_series_full\"} %" PRIu64
		"\n",
	     overflow);
	struct chain_counters cc;
	chain_get_counters(&cc);
	family(o, "ncclbpf_inner_plugin_errors_total", "counter",
	       "Errors of chained native plugins (NCCLBPF_TUNER_INNER / NCCLBPF_PROFILER_INNER).");
	emit(o, "ncclbpf_inner_plugin_errors_total{plugin=\"tuner\",kind=\"call\"} %" PRIu64 "\n",
	     cc.tuner_errors);
	emit(o, "ncclbpf_inner_plugin_errors_total{plugin=\"tuner\",kind=\"init\"} %" PRIu64 "\n",
	     cc.tuner_init_failures);
	emit(o, "ncclbpf_inner_plugin_errors_total{plugin=\"profiler\",kind=\"call\"} %" PRIu64 "\n",
	     cc.profiler_errors);
	emit(o, "ncclbpf_inner_plugin_errors_total{plugin=\"profiler\",kind=\"init\"} %" PRIu64 "\n",
	     cc.profiler_init_failures);
	if (extra.fn)
		extra.fn(o);
	family(o, "ncclbpf_metrics_writes_total", "counter", "Metrics file writes, by result.");
	emit(o, "ncclbpf_metrics_writes_total{result=\"ok\"} %" PRIu64 "\n", atomic_load(&writes_ok));
	emit(o, "ncclbpf_metrics_writes_total{result=\"error\"} %" PRIu64 "\n",
	     atomic_load(&writes_failed));
}

int metrics_render(char *buf, size_t len)
{
	struct out o = {buf, 0, len, false};
	if (!len)
		return -ENOSPC;
	buf[0] = 0;
	pthread_mutex_lock(&reg_lock);
	render_locked(&o);
	pthread_mutex_unlock(&reg_lock);
	return o.overflow ? -ENOSPC : (int)o.len;
}

static int write_file(const char *text, size_t len, char *err, size_t errlen)
{
	char tmp[1100];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(e));
		return -e;
	}
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;
			close(fd);
			unlink(tmp);
			snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(e));
			return -e;
		}
		off += (size_t)w;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		snprintf(err, errlen, "cannot replace %s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

int metrics_write_now(char *err, size_t errlen)
{
	if (!metrics_file_enabled()) {
		snprintf(err, errlen, "NCCLBPF_METRICS_FILE not set");
		return -ENOENT;
	}
	size_t cap = 1 << 16;
	for (;;) {
		char *buf = malloc(cap);
		if (!buf) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		pthread_mutex_lock(&reg_lock);
		struct out o = {buf, 0, cap, false};
		render_locked(&o);
		int rc = 0;
		if (!o.overflow) {
			/* the counter of this very write is in the text: count it as ok first */
			rc = write_file(buf, o.len, err, errlen);
			atomic_fetch_add(rc ? &writes_failed : &writes_ok, 1);
		}
		pthread_mutex_unlock(&reg_lock);
		free(buf);
		if (!o.overflow) {
			if (rc && !(atomic_fetch_or(&write_errors_logged, 1u) & 1u))
				runtime_log(NB_LOG_WARN, NB_LOG_INIT,
					    "metrics: %s (logged once; retried every interval)", err);
			return rc;
		}
		if (cap >= (64u << 20)) {
			snprintf(err, errlen, "metrics text larger than 64 MiB");
			return -ENOSPC;
		}
		cap *= 4;
	}
}

static void *writer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cfg_lock);
	while (!writer_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += interval_s;
		int rc = 0;
		while (!writer_stop && rc != ETIMEDOUT)
			rc = pthread_cond_timedwait(&writer_cv, &cfg_lock, &ts);
		if (writer_stop)
			break;
		pthread_mutex_unlock(&cfg_lock);
		char err[256];
		metrics_write_now(err, sizeof(err));
		pthread_mutex_lock(&cfg_lock);
	}
	pthread_mutex_unlock(&cfg_lock);
	return NULL;
}

static void start_writer(void)
{
	pthread_mutex_lock(&cfg_lock);
	if (!writer_running && file_on && interval_s > 0) {
		writer_stop = false;
		if (pthread_create(&writer, NULL, writer_main, NULL) == 0)
			writer_running = true;
		else
			runtime_log(NB_LOG_WARN, NB_LOG_INIT,
				    "metrics: no writer thread: the file is written at finalize only");
	}
	pthread_mutex_unlock(&cfg_lock);
}

struct metrics_comm *metrics_comm_open(uint64_t comm_id, const char *comm_name, int rank,
				       int n_ranks)
{
	if (!metrics_enabled())
		return NULL;
	pthread_mutex_lock(&reg_lock);
	struct metrics_comm *m = NULL;
	if (n_comms < MAX_COMMS) {
		m = n_free ? free_blocks[--n_free] : malloc(sizeof(*m));
		if (m) {
			memset(m, 0, sizeof(*m));
			m->comm_id = comm_id;
			snprintf(m->comm_name, sizeof(m->comm_name), "%s", comm_name ? comm_name : "");
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			m->start_unix_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
			m->rank = rank;
			m->n_ranks = n_ranks;
			atomic_store(&m->live, true);
			comms[n_comms++] = m;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	if (m)
		start_writer();
	return m;
}

void metrics_comm_close(struct metrics_comm *m)
{
	if (!m)
		return;
	char err[256];
	if (file_on)
		metrics_write_now(err, sizeof(err)); /* the communicator's final numbers */
	otlp_metrics_final(); /* and to the collector: its series go now */
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < n_comms; i++) {
		if (comms[i] != m)
			continue;
		comms[i] = comms[--n_comms];
		atomic_store(&m->live, false);
		/* kept for reuse, never freed: a late completion may still touch it */
		if (n_free < MAX_COMMS)
			free_blocks[n_free++] = m;
		break;
	}
	pthread_mutex_unlock(&reg_lock);
}

static struct metrics_series *series_of(struct metrics_comm *m, uint32_t key)
{
	uint32_t h = (key * 0x9e3779b1u) >> 24;
	for (int i = 0; i < METRICS_SERIES; i++) {
		struct metrics_series *s = &m->series[(h + (uint32_t)i) % METRICS_SERIES];
		uint32_t k = atomic_load_explicit(&s->key, memory_order_acquire);
		if (k == key)
			return s;
		if (k == 0) {
			uint32_t zero = 0;
			if (atomic_compare_exchange_strong(&s->key, &zero, key) || zero == key)
				return s;
		}
	}
	return NULL;
}

/* The series of a non-zero tag: its slot, or "other" once METRICS_TAGS are taken. */
static struct metrics_tag *tag_of(struct metrics_comm *m, uint64_t tag)
{
	for (int i = 0; i < METRICS_TAGS; i++) {
		struct metrics_tag *t = &m->tags[i];
		uint64_t k = atomic_load_explicit(&t->tag, memory_order_acquire);
		if (k == tag)
			return t;
		if (k == 0) {
			uint64_t zero = 0;
			if (atomic_compare_exchange_strong(&t->tag, &zero, tag) || zero == tag)
				return t;
		}
	}
	return &m->tags[METRICS_TAGS];
}

static void observe_tag(struct metrics_comm *m, uint64_t tag, bool timed, uint64_t latency_ns)
{
	struct metrics_tag *t = tag_of(m, tag);
	atomic_fetch_add_explicit(&t->count, 1, memory_order_relaxed);
	if (!timed)
		return;
	atomic_fetch_add_explicit(&t->sum_ns, latency_ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->timed, 1, memory_order_release);
}

void metrics_observe(struct metrics_comm *m, const struct ncclbpf_profiler_ctx *pc, bool timed,
		     uint64_t latency_ns, unsigned src, uint32_t policy)
{
	if (!m || pc->coll_type >= NCCLBPF_NUM_COLLS)
		return;
	if (pc->user_tag)
		observe_tag(m, pc->user_tag, timed, latency_ns);
	struct metrics_series *s = series_of(
		m, series_key(pc->coll_type, pc->size_bucket, pc->algo, pc->proto, src, policy));
	if (!s) {
		atomic_fetch_add_explicit(&m->overflow, 1, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
	if (!timed)
		return;
	int b = 0;
	while (b < METRICS_BUCKETS && latency_ns > bucket_le_ns[b])
		b++;
	/* buckets first, count last: a reader that sees count sees every bucket it covers */
	if (b < METRICS_BUCKETS)
		atomic_fetch_add_explicit(&s->bucket[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->sum_ns, latency_ns, memory_order_relaxed);
	uint64_t bus = (uint64_t)((double)pc->n_bytes * bus_factor(pc->coll_type, m->n_ranks));
	atomic_fetch_add_explicit(&s->bus_bytes, bus, memory_order_relaxed);
	/* a zero latency (no timestamps) has no bandwidth: the highest bucket would lie */
	if (latency_ns) {
		double bw = (double)bus * 1e9 / (double)latency_ns;
		int w = 0;
		while (w < METRICS_BW_BUCKETS && bw > bw_le[w])
			w++;
		if (w < METRICS_BW_BUCKETS)
			atomic_fetch_add_explicit(&s->bw_bucket[w], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->bw_sum_kbps, (uint64_t)(bw * 1e-3 + 0.5),
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&s->bw_count, 1, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&s->timed, 1, memory_order_release);
}

struct metrics_tuner *metrics_tuner_open(uint64_t comm_id)
{
	if (!metrics_enabled())
		return NULL;
	uint32_t i = atomic_fetch_add(&n_tuners, 1);
	if (i >= MAX_TUNER_COMMS)
		return NULL;
	tuners[i].comm_id = comm_id;
	start_writer();
	return &tuners[i];
}

void metrics_tuner_note(struct metrics_tuner *t, bool changed, unsigned src)
{
	if (!t)
		return;
	atomic_fetch_add_explicit(&t->decisions, 1, memory_order_relaxed);
	if (changed)
		atomic_fetch_add_explicit(&t->changed, 1, memory_order_relaxed);
	if (src < NB_DSRC_COUNT)
		atomic_fetch_add_explicit(&t->by_src[src], 1, memory_order_relaxed);
}

void metrics_foreach_point(void (*fn)(const struct metrics_point *p, void *arg), void *arg)
{
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < n_comms; i++) {
		struct metrics_comm *m = comms[i];
		for (int s = 0; s < METRICS_SERIES; s++) {
			struct metrics_series *se = &m->series[s];
			uint32_t k = atomic_load_explicit(&se->key, memory_order_acquire);
			if (!k)
				continue;
			struct metrics_point p;
			memset(&p, 0, sizeof(p));
			p.comm_id = m->comm_id;
			p.comm_name = m->comm_name;
			p.rank = m->rank;
			p.n_ranks = m->n_ranks;
			p.start_unix_ns = m->start_unix_ns;
			key_parts(k, &p.coll, &p.band, &p.algo, &p.proto, &p.src, &p.policy);
			/* buckets before the count, as the writer adds them in the other order:
			 * the count covers every bucket read */
			uint64_t cum = 0, bw_cum = 0;
			for (int b = 0; b < METRICS_BUCKETS; b++)
				cum += p.bucket[b] = atomic_load_explicit(&se->bucket[b],
									  memory_order_relaxed);
			for (int b = 0; b < METRICS_BW_BUCKETS; b++)
				bw_cum += p.bw_bucket[b] = atomic_load_explicit(
					&se->bw_bucket[b], memory_order_relaxed);
			p.bw_sum = 1e3 * (double)atomic_load_explicit(&se->bw_sum_kbps,
								      memory_order_relaxed);
			p.sum_ns = atomic_load_explicit(&se->sum_ns, memory_order_relaxed);
			p.bus_bytes = atomic_load_explicit(&se->bus_bytes, memory_order_relaxed);
			p.timed = atomic_load_explicit(&se->timed, memory_order_acquire);
			p.count = atomic_load_explicit(&se->count, memory_order_relaxed);
			p.bw_count = atomic_load_explicit(&se->bw_count, memory_order_relaxed);
			if (p.timed < cum)
				p.timed = cum;
			if (p.bw_count < bw_cum)
				p.bw_count = bw_cum;
			fn(&p, arg);
		}
	}
	pthread_mutex_unlock(&reg_lock);
}

void metrics_foreach_decisions(void (*fn)(uint64_t comm_id, unsigned src, uint64_t n,
					  void *arg),
			       void *arg)
{
	uint32_t nt = atomic_load(&n_tuners);
	if (nt > MAX_TUNER_COMMS)
		nt = MAX_TUNER_COMMS;
	for (uint32_t i = 0; i < nt; i++)
		for (unsigned src = 1; src < NB_DSRC_COUNT; src++)
			fn(tuners[i].comm_id, src,
			   atomic_load_explicit(&tuners[i].by_src[src], memory_order_relaxed), arg);
}

void metrics_reset_for_tests(void)
{
	pthread_mutex_lock(&cfg_lock);
	bool running = writer_running;
	writer_stop = true;
	pthread_cond_broadcast(&writer_cv);
	pthread_mutex_unlock(&cfg_lock);
	if (running)
		pthread_join(writer, NULL);
	pthread_mutex_lock(&cfg_lock);
	writer_running = false;
	writer_stop = false;
	atomic_store(&cfg_state, 0);
	pthread_mutex_unlock(&cfg_lock);
	pthread_mutex_lock(&reg_lock);
	while (n_comms)
		free_blocks[n_free < MAX_COMMS ? n_free++ : 0] = comms[--n_comms];
	atomic_store(&n_tuners, 0);
	memset(tuners, 0, sizeof(tuners));
	atomic_store(&writes_ok, 0);
	atomic_store(&writes_failed, 0);
	atomic_store(&write_errors_logged, 0);
	pthread_mutex_unlock(&reg_lock);
}

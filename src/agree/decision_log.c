/* Decision log (NCCLBPF_DECISION_LOG=DIR): one JSON line per tuned collective, one file per
 * process, decisions-<host>-<pid>.jsonl. The tuner thread appends a fixed-size record to
 * its communicator's ring (no lock, no allocation, no I/O); the service thread formats and
 * writes them. A full ring drops the record and counts it (agree_stats.decisions_dropped)
 * and the file says so in a {"dropped":N} line, so a checker never mistakes a gap for
 * agreement. The file is created and written by runtime/logfile.c: never through a planted
 * symlink or over an existing file, never killing the process at the file size limit, and
 * records that could not be written (disk full, EFBIG, EIO) are counted in a
 * {"lost":N,"reason":"..."} line (docs/agreement.md "Decision logs"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agree/agree_internal.h"
#include "ncclbpf/policy.h"
#include "runtime/decision_src.h"
#include "runtime/runtime.h"

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static struct runtime_logfile log_file = {.fd = -1};
static bool log_on;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static int lost_marker(char *buf, size_t len, uint64_t lost, const char *reason)
{
	return snprintf(buf, len, "{\"lost\":%" PRIu64 ",\"reason\":\"%s\"}\n", lost, reason);
}

static void log_open(void)
{
	const char *dir = getenv("NCCLBPF_DECISION_LOG");
	if (!dir || !*dir)
		return;
	char host[128] = "host", base[200], err[4096 + 512];
	gethostname(host, sizeof(host) - 1);
	for (char *p = host; *p; p++)
		if (*p == '/' || *p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			*p = '_';
	snprintf(base, sizeof(base), "decisions-%s-%d", host, (int)getpid());
	int rc = runtime_logfile_create(&log_file, dir, base, ".jsonl", lost_marker, err,
					sizeof(err));
	if (rc < 0)
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_TUNING,
			    "agree: no decision log written: %s", err);
	else if (err[0])
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_TUNING, "agree: decision log: %s", err);
	log_on = rc == 0;
}

bool agree_decision_log_enabled(void)
{
	pthread_once(&log_once, log_open);
	return log_on;
}

/* this thread's group: its communicator's CollApi events (agree_log_call_tag) */
struct call_group {
	uint64_t comm_id, tag;
	uint32_t calls; /* CollApi events of comm_id in the group; UINT32_MAX - 1: several comms */
};
/* initial-exec, as all TLS of the library: no __tls_get_addr (ld.so) dependency */
static __thread struct call_group call_group __attribute__((tls_model("initial-exec")));

void agree_log_call_group(void)
{
	call_group.calls = 0;
	call_group.tag = 0;
}

void agree_log_call_tag(uint64_t comm_id, uint64_t tag)
{
	if (call_group.calls == 0)
		call_group.comm_id = comm_id;
	else if (call_group.comm_id != comm_id)
		call_group.calls = UINT32_MAX - 1; /* more than one communicator: no tag */
	call_group.tag = tag;
	if (call_group.calls < UINT32_MAX - 1)
		call_group.calls++;
}

static uint64_t call_tag_for(uint64_t comm_id)
{
	return call_group.calls == 1 && call_group.comm_id == comm_id ? call_group.tag : 0;
}

void agree_log_decision(struct agree_comm *ac, uint64_t seq, int coll, uint64_t n_bytes,
			int algo, int proto, int n_channels, unsigned src, uint32_t policy)
{
	if (!ac || !ac->log_ring)
		return;
	uint64_t head = atomic_load_explicit(&ac->log_head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&ac->log_tail, memory_order_acquire);
	if (head - tail >= ac->log_cap) {
		AGREE_STAT(decisions_dropped, 1);
		return;
	}
	struct agree_decision *d = &ac->log_ring[head & (ac->log_cap - 1)];
	d->seq = seq;
	d->n_bytes = n_bytes;
	d->coll = coll;
	d->algo = algo;
	d->proto = proto;
	d->channels = n_channels;
	d->src = src;
	d->policy = policy;
	d->tag = call_tag_for(ac->comm_id);
	atomic_store_explicit(&ac->log_head, head + 1, memory_order_release);
	/* the service thread drains on every pass (<= 100 ms apart); wake it early once, when
	 * the ring crosses half full, not on every append after that (one syscall each) */
	if (head - tail == ac->log_cap / 2)
		agree_service_wake();
}

static const char *coll_name(int c)
{
	static const char *n[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
	return c >= 0 && c < NCCLBPF_NUM_COLLS ? n[c] : "?";
}

static void put_name(char *buf, size_t len, int v, const char *const *names, int count)
{
	if (v < 0 || v >= count)
		snprintf(buf, len, "null");
	else
		snprintf(buf, len, "\"%s\"", names[v]);
}

/* A JSON string into buf (labels are file names: quote, backslash and control bytes
 * escaped); returns the length written, or len when it did not fit. */
static size_t json_str(char *buf, size_t len, const char *s)
{
	size_t o = 0;
	if (o + 1 >= len)
		return len;
	buf[o++] = '"';
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		int n;
		if (ch == '"' || ch == '\\')
			n = snprintf(buf + o, len - o, "\\%c", ch);
		else if (ch < 0x20)
			n = snprintf(buf + o, len - o, "\\u%04x", ch);
		else
			n = snprintf(buf + o, len - o, "%c", ch);
		if (n < 0 || (size_t)n >= len - o)
			return len;
		o += (size_t)n;
	}
	if (o + 1 >= len)
		return len;
	buf[o++] = '"';
	buf[o] = 0;
	return o;
}

static void drain_comm(struct agree_comm *ac)
{
	static const char *algos[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS",
				      "NVLSTree", "PAT"};
	static const char *protos[] = {"LL", "LL128", "Simple"};
	uint64_t tail = atomic_load_explicit(&ac->log_tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&ac->log_head, memory_order_acquire);
	int rank = atomic_load(&ac->rank);
	for (; tail < head; tail++) {
		const struct agree_decision *d = &ac->log_ring[tail & (ac->log_cap - 1)];
		char a[32], p[32], pol[160], line[1536];
		put_name(a, sizeof(a), d->algo, algos, 7);
		put_name(p, sizeof(p), d->proto, protos, 3);
		nb_policy_name(d->policy, pol, sizeof(pol));
		int n = snprintf(line, sizeof(line),
			"{\"comm\":\"0x%" PRIx64 "\",\"rank\":%d,\"seq\":%" PRIu64 ",\"coll\":\"%s\","
			"\"bytes\":%" PRIu64 ",\"algo\":%s,\"proto\":%s,\"channels\":%d,"
			"\"src\":\"%s\"",
			ac->comm_id, rank, d->seq, coll_name(d->coll), d->n_bytes, a, p, d->channels,
			nb_dsrc_name(d->src));
		size_t o = n > 0 && (size_t)n < sizeof(line) ? (size_t)n : sizeof(line);
		if (pol[0] && o < sizeof(line)) {
			n = snprintf(line + o, sizeof(line) - o, ",\"policy\":");
			o = n > 0 && (size_t)n < sizeof(line) - o ? o + (size_t)n : sizeof(line);
			if (o < sizeof(line))
				o += json_str(line + o, sizeof(line) - o, pol);
		}
		if (d->tag && o < sizeof(line)) {
			n = snprintf(line + o, sizeof(line) - o, ",\"tag\":%" PRIu64, d->tag);
			o = n > 0 && (size_t)n < sizeof(line) - o ? o + (size_t)n : sizeof(line);
		}
		if (o + 2 < sizeof(line)) {
			memcpy(line + o, "}\n", 3);
			runtime_logfile_append(&log_file, line, o + 2);
		}
		AGREE_STAT(decisions_logged, 1);
	}
	atomic_store_explicit(&ac->log_tail, tail, memory_order_release);
}

void agree_decision_log_drain(bool final)
{
	if (!log_on)
		return;
	/* the registry's lock first: the service thread already holds it when it drains for a
	 * closing communicator (step_comms), and a tuner close drains on NCCL's thread; the
	 * other order deadlocked the two (test_agree_close_race) */
	agree_registry_lock();
	pthread_mutex_lock(&log_lock);
	for (size_t i = 0; i < AGREE_MAX_COMMS; i++) {
		struct agree_comm *ac = agree_registry_at(i);
		if (ac && ac->log_ring)
			drain_comm(ac);
	}
	agree_registry_unlock();
	static uint64_t dropped_reported;
	struct agree_stats st;
	agree_get_stats(&st);
	if (st.decisions_dropped != dropped_reported) {
		char line[64];
		int n = snprintf(line, sizeof(line), "{\"dropped\":%" PRIu64 "}\n",
				 st.decisions_dropped - dropped_reported);
		runtime_logfile_append(&log_file, line, (size_t)n);
		dropped_reported = st.decisions_dropped;
	}
	/* one write per service pass (the ring buffers in between); final: the last marker */
	runtime_logfile_flush(&log_file, final);
	pthread_mutex_unlock(&log_lock);
}

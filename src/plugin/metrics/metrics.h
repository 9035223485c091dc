/* Prometheus metrics export (issue 15).
 *   NCCLBPF_METRICS_FILE      path of the text-format file; "%p" is replaced by the process
 *                             id; a directory (or a path ending in '/') gets
 *                             ncclbpf_<pid>.prom in it (one file per rank process, as the
 *                             node-exporter textfile collector expects *.prom files)
 *   NCCLBPF_METRICS_INTERVAL  seconds between writes (default 10; 0 = only at finalize)
 * The file is written atomically (temp file in the same directory + rename) by a background
 * thread every interval and synchronously when a communicator is finalized. Families and
 * labels: docs/observability.md. Collection costs a few relaxed atomic adds per completed
 * collective on the thread that completes it; nothing is formatted on NCCL's threads except
 * at finalize. */
#ifndef NCCLBPF_PLUGIN_METRICS_H
#define NCCLBPF_PLUGIN_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ncclbpf/policy.h"

#define METRICS_BUCKETS 16    /* latency histogram upper bounds, seconds (see metrics.c) */
#define METRICS_BW_BUCKETS 16 /* bus bandwidth histogram upper bounds, bytes/s */

/* One (coll, size band, algo, proto, decision source, policy) of one communicator. */
struct metrics_series {
	_Atomic uint32_t key; /* packed, 0 = empty slot */
	_Atomic uint64_t count;        /* completed collectives */
	_Atomic uint64_t timed;        /* of them with a latency (GPU-timed or host-only mode) */
	_Atomic uint64_t sum_ns;       /* latency sum of the timed ones */
	_Atomic uint64_t bus_bytes;    /* bus bytes of the timed ones (busbw numerator) */
	_Atomic uint64_t bucket[METRICS_BUCKETS];       /* non-cumulative counts */
	_Atomic uint64_t bw_bucket[METRICS_BW_BUCKETS]; /* non-cumulative, busbw per collective */
	_Atomic uint64_t bw_sum_kbps;  /* sum of the busbw of the timed ones, 1000 bytes/s units */
	_Atomic uint64_t bw_count;     /* timed ones with a non-zero latency (busbw known) */
};
#define METRICS_SERIES 256
#define METRICS_TAGS 16

struct metrics_comm {
	uint64_t comm_id;
	char comm_name[64];
	int rank, n_ranks;
	uint64_t start_unix_ns; /* when the communicator's series started (OTLP start time) */
	_Atomic bool live;
	_Atomic uint64_t overflow; /* completions that found no free series slot */
	struct metrics_series series[METRICS_SERIES];
	/* the application's per-call tags (profiler v7 userTag): the first METRICS_TAGS
	 * distinct ones of the communicator get their own series, the rest count as "other" */
	struct metrics_tag {
		_Atomic uint64_t tag; /* 0 = free slot */
		_Atomic uint64_t count, timed, sum_ns;
	} tags[METRICS_TAGS + 1]; /* [METRICS_TAGS]: "other" */
};

/* Whether metrics are collected: NCCLBPF_METRICS_FILE is set, or OTLP metrics export is on
 * (read once). */
bool metrics_enabled(void);
/* Whether the Prometheus file is written (NCCLBPF_METRICS_FILE). */
bool metrics_file_enabled(void);
/* Profiler context lifecycle: a per-communicator block (NULL when disabled or out of memory)
 * and its release at finalize, which also writes the file. */
struct metrics_comm *metrics_comm_open(uint64_t comm_id, const char *comm_name, int rank,
				       int n_ranks);
void metrics_comm_close(struct metrics_comm *m);
/* One completed collective; timed: latency_ns is a real latency. src/policy: who decided
 * it (runtime/decision_src.h). */
void metrics_observe(struct metrics_comm *m, const struct ncclbpf_profiler_ctx *pc, bool timed,
		     uint64_t latency_ns, unsigned src, uint32_t policy);
/* Tuner decisions per communicator (process-wide table; a handle from open). */
struct metrics_tuner;
struct metrics_tuner *metrics_tuner_open(uint64_t comm_id);
void metrics_tuner_note(struct metrics_tuner *t, bool changed, unsigned src);

/* ---- snapshots for other exporters (OTLP), on their own thread ---- */
struct metrics_point {
	uint64_t comm_id;
	const char *comm_name;
	int rank, n_ranks;
	uint64_t start_unix_ns;
	unsigned coll, band, src;
	int algo, proto;
	uint32_t policy;
	uint64_t count, timed, sum_ns, bus_bytes;
	uint64_t bucket[METRICS_BUCKETS];       /* non-cumulative */
	uint64_t bw_bucket[METRICS_BW_BUCKETS]; /* non-cumulative */
	double bw_sum;                          /* bytes/s, sum over the timed collectives */
	uint64_t bw_count;                      /* collectives in the busbw histogram */
};
/* Calls fn for every series of every live communicator (under the registry lock: fn must
 * not call back into metrics). */
void metrics_foreach_point(void (*fn)(const struct metrics_point *p, void *arg), void *arg);
/* Tuner decisions per communicator and source. */
void metrics_foreach_decisions(void (*fn)(uint64_t comm_id, unsigned src, uint64_t n,
					  void *arg),
			       void *arg);
/* Bucket upper bounds: latency in seconds, bus bandwidth in bytes/s. */
double metrics_bw_bucket_le(int i);
/* Label values as the Prometheus file writes them. */
const char *metrics_coll_name(unsigned coll);
const char *metrics_algo_name(int algo);
const char *metrics_proto_name(int proto);
void metrics_band_label(char *dst, size_t cap, unsigned band);
/* Families another module appends to the Prometheus file (the OTLP exporter's counters):
 * fn appends whole families with emit(). One slot. */
struct metrics_out;
void metrics_emit(struct metrics_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void metrics_set_extra(void (*fn)(struct metrics_out *o));

/* Writes the file now (0 or -errno; err filled). */
int metrics_write_now(char *err, size_t errlen);
/* Renders everything into buf (tests); returns the length, or -ENOSPC. */
int metrics_render(char *buf, size_t len);
/* The resolved file path ("" when disabled). */
const char *metrics_path(void);
/* Tests: re-read the environment, stop the writer thread. */
void metrics_reset_for_tests(void);
/* Histogram upper bounds in seconds (tests). */
double metrics_bucket_le(int i);

#endif

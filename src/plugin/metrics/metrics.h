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

#define METRICS_BUCKETS 16 /* latency histogram upper bounds, seconds (see metrics.c) */

struct metrics_series {   /* one (coll, size band, algo, proto) of one communicator */
	_Atomic uint32_t key; /* packed, 0 = empty slot */
	_Atomic uint64_t count;        /* completed collectives */
	_Atomic uint64_t timed;        /* of them with a latency (GPU-timed or host-only mode) */
	_Atomic uint64_t sum_ns;       /* latency sum of the timed ones */
	_Atomic uint64_t bus_bytes;    /* bus bytes of the timed ones (busbw numerator) */
	_Atomic uint64_t bucket[METRICS_BUCKETS]; /* non-cumulative counts */
};
#define METRICS_SERIES 256

struct metrics_comm {
	uint64_t comm_id;
	char comm_name[64];
	int rank, n_ranks;
	_Atomic bool live;
	_Atomic uint64_t overflow; /* completions that found no free series slot */
	struct metrics_series series[METRICS_SERIES];
};

/* Whether NCCLBPF_METRICS_FILE is set (read once). */
bool metrics_enabled(void);
/* Profiler context lifecycle: a per-communicator block (NULL when disabled or out of memory)
 * and its release at finalize, which also writes the file. */
struct metrics_comm *metrics_comm_open(uint64_t comm_id, const char *comm_name, int rank,
				       int n_ranks);
void metrics_comm_close(struct metrics_comm *m);
/* One completed collective; timed: latency_ns is a real latency. */
void metrics_observe(struct metrics_comm *m, const struct ncclbpf_profiler_ctx *pc, bool timed,
		     uint64_t latency_ns);
/* Tuner decisions per communicator (process-wide table; a handle from open). */
struct metrics_tuner;
struct metrics_tuner *metrics_tuner_open(uint64_t comm_id);
void metrics_tuner_note(struct metrics_tuner *t, bool changed);

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

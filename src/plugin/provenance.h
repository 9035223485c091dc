/* Decision provenance from the tuner to the profiler (issue 27). The tuner records, per
 * communicator and collective, who decided (runtime/decision_src.h); the profiler finds the
 * record when the collective completes and hands the source to the metrics, the timeline
 * and the OTLP exporter. The join key is (commHash, collective type, NCCL's per-type
 * sequence number): the tuner counts its calls per type (tuner_core.c tuner_next_seq), NCCL
 * numbers the profiler's Coll events per type, one call per collective on both sides; the
 * byte count is checked too, so a path that breaks that rule (a collective that skipped the
 * tuner) shows as "unknown" and is counted (prov_misses), never as another collective's
 * source.
 *
 * One block per commHash (ranks of one communicator driven by one process share it: their
 * decisions are identical by construction). A block is a ring of PROV_SLOTS records per
 * collective type, written by getCollInfo and read at completion, lock-free both ways
 * (a sequence-checked pair of words); a record the ring has overwritten before its
 * collective completed (more than PROV_SLOTS collectives of one type in flight) is a miss.
 * Blocks are never freed (a late completion may still read one); closed ones are reused. */
#ifndef NCCLBPF_PLUGIN_PROVENANCE_H
#define NCCLBPF_PLUGIN_PROVENANCE_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/decision_src.h"

#define PROV_SLOTS 1024 /* per collective type; power of two */

struct prov_comm;

/* Tuner init: the block for comm_id (NULL for comm_id 0 or when out of blocks/memory). */
struct prov_comm *prov_comm_open(uint64_t comm_id);
void prov_comm_close(struct prov_comm *p);
/* getCollInfo: the decision for collective (coll, seq) of n_bytes. No lock, no allocation,
 * no syscall. */
void prov_record(struct prov_comm *p, unsigned coll, uint64_t seq, uint64_t n_bytes,
		 unsigned src, uint32_t policy);
/* Completion: the record of (comm_id, coll, seq, n_bytes). false (and *src = unknown,
 * *policy = 0) when there is none; a communicator that has a block but no matching record
 * is counted as a miss. */
bool prov_lookup(uint64_t comm_id, unsigned coll, uint64_t seq, uint64_t n_bytes,
		 unsigned *src, uint32_t *policy);

struct prov_counters {
	uint64_t found;  /* completions that found their decision */
	uint64_t misses; /* completions of a communicator with a tuner that found none */
};
void prov_get_counters(struct prov_counters *out);
/* Tests: forget every block. */
void prov_reset_for_tests(void);

#endif

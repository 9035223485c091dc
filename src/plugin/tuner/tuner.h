/* tuner: the NCCL tuner shim. One struct tuner_comm per communicator (created by the
 * version-specific init in tuner_v3.c..tuner_v6.c), the decision path (tuner_core.c) and
 * the translation of a policy's decision into NCCL's cost table (tuner_translate.c).
 *
 * Translation rules (architecture.md "Tuner decisions", ref/nccl-plugin-abi.md §2.3-2.4):
 *  - NCCL picks the strictly smallest entry >= 0, scanning algo 0..6 then proto 0..2, so
 *    ties go to the lowest index. Entries NCCL set to -1 (or any negative / NaN) are never
 *    raised.
 *  - algo and proto both set: if the entry is available (>= 0) it is set to 0.0; every
 *    entry with a LOWER index that is also exactly 0 is nudged to FLT_MIN (still available,
 *    just no longer tied), so the chosen entry wins NCCL's scan. Nothing else changes.
 *  - only algo set: the cheapest available protocol of that algorithm is chosen, as above.
 *  - only proto set: the cheapest available algorithm with that protocol is chosen.
 *  - a request NCCL marked unavailable, or out of range, leaves the whole decision
 *    (algorithm, protocol and channels) to NCCL; it is counted and logged once per kind.
 *  - n_channels: 0 = keep; otherwise clamped to 1..64, the same bound on every rank. (Not to
 *    the channel count the profiler learned: that is learned per rank, at different times,
 *    and ranks running different channel counts deadlock.) Never applied when NCCL will run
 *    CollNet (Direct/Chain), which uses the value as its channel count without clamping it.
 *    Negative values are invalid.
 */
#ifndef NCCLBPF_PLUGIN_TUNER_H
#define NCCLBPF_PLUGIN_TUNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ncclbpf/policy.h"
#include "plugin/tuner/nccl_tuner_abi.h"
#include "runtime/control.h"

enum tuner_issue {
	TUNER_ISSUE_FAULT = 0,          /* a program faulted at run time: its writes discarded */
	TUNER_ISSUE_BAD_ALGO,           /* algo outside KEEP..NUM_ALGOS-1 */
	TUNER_ISSUE_BAD_PROTO,          /* proto outside KEEP..NUM_PROTOS-1 */
	TUNER_ISSUE_UNAVAILABLE,        /* algo/proto pair NCCL marked unavailable (-1) */
	TUNER_ISSUE_NO_PROTO_FOR_ALGO,  /* only algo set, and no protocol of it is available */
	TUNER_ISSUE_NO_ALGO_FOR_PROTO,  /* only proto set, and no algorithm with it is available */
	TUNER_ISSUE_BAD_CHANNELS,       /* n_channels < 0 */
	TUNER_ISSUE_CHANNELS_CLAMPED,   /* n_channels > 64 */
	TUNER_ISSUE_BAD_CHUNK,          /* chunk size below the protocol grain (kept NCCL's) */
	TUNER_ISSUE_CHANNELS_COLLNET,   /* n_channels not applied: NCCL will run CollNet */
	TUNER_ISSUE_COUNT
};

const char *tuner_issue_name(enum tuner_issue issue);

/* What the translation did. */
struct tuner_applied {
	int algo;       /* entry lowered to 0, or -1 when NCCL's choice was kept */
	int proto;
	int n_channels; /* value written to *nChannels, or 0 when kept */
	unsigned issues; /* bit (1u << enum tuner_issue) */
};

/* Fills the inputs of a tuner context from NCCL's arguments (outputs set to KEEP).
 * table is float[num_algo][num_proto]; entries beyond 7x3 are ignored, missing ones -1. */
void tuner_ctx_fill(struct ncclbpf_tuner_ctx *ctx, const float *table, int num_algo,
		    int num_proto);

/* Applies a decision (algo, proto, n_channels as a policy wrote them) to NCCL's table and
 * channel count following the rules above. Never raises a negative entry. */
void tuner_translate(float *table, int num_algo, int num_proto, int algo, int proto,
		     int n_channels, int *nccl_n_channels, struct tuner_applied *out);

/* NCCL's selection rule (topoGetAlgoInfo): strictly smallest entry >= 0, lowest index on
 * ties. Returns 0 and the pair, or -1 if nothing is available. */
int tuner_nccl_select(const float *table, int num_algo, int num_proto, int *algo, int *proto);

/* ---- per-communicator shim state (tuner_core.c) ---- */
struct agree_comm;
struct tuner_comm {
	uint64_t comm_id;  /* NCCL commHash (v5/v6), 0 for v3/v4 */
	uint32_t n_ranks;
	uint32_t n_nodes;
	uint32_t abi_version;
	/* getCollInfo is serialized per comm by NCCL: plain counters are enough */
	uint64_t seq[NCCLBPF_NUM_COLLS];
	/* calls (the per-communicator collective seq that reload activation uses), calls where
	 * a policy changed the table or the channels, faults, clamps: read by `ncclbpf ctl
	 * status` on the control thread, hence relaxed atomics (single writer: no lock prefix) */
	struct runtime_comm_stats stats;
	/* reload activation across ranks (tuner_reload.c) */
	int reload_slot;
	bool reload_staged;
	uint64_t reload_staged_version;
	uint64_t reload_stage_seq;
	uint64_t comm_seq; /* collectives on this comm, all types (ctx->comm_seq) */
	struct agree_comm *agree; /* agreement state (src/agree), NULL without comm_id */
};

/* Reload activation across ranks through the agreement layer (tuner_reload.c,
 * NCCLBPF_RELOAD_AGREE=1). gate: the chain to run for collective seq when c is gated (call
 * after agree_tuner_begin: it reads the agreed view at seq). */
void tuner_reload_comm_open(struct tuner_comm *tc);
void tuner_reload_comm_close(struct tuner_comm *tc);
struct nb_hook_chain;
const struct nb_hook_chain *tuner_reload_gate(struct tuner_comm *tc,
					      const struct nb_hook_chain *c, uint64_t seq);

/* Called by every version's init. Never fails NCCL: on error *out is NULL and the comm
 * runs pass-through. */
void tuner_comm_open(unsigned abi_version, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
		     nb_nccl_logger_t log, void **out);
int tuner_comm_close(void *ctx);
/* Always returns NB_NCCL_SUCCESS. */
int tuner_get_coll_info(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
			float **cost_table, int num_algo, int num_proto, int reg_buff,
			int *n_channels);
int tuner_get_chunk_size(void *ctx, int coll_type, size_t n_bytes, int algo, int proto,
			 int n_channels, size_t *chunk_size);

/* Process-wide count of each issue since load (relaxed). */
uint64_t tuner_issue_count(enum tuner_issue issue);

#endif

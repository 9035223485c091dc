/* tuner: the NCCL tuner shim. One struct tuner_comm per communicator (created by the
 * version-specific init in tuner_v3.c..tuner_v6.c), the decision path (tuner_core.c) and
 * the translation of a policy's decision into NCCL's cost table (tuner_translate.c).
 *
 * Translation rules (architecture.md "Tuner decisions", ref/nccl-plugin-abi.md §2.3-2.4,
 * ref/nccl-2.31-and-ecosystem.md §1.4). Decided by behaviour, not by version: 2.30 and 2.31
 * both bind ncclTunerPlugin_v6.
 *  - <= 2.30 picks the strictly smallest entry >= 0, ties to the lowest index. 2.31 picks the
 *    strictly smallest *time* among the candidates it filled in (a negative written into one
 *    is a time that wins), ties to the highest index, then lets symmetric-kernel and CE
 *    candidates (not shown to the plugin) compete. Entries NCCL set to -1 (or any negative /
 *    NaN) are never raised, and no negative value is ever written: "exclude" would be a
 *    large positive cost.
 *  - algo and proto both set: if the entry is available (>= 0) it is set to 0.0; every
 *    other available entry that is also exactly 0 (any index) is nudged to FLT_MIN (still
 *    available, just no longer tied), so the chosen entry is the unique minimum under both
 *    tie rules. Nothing else changes.
 *  - pinning (tuner_pin, NCCLBPF_TUNER_SYM=pin, the default while tuner programs are
 *    attached): when the policy chain leaves algorithm and protocol to NCCL, NCCL's own
 *    general choice is made explicit the same way. On 2.31 a symmetric kernel then can never
 *    win (its time is > 0), so NCCL never calls the tuner a second time for one collective
 *    (the sym-LL fallback) and the per-communicator sequence number counts collectives on
 *    every rank alike. NCCLBPF_TUNER_SYM=compete leaves symmetric/CE kernels in the race,
 *    and then seq counts calls (see tuner_next_seq in tuner_core.c).
 *  - only algo set: the cheapest available protocol of that algorithm is chosen, as above.
 *  - only proto set: the cheapest available algorithm with that protocol is chosen.
 *  - a request NCCL marked unavailable, or out of range, leaves the whole decision
 *    (algorithm, protocol and channels) to NCCL; it is counted and logged once per kind.
 *  - n_channels: 0 = keep; otherwise clamped to 1..64, the same bound on every rank. On
 *    2.31 NCCL takes it as an upper cap of its own channel count (a larger value has no
 *    effect); on <= 2.30 as the count. (Not to
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
#include <string.h>

#include "maps/epoch_fast.h"
#include "ncclbpf/policy.h"
#include "plugin/tuner/nccl_tuner_abi.h"
#include "runtime/control.h"

struct chain_tuner;
struct metrics_tuner;
struct prov_comm;

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
	TUNER_ISSUE_BAD_CONSTANT,       /* tuner/init wrote a constant out of bounds (ignored) */
	TUNER_ISSUE_NO_COMPCAP_ROW,     /* tuner/init wrote row 4 (Rubin) under ABI v5/v6 (ignored) */
	TUNER_ISSUE_CHANNELS_UNCLAMPED, /* n_channels not applied: NCCL 2.29/2.30 may use it
					 * unclamped (AllGather: batched broadcasts) */
	TUNER_ISSUE_COUNT
};

const char *tuner_issue_name(enum tuner_issue issue);
/* The issues of a request NCCL's table did not offer (tuner_restriction_of says why). */
#define TUNER_ISSUES_UNAVAILABLE                                                          \
	((1u << TUNER_ISSUE_UNAVAILABLE) | (1u << TUNER_ISSUE_NO_PROTO_FOR_ALGO) |        \
	 (1u << TUNER_ISSUE_NO_ALGO_FOR_PROTO))

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
/* Whether the outputs are still all KEEP. algo and proto are read as one 8-byte word, the
 * way the fill writes them (tuner_ctx_fill_info): a load spanning two smaller stores cannot
 * be forwarded from the store buffer and stalls (~10 cycles on every decision that keeps
 * NCCL's choice, measured). */
_Static_assert(NCCLBPF_ALGO_KEEP == -1 && NCCLBPF_PROTO_KEEP == -1 && NCCLBPF_CHANNELS_KEEP == 0,
	       "KEEP encodings");
_Static_assert(offsetof(struct ncclbpf_tuner_ctx, proto) ==
		       offsetof(struct ncclbpf_tuner_ctx, algo) + 4,
	       "algo, proto adjacent");
static inline bool tuner_ctx_keeps(const struct ncclbpf_tuner_ctx *c)
{
	uint64_t algo_proto;
	memcpy(&algo_proto, &c->algo, sizeof(algo_proto));
	return algo_proto == ~0ull && c->n_channels == NCCLBPF_CHANNELS_KEEP;
}

/* The same, and what pinning needs from the same pass over the table: NCCL's general
 * choice (tuner_general_best) and, for an exactly 7x3 table, which entries are +-0. */
struct tuner_fill_info {
	int best;           /* table index (algo * num_proto + proto) of NCCL's choice, -1 none */
	uint32_t zero_mask; /* bit i: entry i is +0 or -0 (exact_dims only) */
	bool exact_dims;    /* num_algo == 7 && num_proto == 3 */
};
void tuner_ctx_fill_info(struct ncclbpf_tuner_ctx *ctx, const float *table, int num_algo,
			 int num_proto, struct tuner_fill_info *info);

/* Applies a decision (algo, proto, n_channels as a policy wrote them) to NCCL's table and
 * channel count following the rules above. Never raises a negative entry. */
void tuner_translate(float *table, int num_algo, int num_proto, int algo, int proto,
		     int n_channels, int *nccl_n_channels, struct tuner_applied *out);

/* NCCL's selection rule (topoGetAlgoInfo): strictly smallest entry >= 0, lowest index on
 * ties. Returns 0 and the pair, or -1 if nothing is available. */
int tuner_nccl_select(const float *table, int num_algo, int num_proto, int *algo, int *proto);
/* NCCL's own choice among the entries shown to the plugin (lowest index on exact ties). */
int tuner_general_best(const float *table, int num_algo, int num_proto, int *algo, int *proto);
/* Makes NCCL's general choice explicit (see "pinning"); false if nothing is available. */
bool tuner_pin(float *table, int num_algo, int num_proto);
/* tuner_pin with the choice tuner_ctx_fill_info found, on the table it read, unchanged
 * since (same result, bit for bit). */
bool tuner_pin_filled(float *table, int num_algo, int num_proto,
		      const struct tuner_fill_info *info);

/* ---- per-communicator shim state (tuner_core.c) ---- */
#define TUNER_BANDS 65 /* ncclbpf_size_bucket: 0..64 */
struct agree_comm;
struct tuner_comm {
	uint64_t comm_id;  /* NCCL commHash (v5/v6), 0 for v3/v4 */
	uint32_t n_ranks;
	uint32_t n_nodes;
	uint32_t ranks_per_node; /* n_ranks / n_nodes if even, else 0 (ctx->ranks_per_node) */
	uint32_t abi_version;
	uint32_t nccl_version; /* nccl_version_get() at init (ctx->nccl_version), 0 unknown */
	/* bit per collective type whose n_channels NCCL may use without clamping it to its
	 * channel count (tuner_channels_unclamped_mask): a policy's value is not applied */
	uint32_t channels_unclamped;
	/* NCCL_ALGO / NCCL_PROTO as NCCL parses them (tuner_restrict.c): allowed algorithms and
	 * protocols per collective type; env_forced when either variable restricts anything */
	uint32_t env_algos[NCCLBPF_NUM_COLLS], env_protos[NCCLBPF_NUM_COLLS];
	bool env_forced;
	/* requests kept out of NCCL's table, by enum tuner_restriction (relaxed) */
	_Atomic uint64_t restricted[3];
	/* per (collective, size band): every table cell NCCL offered so far (avail_mask bits),
	 * for tuner_call_restricted; general path only */
	uint32_t band_offered[NCCLBPF_NUM_COLLS][65];
	/* decisions take the straight path (tuner_core.c comm_go_straight: no inner plugin, no
	 * metrics, no reload agreement, a passive agreement layer, membarrier fences; `reader`
	 * registered): the one test that selects it */
	bool straight;
	/* from init (v5+), 0 = unknown */
	uint32_t n_nvl_domains, min_ranks_per_nvl_domain, max_ranks_per_nvl_domain;
	bool pin; /* NCCLBPF_TUNER_SYM=pin (default) */
	struct metrics_tuner *metrics;   /* NCCLBPF_METRICS_FILE, NULL when off */
	const struct chain_tuner *inner; /* NCCLBPF_TUNER_INNER, NULL when none */
	void *inner_ctx;
	/* getCollInfo is serialized per comm by NCCL: plain counters are enough */
	uint64_t seq[NCCLBPF_NUM_COLLS];
	/* per (collective type, size band = ncclbpf_size_bucket): ctx->band_seq; band_now is
	 * the current call's, set by tuner_next_seq for the context fill */
	uint64_t band_seq[NCCLBPF_NUM_COLLS][TUNER_BANDS];
	uint64_t band_now;
	/* calls (the per-communicator collective seq that reload activation uses), calls where
	 * a policy changed the table or the channels, faults, clamps: read by `ncclbpf ctl
	 * status` on the control thread, hence relaxed atomics (single writer: no lock prefix) */
	struct runtime_comm_stats stats;
	/* the straight path's sections (maps/epoch_fast.h): counted by stats.calls, closed by
	 * one store; registered when the communicator becomes straight */
	struct epoch_seq_reader reader;
	/* reload activation across ranks (tuner_reload.c) */
	int reload_slot;
	bool reload_staged;
	uint64_t reload_staged_version;
	uint64_t reload_stage_seq;
	uint64_t reload_staged_gen;  /* the activation generation it staged in (tuner_reload.c) */
	/* collectives on this comm, all types (ctx->comm_seq): stats.calls */
	struct agree_comm *agree; /* agreement state (src/agree), NULL without comm_id */
	/* decision provenance (runtime/decision_src.h): the ring the profiler reads (NULL when
	 * nothing consumes it: no metrics, trace or OTLP export), whether NCCL_ALGO/NCCL_PROTO
	 * restrict the table, and the last policy id interned (key: chain version << 8 |
	 * program index), so that a decision interns only after a reload */
	struct prov_comm *prov;
	bool env_restricted;
	uint64_t policy_key;
	uint32_t policy_id;
};

/* Reload activation across ranks through the agreement layer (tuner_reload.c,
 * NCCLBPF_RELOAD_AGREE=1). gate: the chain to run for collective seq when c is gated (call
 * after agree_tuner_begin: it reads the agreed view at seq). */
void tuner_reload_comm_open(struct tuner_comm *tc);
void tuner_reload_comm_close(struct tuner_comm *tc);
/* Each collective (with reload agreement on): notices a reload another rank requested. */
void tuner_reload_watch(struct tuner_comm *tc, uint64_t seq);
struct nb_hook_chain;
const struct nb_hook_chain *tuner_reload_gate(struct tuner_comm *tc,
					      const struct nb_hook_chain *c, uint64_t seq);

/* Called by every version's init. Never fails NCCL: on error *out is NULL and the comm
 * runs pass-through. */
void tuner_comm_open(unsigned abi_version, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
		     nb_nccl_logger_t log, void **out);
/* v5+: what init passes beside the shape (NULL = unknown). */
void tuner_comm_set_nvl(void *ctx, const struct nb_nccl_nvl_domain_info_v5 *nvl);
/* Every version's init, after open: NCCLBPF_TUNER_INNER's init (nvl/constants NULL on v3/v4). */
void tuner_comm_chain_init(void *ctx, size_t n_ranks, size_t n_nodes, nb_nccl_logger_t log,
			   struct nb_nccl_nvl_domain_info_v5 *nvl,
			   struct nb_nccl_tuner_constants_v5 *constants);
/* v7 (NCCL 2.32): the inner plugin binds at most v6, so it gets the 4-row view of NCCL's
 * 5-row constants (rows 0-3 of each bandwidth table), as NCCL gives a v6 plugin, and its
 * edits are copied back; row 4 stays NCCL's. */
void tuner_comm_chain_init_v7(void *ctx, size_t n_ranks, size_t n_nodes, nb_nccl_logger_t log,
			      struct nb_nccl_nvl_domain_info_v5 *nvl,
			      struct nb_nccl_tuner_constants_v7 *constants);
/* Collective types (bit per NCCLBPF_COLL_*) for which NCCL may index its channels with the
 * tuner's nChannels unclamped: AllGather on NCCL 2.29/2.30, whose broadcast batching
 * (every ncclBroadcast, AllGatherV) calls the tuner as an AllGather and uses the value as
 * its part count (src/scheduler/allgatherv_sched.cc); also when the version is unknown and
 * the ABI is v5/v6 (2.28-2.31 bind those). Not with NCCL_ALLGATHERV_ENABLE=0. 2.31+ caps the
 * value at its own channel count. Rank-invariant: the same NCCL and environment on every
 * rank. */
uint32_t tuner_channels_unclamped_mask(unsigned abi_version, uint32_t nccl_version,
				       const char *allgatherv_enable);
/* ---- who kept a policy's request out (tuner_restrict.c) ---- */
enum tuner_restriction {
	TUNER_RESTRICT_NONE = 0,
	TUNER_RESTRICT_ENV,   /* NCCL_ALGO / NCCL_PROTO exclude it: the environment wins */
	TUNER_RESTRICT_TABLE, /* NCCL left it -1: topology, or a per-call algSelection (2.31+) */
};
/* Parses NCCL_ALGO (algo) or NCCL_PROTO into the allowed set per collective type: 1 when it
 * restricts, 0 unset, -1 not understood (NCCL rejects it too; nothing assumed). */
int tuner_env_allowed(const char *value, bool algo, uint32_t out[NCCLBPF_NUM_COLLS]);
/* At init: the environment's restrictions of this communicator. */
void tuner_restrict_open(struct tuner_comm *tc);
/* Why a request for (algo, proto) of coll_type was unavailable (either may be -1). The one
 * place that decides it: decision provenance reports what this returns. */
enum tuner_restriction tuner_restriction_of(const struct tuner_comm *tc, int coll_type,
					    int algo, int proto);
const char *tuner_restriction_name(enum tuner_restriction r);
/* NCCL 2.31+: whether this call's table offers less than the same collective and size band
 * offered before on the communicator - the mark of a per-call algSelection (the tuner
 * sees no other trace of it), including an unsatisfiable one (nothing offered). A
 * heuristic for provenance (NB_DSRC_CALL), never for a decision; records what it saw. */
bool tuner_call_restricted(struct tuner_comm *tc, int coll_type, uint64_t n_bytes,
			   uint32_t avail_mask);

/* NCCLBPF_TUNER_SYM: 1 = pin (default), 0 = compete, -1 invalid. */
int tuner_sym_mode_parse(const char *s);
int tuner_comm_close(void *ctx);
/* Always returns NB_NCCL_SUCCESS. */
int tuner_get_coll_info(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
			float **cost_table, int num_algo, int num_proto, int reg_buff,
			int *n_channels);
int tuner_get_chunk_size(void *ctx, int coll_type, size_t n_bytes, int algo, int proto,
			 int n_channels, size_t *chunk_size);

/* ---- tuner/init (tuner_init_hook.c) ---- */
#define TUNER_CONSTANTS_V5_DOUBLES NB_NCCL_TUNER_CONSTANTS_V5_DOUBLES
#define TUNER_CONSTANTS_V7_DOUBLES NB_NCCL_TUNER_CONSTANTS_V7_DOUBLES
/* Runs the SEC("tuner/init") chain on NCCL's constants, an array of doubles whose bandwidth
 * tables have n_compcaps rows (4: ncclTunerConstants_v5/v6, 5: v7). Reads and writes only
 * the 144 or 159 doubles of that layout. */
void tuner_run_init_hook_layout(struct tuner_comm *tc, void *constants, unsigned n_compcaps);
/* The v5/v6 layout (4 rows). */
void tuner_run_init_hook(struct tuner_comm *tc, void *constants);
/* Conversions (exposed for tests): doubles of the n_compcaps layout -> integers (row 4 into
 * compcap4_bw_mbps, n_compcaps set), and back for changed entries within bounds; returns
 * how many changed, *rejected = how many were out of bounds; *no_row = how many writes to
 * row 4 a 4-row layout has no place for (ignored). */
int tuner_constants_to_ctx(const double *constants, unsigned n_compcaps,
			   struct ncclbpf_tuner_init_ctx *c);
unsigned tuner_constants_from_ctx(double *constants, unsigned n_compcaps,
				  const struct ncclbpf_tuner_init_ctx *orig,
				  const struct ncclbpf_tuner_init_ctx *c, unsigned *rejected,
				  unsigned *no_row);
/* Counts an issue and logs its first occurrence (tuner_core.c). */
void tuner_note_issue(enum tuner_issue issue, const char *label, const char *detail);

/* Process-wide count of each issue since load (relaxed). */
uint64_t tuner_issue_count(enum tuner_issue issue);

#endif

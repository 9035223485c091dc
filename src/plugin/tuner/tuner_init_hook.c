/* SEC("tuner/init") programs: NCCL's tuning constants (latencies in µs, bandwidths in GB/s,
 * doubles) shown to policies as integers (ns, MB/s) and written back where a program changed
 * them, within the bounds documented in policy.h. The layout of the doubles
 * (ref/nccl-2.31-and-ecosystem.md §1.3 and addendum): baseLatencies[7][3],
 * hwLatencies[3][7][3], then five bandwidth tables (llMaxBws, perChMaxRingLL128Bws,
 * perChMaxTreeLL128Bws, perChMaxTreeBws, perChMaxNVLSTreeBws) of [R compcap][3 scale], where
 * R = 4 (ncclTunerConstants_v5/v6: 144 doubles) or 5 (v7, NCCL 2.32: 159 doubles).
 *
 * The context keeps rows 0-3 of each table where a 4-row policy expects them and row 4 in
 * the appended compcap4_bw_mbps: a program written for v5/v6 addresses the same rows under
 * v7, and can never reach the fifth row by running past a table. Every access below is
 * computed from R, so a 4-row struct is never read or written beyond its 144 doubles. */
#include <stdio.h>
#include <string.h>

#include "ncclbpf/ncclbpf.h"
#include "plugin/tuner/tuner.h"
#include "runtime/runtime.h"

#define N_LAT (NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS * (1 + NCCLBPF_NUM_HW)) /* 84 */
#define N_SCALES NB_NCCL_NUM_TUNING_SCALES
#define N_BW4 (NCCLBPF_NUM_BW_TABLES * NCCLBPF_NUM_COMPCAPS * N_SCALES) /* 60 */
_Static_assert(N_LAT + N_BW4 == TUNER_CONSTANTS_V5_DOUBLES, "ncclTunerConstants_v5: 144 doubles");
_Static_assert(N_LAT + NCCLBPF_NUM_BW_TABLES * NB_NCCL_NUM_COMPCAPS_V7 * N_SCALES ==
		       TUNER_CONSTANTS_V7_DOUBLES,
	       "ncclTunerConstants_v7: 159 doubles");
_Static_assert(NCCLBPF_NUM_COMPCAPS == NB_NCCL_NUM_COMPCAPS_V5, "rows of the v5 tables");
_Static_assert(offsetof(struct ncclbpf_tuner_init_ctx, hw_latency_ns) ==
		       offsetof(struct ncclbpf_tuner_init_ctx, base_latency_ns) + 21 * 4,
	       "latencies contiguous");
_Static_assert(offsetof(struct ncclbpf_tuner_init_ctx, ll_max_bw_mbps) ==
		       offsetof(struct ncclbpf_tuner_init_ctx, base_latency_ns) + N_LAT * 4,
	       "bandwidths follow the latencies, as in NCCL's struct");
_Static_assert(offsetof(struct ncclbpf_tuner_init_ctx, n_compcaps) ==
		       offsetof(struct ncclbpf_tuner_init_ctx, base_latency_ns) + (N_LAT + N_BW4) * 4,
	       "the 4-row tables are contiguous");

static uint32_t to_u32(double v)
{
	if (!(v >= 0)) /* negative or NaN */
		return 0;
	double x = v * 1000.0 + 0.5; /* round to nearest (no libm: libc/pthread/dl only) */
	return x >= 4294967295.0 ? UINT32_MAX : (uint32_t)x;
}

/* Where constant i of the context lives: the 144 contiguous u32 of the 4-row view, then the
 * 15 of row 4 (index 144 + table * 3 + scale). */
static uint32_t *ctx_slot(struct ncclbpf_tuner_init_ctx *c, int i)
{
	return i < TUNER_CONSTANTS_V5_DOUBLES
		       ? &c->base_latency_ns[0][0] + i
		       : &c->compcap4_bw_mbps[0][0] + (i - TUNER_CONSTANTS_V5_DOUBLES);
}

/* Index into NCCL's array of doubles of context constant i, for R rows; -1 when the layout
 * has no such constant (row 4 with R = 4). */
static int nccl_index(int i, unsigned rows)
{
	if (i < N_LAT)
		return i;
	if (i < TUNER_CONSTANTS_V5_DOUBLES) {
		int k = i - N_LAT; /* table t, row r (0-3), scale s */
		int t = k / (NCCLBPF_NUM_COMPCAPS * N_SCALES);
		int rs = k % (NCCLBPF_NUM_COMPCAPS * N_SCALES);
		return N_LAT + t * (int)rows * N_SCALES + rs;
	}
	if (rows < NB_NCCL_NUM_COMPCAPS_V7)
		return -1;
	int k = i - TUNER_CONSTANTS_V5_DOUBLES; /* table t, row 4, scale s */
	int t = k / N_SCALES, sc = k % N_SCALES;
	return N_LAT + t * (int)rows * N_SCALES + NCCLBPF_COMPCAP_RUBIN * N_SCALES + sc;
}

int tuner_constants_to_ctx(const double *constants, unsigned n_compcaps,
			   struct ncclbpf_tuner_init_ctx *c)
{
	unsigned rows = n_compcaps >= NB_NCCL_NUM_COMPCAPS_V7 ? NB_NCCL_NUM_COMPCAPS_V7
							      : NB_NCCL_NUM_COMPCAPS_V5;
	c->n_compcaps = rows;
	for (int i = 0; i < TUNER_CONSTANTS_V7_DOUBLES; i++) {
		int j = nccl_index(i, rows);
		*ctx_slot(c, i) = j >= 0 ? to_u32(constants[j]) : 0;
	}
	return 0;
}

unsigned tuner_constants_from_ctx(double *constants, unsigned n_compcaps,
				  const struct ncclbpf_tuner_init_ctx *orig,
				  const struct ncclbpf_tuner_init_ctx *c, unsigned *rejected,
				  unsigned *no_row)
{
	unsigned rows = n_compcaps >= NB_NCCL_NUM_COMPCAPS_V7 ? NB_NCCL_NUM_COMPCAPS_V7
							      : NB_NCCL_NUM_COMPCAPS_V5;
	unsigned changed = 0;
	*rejected = 0;
	*no_row = 0;
	for (int i = 0; i < TUNER_CONSTANTS_V7_DOUBLES; i++) {
		uint32_t was = *ctx_slot((struct ncclbpf_tuner_init_ctx *)orig, i);
		uint32_t now = *ctx_slot((struct ncclbpf_tuner_init_ctx *)c, i);
		if (now == was)
			continue; /* untouched: NCCL's exact double stays */
		int j = nccl_index(i, rows);
		if (j < 0) {
			(*no_row)++;
			continue;
		}
		uint32_t max = i < N_LAT ? NCCLBPF_MAX_LATENCY_NS : NCCLBPF_MAX_BW_MBPS;
		if (now > max) {
			(*rejected)++;
			continue;
		}
		constants[j] = (double)now / 1000.0;
		changed++;
	}
	return changed;
}

void tuner_run_init_hook(struct tuner_comm *tc, void *constants)
{
	tuner_run_init_hook_layout(tc, constants, NB_NCCL_NUM_COMPCAPS_V5);
}

void tuner_run_init_hook_layout(struct tuner_comm *tc, void *constants, unsigned n_compcaps)
{
	if (!tc || !constants)
		return;
	/* valid until runtime_chain_exit (a hot reload frees a chain only after) */
	const struct nb_hook_chain *chain = runtime_chain_enter(NB_HOOK_TUNER_INIT);
	if (!chain || chain->len == 0) {
		runtime_chain_exit();
		return;
	}
	double *k = constants;
	struct ncclbpf_tuner_init_ctx c, orig;
	memset(&c, 0, sizeof(c));
	c.comm_id = tc->comm_id;
	c.n_ranks = tc->n_ranks;
	c.n_nodes = tc->n_nodes;
	c.n_nvl_domains = tc->n_nvl_domains;
	c.min_ranks_per_nvl_domain = tc->min_ranks_per_nvl_domain;
	c.max_ranks_per_nvl_domain = tc->max_ranks_per_nvl_domain;
	c.abi_version = tc->abi_version;
	tuner_constants_to_ctx(k, n_compcaps, &c);
	orig = c; /* what NCCL handed over: a program's change is a difference from it */
	for (size_t i = 0; i < chain->len; i++) {
		struct ncclbpf_tuner_init_ctx snap = c;
		uint64_t r0;
		char err[160];
		if (ncclbpf_program_run(chain->items[i].prog, &c, sizeof(c), &r0, err, sizeof(err)) !=
		    0) {
			c = snap; /* a faulting program's writes are discarded */
			tuner_note_issue(TUNER_ISSUE_FAULT, chain->items[i].label, err);
		}
	}
	char label[128]; /* copied: the chain may be freed once we leave it */
	snprintf(label, sizeof(label), "%s",
		 chain->len == 1 && chain->items[0].label ? chain->items[0].label : "policy chain");
	runtime_chain_exit();
	unsigned rejected, no_row;
	unsigned changed = tuner_constants_from_ctx(k, n_compcaps, &orig, &c, &rejected, &no_row);
	if (rejected)
		tuner_note_issue(TUNER_ISSUE_BAD_CONSTANT, label, NULL);
	if (no_row)
		tuner_note_issue(TUNER_ISSUE_NO_COMPCAP_ROW, label, NULL);
	runtime_log(NB_LOG_INFO, NB_LOG_INIT | NB_LOG_TUNING,
		    "tuner: comm 0x%llx: tuner/init changed %u of NCCL's tuning constants "
		    "(%u compute-capability rows)%s%s",
		    (unsigned long long)tc->comm_id, changed, c.n_compcaps,
		    rejected ? " (some values out of bounds were ignored)" : "",
		    no_row ? " (writes to row 4 ignored: NCCL's constants have 4 rows)" : "");
}

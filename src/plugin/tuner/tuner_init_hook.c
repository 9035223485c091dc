/* SEC("tuner/init") programs: NCCL's tuning constants (ncclTunerConstants_v5: 144 doubles,
 * latencies in µs, bandwidths in GB/s) shown to policies as integers (ns, MB/s) and written
 * back where a program changed them, within the bounds documented in policy.h. The layout
 * of the doubles (ref/nccl-2.31-and-ecosystem.md §1.3): baseLatencies[7][3],
 * hwLatencies[3][7][3], then five [4 compcap][3] bandwidth tables (llMaxBws,
 * perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws, perChMaxNVLSTreeBws). */
#include <stdio.h>
#include <string.h>

#include "ncclbpf/ncclbpf.h"
#include "plugin/tuner/tuner.h"
#include "runtime/runtime.h"

#define N_LAT (NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS * (1 + NCCLBPF_NUM_HW)) /* 84 */
#define N_BW (5 * NCCLBPF_NUM_COMPCAPS * 3)                                   /* 60 */
_Static_assert(N_LAT + N_BW == TUNER_CONSTANTS_V5_DOUBLES, "ncclTunerConstants_v5: 144 doubles");
_Static_assert(offsetof(struct ncclbpf_tuner_init_ctx, hw_latency_ns) ==
		       offsetof(struct ncclbpf_tuner_init_ctx, base_latency_ns) + 21 * 4,
	       "latencies contiguous");
_Static_assert(offsetof(struct ncclbpf_tuner_init_ctx, ll_max_bw_mbps) ==
		       offsetof(struct ncclbpf_tuner_init_ctx, base_latency_ns) + N_LAT * 4,
	       "bandwidths follow the latencies, as in NCCL's struct");

static uint32_t to_u32(double v)
{
	if (!(v >= 0)) /* negative or NaN */
		return 0;
	double x = v * 1000.0 + 0.5; /* round to nearest (no libm: libc/pthread/dl only) */
	return x >= 4294967295.0 ? UINT32_MAX : (uint32_t)x;
}

int tuner_constants_to_ctx(const double *constants, struct ncclbpf_tuner_init_ctx *c)
{
	uint32_t *dst = c->base_latency_ns[0]; /* 144 contiguous u32, same order as the doubles */
	for (int i = 0; i < TUNER_CONSTANTS_V5_DOUBLES; i++)
		dst[i] = to_u32(constants[i]);
	return 0;
}

unsigned tuner_constants_from_ctx(double *constants, const struct ncclbpf_tuner_init_ctx *orig,
				  const struct ncclbpf_tuner_init_ctx *c, unsigned *rejected)
{
	const uint32_t *was = orig->base_latency_ns[0], *now = c->base_latency_ns[0];
	unsigned changed = 0;
	*rejected = 0;
	for (int i = 0; i < TUNER_CONSTANTS_V5_DOUBLES; i++) {
		if (now[i] == was[i])
			continue; /* untouched: NCCL's exact double stays */
		uint32_t max = i < N_LAT ? NCCLBPF_MAX_LATENCY_NS : NCCLBPF_MAX_BW_MBPS;
		if (now[i] > max) {
			(*rejected)++;
			continue;
		}
		constants[i] = (double)now[i] / 1000.0;
		changed++;
	}
	return changed;
}

void tuner_run_init_hook(struct tuner_comm *tc, void *constants)
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
	tuner_constants_to_ctx(k, &c);
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
	tuner_constants_to_ctx(k, &orig);
	memcpy(&orig, &c, offsetof(struct ncclbpf_tuner_init_ctx, base_latency_ns));
	unsigned rejected;
	unsigned changed = tuner_constants_from_ctx(k, &orig, &c, &rejected);
	if (rejected)
		tuner_note_issue(TUNER_ISSUE_BAD_CONSTANT, label, NULL);
	runtime_log(NB_LOG_INFO, NB_LOG_INIT | NB_LOG_TUNING,
		    "tuner: comm 0x%llx: tuner/init changed %u of NCCL's tuning constants%s",
		    (unsigned long long)tc->comm_id, changed,
		    rejected ? " (some values out of bounds were ignored)" : "");
}

/* Probes for the tuner tests (issue 15): each program reports one input through n_channels,
 * the only output NCCL leaves visible without changing what runs. */
#include <ncclbpf/policy.h>

/* seq, per collective type: 1..60 */
SEC("tuner") int seq_probe(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = (__s32)(ctx->seq % 60) + 1;
	return 0;
}

/* what tuner init passed: NVLink-domain info and the communicator shape */
SEC("tuner") int nvl_probe(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 v = ctx->max_ranks_per_nvl_domain + ctx->n_nvl_domains * 4;
	if (ctx->min_ranks_per_nvl_domain != ctx->max_ranks_per_nvl_domain)
		v += 4;
	if (ctx->ranks_per_node == 8)
		v += 32;
	ctx->n_channels = (__s32)(v ? v : 63);
	return 0;
}

/* band_seq, per (collective type, size band): 1..60 */
SEC("tuner") int band_probe(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = (__s32)(ctx->band_seq % 60) + 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* tuner/init: Ring/LL base latency doubled, one tree bandwidth set, one latency out of
 * bounds (ignored by the plugin, NCCL's value kept) */
SEC("tuner/init") int init_probe(struct ncclbpf_tuner_init_ctx *ctx)
{
	ctx->base_latency_ns[NCCLBPF_ALGO_RING][NCCLBPF_PROTO_LL] *= 2;
	ctx->per_ch_max_tree_bw_mbps[0][0] = 12345;
	ctx->hw_latency_ns[0][1][2] = NCCLBPF_MAX_LATENCY_NS + 1;
	return 0;
}

/* tuner/init, issue 25: row 3 (Blackwell) of the tree table and row 4 (Rubin, tuner ABI v7
 * only) of the tree and LL tables; n_compcaps tells which layout NCCL passed */
SEC("tuner/init") int init_rows(struct ncclbpf_tuner_init_ctx *ctx)
{
	ctx->per_ch_max_tree_bw_mbps[NCCLBPF_COMPCAP_BLACKWELL][2] = 33333;
	ctx->compcap4_bw_mbps[NCCLBPF_BW_TREE][2] = ctx->n_compcaps * 11111; /* 55555 on v7 */
	ctx->compcap4_bw_mbps[NCCLBPF_BW_LL_MAX][0] = 500;
	return 0;
}

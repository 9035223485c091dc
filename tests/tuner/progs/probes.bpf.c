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

char LICENSE[] SEC("license") = "Dual BSD/GPL";

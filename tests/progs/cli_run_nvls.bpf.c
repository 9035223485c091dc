/* `ncclbpf run` test: always asks for NVLS/Simple with 4 channels. NCCL offers NVLS on one
 * NVLink node (the policy decides) but not across nodes or for Broadcast (the plugin keeps
 * NCCL's choice and `run` shows why). */
#include <ncclbpf/policy.h>

SEC("tuner")
int want_nvls(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algo = NCCLBPF_ALGO_NVLS;
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	ctx->n_channels = 4;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Activation seam test (tests/control test_activation_seam, direct variant): one program
 * per version, no maps, so that each version's chain is one JIT program that the tuner's
 * straight path calls directly (runtime_hook_direct). The decisions are reload_a/b's:
 * "a" = Ring/Simple with 7 channels, "b" = Tree/LL with 9. */
#include <ncclbpf/policy.h>

SEC("tuner")
int one_a(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algo = NCCLBPF_ALGO_RING;
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	ctx->n_channels = 7;
	return 0;
}

SEC("tuner")
int one_b(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algo = NCCLBPF_ALGO_TREE;
	ctx->proto = NCCLBPF_PROTO_LL;
	ctx->n_channels = 9;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

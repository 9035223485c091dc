/* Second of a chain: doubles the channel count a previous program chose for Ring; sees
 * KEEP (and does nothing) when it runs first. */
#include <ncclbpf/policy.h>

SEC("tuner") int compose_double(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->algo == NCCLBPF_ALGO_RING && ctx->n_channels > 0)
		ctx->n_channels = ctx->n_channels * 2;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

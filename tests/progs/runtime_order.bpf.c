/* Composition order (tests/runtime): each tuner program appends a digit to n_channels, so
 * the final value spells the order the chain ran in. Also a chunk-size program. */
#include <ncclbpf/policy.h>

SEC("tuner")
int first(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = ctx->n_channels * 10 + 1;
	return 0;
}

SEC("tuner")
int second(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = ctx->n_channels * 10 + 2;
	return 0;
}

SEC("tuner/chunk")
int chunk(struct ncclbpf_chunk_ctx *ctx)
{
	ctx->chunk_size = ctx->chunk_size * 2;
	return 0;
}

/* Rejected: the cost table is NCCL's input, not writable by a policy. */
#include <ncclbpf/policy.h>

SEC("tuner") int ctx_write_cost(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->cost[1][2] = 0.0f; // EXPECT: E-CTX-WRITE
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

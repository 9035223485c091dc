/* Rejected: writes half of the writable n_channels field. */
#include <ncclbpf/policy.h>

SEC("tuner") int ctx_partial_write(struct ncclbpf_tuner_ctx *ctx)
{
	*(volatile __u16 *)&ctx->n_channels = 4; // EXPECT: E-CTX-ACCESS
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

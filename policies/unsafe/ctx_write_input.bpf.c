/* Rejected: n_bytes is an input; only algo, proto and n_channels may be written. */
#include <ncclbpf/policy.h>

SEC("tuner") int ctx_write_input(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_bytes = 0; // EXPECT: E-CTX-WRITE
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

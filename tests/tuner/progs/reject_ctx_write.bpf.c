/* Must be rejected: writes n_bytes, a read-only input of the tuner context. */
#include <ncclbpf/policy.h>

SEC("tuner") int reject_ctx_write(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_bytes = 0;
	ctx->algo = NCCLBPF_ALGO_TREE;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: an 8-byte read spanning coll_type and n_ranks (wider than the field). */
#include <ncclbpf/policy.h>

SEC("tuner") int ctx_wide(struct ncclbpf_tuner_ctx *ctx)
{
	return *(volatile __u64 *)&ctx->coll_type > 5; // EXPECT: E-CTX-ACCESS
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

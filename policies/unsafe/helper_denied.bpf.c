/* Rejected: get_prandom_u32 exists but net programs may not call it. */
#include <ncclbpf/policy.h>

SEC("net") int helper_denied(struct ncclbpf_net_ctx *ctx)
{
	ctx->verdict = bpf_get_prandom_u32() & 1; // EXPECT: E-HELPER-DENIED
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

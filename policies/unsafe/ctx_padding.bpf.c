/* Rejected: the net context's _pad field is not part of the ABI. */
#include <ncclbpf/policy.h>

SEC("net") int ctx_padding(struct ncclbpf_net_ctx *ctx)
{
	return ctx->_pad; // EXPECT: E-CTX-ACCESS
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

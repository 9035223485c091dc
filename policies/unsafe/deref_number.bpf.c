/* Rejected: an input value is used as an address. */
#include <ncclbpf/policy.h>

SEC("tuner") int deref_number(struct ncclbpf_tuner_ctx *ctx)
{
	return *(volatile __u32 *)(long)ctx->n_bytes; // EXPECT: E-INVALID-MEM
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: a 4-byte read at offset 10, inside n_bytes but not aligned to its size. */
#include <ncclbpf/policy.h>

SEC("tuner") int ctx_misaligned(struct ncclbpf_tuner_ctx *ctx)
{
	return *(volatile __u32 *)((char *)ctx + 10); // EXPECT: E-CTX-ACCESS
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

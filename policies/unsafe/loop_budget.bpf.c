/* Rejected: the iteration count comes from the input; the verifier's budget runs out
 * (bound loops with constants). */
#include <ncclbpf/policy.h>

SEC("tuner") int loop_budget(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 sum = 0;
	for (__u64 i = 0; i < ctx->n_bytes; i++) // EXPECT: E-BUDGET
		sum += i ^ 3;
	return sum & 0xff;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

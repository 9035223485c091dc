/* Rejected: n_nodes may be 0 (strict: a divisor must be proven non-zero). */
#include <ncclbpf/policy.h>

SEC("tuner") int div_by_input(struct ncclbpf_tuner_ctx *ctx)
{
	return ctx->n_ranks / ctx->n_nodes; // EXPECT: E-DIV-ZERO
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: an env program picks the candidate from the host name, so two hosts hand NCCL
 * different values for the same variable (issue 24: the rank rule only ran for tuner
 * hooks). Host-specific values belong in a [host ...] section of NCCLBPF_ENV_FILE. */
#include <ncclbpf/policy.h>

SEC("env") int env_host_pick(struct ncclbpf_env_ctx *ctx)
{
	ctx->value_index = ctx->host_hash & 1; // EXPECT: E-RANK-LOCAL
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

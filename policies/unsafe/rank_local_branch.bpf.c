/* Rejected: a constant is stored, but only on ranks whose buffers are registered
 * (ctx->reg_buff is per rank): the other ranks keep NCCL's protocol, and the ranks of one
 * collective disagree. Control dependence on rank-local data counts like data flow. */
#include <ncclbpf/policy.h>

SEC("tuner") int rank_local_branch(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->reg_buff)
		ctx->proto = NCCLBPF_PROTO_SIMPLE; // EXPECT: E-RANK-LOCAL
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

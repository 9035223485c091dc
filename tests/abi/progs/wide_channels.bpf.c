/* Asks for more channels than a communicator has (issue 25, scenario nchannels): 200 for
 * AllReduce (above NCCL's 64: clamped), 48 for everything else (above the mock
 * communicator's 16). NCCL clamps Ring/Tree itself, 2.31+ caps every candidate; NCCL
 * 2.29/2.30 use AllGather's value unclamped for batched broadcasts, where the plugin keeps
 * NCCL's own count. Decided on rank-invariant inputs only. */
#include <ncclbpf/policy.h>

SEC("tuner") int wide_channels(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = ctx->coll_type == NCCLBPF_COLL_ALLREDUCE ? 200 : 48;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

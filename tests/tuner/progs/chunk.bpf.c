/* tuner/chunk program (tuner ABI v6, NCCL 2.30 getChunkSize): 1 MiB chunks for Simple, and
 * an illegal 100-byte chunk for LL128 (below its 1920-byte grain: the shim must keep
 * NCCL's value, since NCCL would round it to 0 and divide by zero). */
#include <ncclbpf/policy.h>

SEC("tuner/chunk") int chunk(struct ncclbpf_chunk_ctx *ctx)
{
	if (ctx->proto == NCCLBPF_PROTO_SIMPLE)
		ctx->chunk_size = 1 << 20;
	else if (ctx->proto == NCCLBPF_PROTO_LL128)
		ctx->chunk_size = 100;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
